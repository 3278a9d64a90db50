// The views of a problem across GPUs (app/views/context_parallel_views.h): the ring's timeline per GPU and step,
// and the link bytes beside the HBM bytes, drawn from the model's details (the preset configs/context-parallel.json,
// model only: any machine), and in the report's HTML.
#include "app/report/html.h"
#include "app/views/chart.h"
#include "core/config.h"
#include "core/runner.h"
#include "sim/model_backend.h"
#include "tests/catch.h"

#include <algorithm>
#include <cmath>
#include <memory>

namespace attnlab::views {
namespace ATTNLAB_FILE_LOCAL {

const View* find_view(const std::vector<View>& all, const std::string& id) {
  const auto it = std::find_if(all.begin(), all.end(), [&](const View& v) { return v.id == id; });
  return it == all.end() ? nullptr : &*it;
}

Results preset_at(int64_t gpus) {
  Experiment e = load_experiment(std::string(ATTNLAB_SOURCE_DIR) + "/configs/context-parallel.json");
  set_value(e, "problem.gpus", gpus, "test");
  Runner runner;
  runner.add_backend(std::make_unique<sim::ModelBackend>());
  return runner.run(e);
}

TEST_CASE("across GPUs: every GPU's ring steps, each step as tall as its slowest GPU or its transfer",
          "[views][context_parallel]") {
  const Results r = preset_at(4);
  const std::vector<View> all = chart_views(r, 64, 0);
  const View* timeline = find_view(all, "cp_timeline");
  REQUIRE(timeline);
  const auto& c = std::get<BarChart>(timeline->body);
  REQUIRE(c.stacks.size() == 3);
  CHECK(c.bars.size() == r.variants.size() * 16);  // 4 steps × 4 GPUs per variant
  for (size_t v = 0; v < r.variants.size(); ++v) {
    double total = 0;
    for (int step = 0; step < 4; ++step) {
      const double tall = c.bars[v * 16 + size_t(step) * 4].segments[0] + c.bars[v * 16 + size_t(step) * 4].segments[1];
      for (int gpu = 0; gpu < 4; ++gpu) {
        const Bar& b = c.bars[v * 16 + size_t(step * 4 + gpu)];
        INFO(b.label);
        CHECK(b.label.find(r.variants[v].label) == 0);
        CHECK(b.segments[0] + b.segments[1] == Approx(tall).epsilon(1e-12));
        CHECK(std::isnan(b.segments[2]) == (step == 3));  // the last step sends nothing
      }
      total += tall;
    }
    CHECK(total == Approx(r.variants[v].model->time_ms).epsilon(1e-12));  // the steps add up to the model's time
  }
  CHECK(timeline->note.find("4 GPUs over NVLink") != std::string::npos);
}

TEST_CASE("across GPUs: link bytes beside HBM bytes, the compressed formats fewer on both", "[views][context_parallel]") {
  const Results r = preset_at(2);
  const std::vector<View> all = chart_views(r, 64, 0);
  const View* bytes = find_view(all, "cp_bytes");
  REQUIRE(bytes);
  const auto& c = std::get<BarChart>(bytes->body);
  REQUIRE(c.bars.size() == r.variants.size());
  auto link_of = [&](const std::string& label) {
    const auto it = std::find_if(c.bars.begin(), c.bars.end(), [&](const Bar& b) { return b.label == label; });
    REQUIRE(it != c.bars.end());
    return it->segments[0];
  };
  for (size_t v = 0; v < r.variants.size(); ++v)
    CHECK(c.bars[v].segments[0] == r.variants[v].model->details["context_parallel"]["link_bytes"].get<double>());
  // FP16 K/V: 4 bytes a channel and token; the INT8 tiles (int_flash's, turbo's Alg. 1) about half, FP8 half, FireQ's
  // 4-bit cache about a quarter.
  CHECK(link_of("INT8 tiles") < 0.52 * link_of("FP16"));
  CHECK(link_of("turbo INT8 tiles") < 0.52 * link_of("FP16"));
  CHECK(link_of("FP8") < 0.52 * link_of("FP16"));
  CHECK(link_of("FireQ INT4 cache") < 0.3 * link_of("FP16"));
  // The report draws both.
  const std::string html = report::render_html(r);
  CHECK(html.find("Across GPUs: each GPU") != std::string::npos);
  CHECK(html.find("bytes on the links beside HBM bytes") != std::string::npos);
}

TEST_CASE("on one GPU there are no across-GPU views", "[views][context_parallel]") {
  const std::vector<View> all = chart_views(preset_at(1), 64, 0);
  CHECK(!find_view(all, "cp_timeline"));
  CHECK(!find_view(all, "cp_bytes"));
}

}  // namespace ATTNLAB_FILE_LOCAL
}  // namespace attnlab::views
