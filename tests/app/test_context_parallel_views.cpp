// The views of a problem across GPUs (app/views/context_parallel_views.h): the ring's timeline per GPU and step,
// and the link bytes beside the HBM bytes, drawn from the model's details (the preset configs/context-parallel.json,
// model only: any machine), and in the report's HTML; the kernels' traced ring (its probe, written here as the
// kernel backend writes it) beside the model's slot by slot, or alone.
#include "app/report/html.h"
#include "app/views/chart.h"
#include "core/config.h"
#include "core/runner.h"
#include "sim/model_backend.h"
#include "tests/catch.h"

#include <fmt/format.h>

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

// A traced ring as the kernel backend records it (kernels/context_parallel/ring_backend.cpp): [step, GPU, (compute,
// idle, exchange)] ms, the values distinct so a bar can be traced to its cell.
ProbeArray traced(int64_t gpus) {
  ProbeArray a;
  a.shape = {gpus, gpus, 3};
  std::vector<double> values;
  for (int64_t i = 0; i < gpus * gpus; ++i) {
    const bool last_step = i / gpus == gpus - 1;
    values.insert(values.end(), {1.0 + double(i), 0.25 * double(i), last_step ? 0.0 : 0.5 + double(i)});
  }
  a.values = std::move(values);
  a.unit = "ms";
  return a;
}

TEST_CASE("across GPUs: the kernels' traced ring stands beside the model's, slot by slot", "[views][context_parallel]") {
  Results r = preset_at(2);
  REQUIRE(r.variants.size() >= 2);
  KernelResult k;
  k.probes["kernel.context_parallel.timeline"] = traced(2);
  r.variants[0].kernel = k;
  const View* timeline = nullptr;
  const std::vector<View> all = chart_views(r, 64, 0);
  timeline = find_view(all, "cp_timeline");
  REQUIRE(timeline);
  CHECK(timeline->title.find("the cost model beside the measurement") != std::string::npos);
  CHECK(timeline->note.find("one traced run") != std::string::npos);
  const auto& c = std::get<BarChart>(timeline->body);
  // The first variant: 2 steps × 2 GPUs, a model bar then a measured one each; the others their 4 model bars.
  REQUIRE(c.bars.size() == 8 + (r.variants.size() - 1) * 4);
  const auto& model = r.variants[0].model->details["context_parallel"]["timeline"];
  for (int slot = 0; slot < 4; ++slot) {
    const Bar& predicted = c.bars[size_t(2 * slot)];
    const Bar& measured = c.bars[size_t(2 * slot + 1)];
    const int step = model[size_t(slot)]["step"], gpu = model[size_t(slot)]["gpu"];
    INFO(predicted.label << " | " << measured.label);
    CHECK(predicted.label == fmt::format("{} · step {} · GPU {} · model", r.variants[0].label, step, gpu));
    CHECK(measured.label == fmt::format("{} · step {} · GPU {} · measured", r.variants[0].label, step, gpu));
    CHECK(predicted.segments[0] == model[size_t(slot)]["compute_ms"].get<double>());
    const int cell = step * 2 + gpu;
    CHECK(measured.segments[0] == 1.0 + cell);
    CHECK(measured.segments[1] == 0.25 * cell);
    CHECK(std::isnan(measured.segments[2]) == (step == 1));  // nothing exchanged at the last step: no bar
    if (step == 0) CHECK(measured.segments[2] == 0.5 + cell);
  }
  CHECK(c.bars[8].label.find(" · model") == std::string::npos);  // a variant measured by no ring: as before
}

TEST_CASE("across GPUs: a ring measured without the model draws its own timeline", "[views][context_parallel]") {
  Results r = preset_at(2);
  for (VariantResult& v : r.variants) v.model.reset();
  KernelResult k;
  k.probes["kernel.context_parallel.timeline"] = traced(2);
  r.variants[0].kernel = k;
  const std::vector<View> all = chart_views(r, 64, 0);
  const View* timeline = find_view(all, "cp_timeline");
  REQUIRE(timeline);
  CHECK(!find_view(all, "cp_bytes"));  // the link bytes are the model's
  CHECK(timeline->title == "Across GPUs: each GPU's ring steps (measured)");
  CHECK(timeline->note.find("Context parallelism on 2 GPUs: ") == 0);
  const auto& c = std::get<BarChart>(timeline->body);
  REQUIRE(c.bars.size() == 4);
  CHECK(c.bars[3].label == fmt::format("{} · step 1 · GPU 1", r.variants[0].label));
  CHECK(c.bars[3].segments[0] == 4.0);
}

TEST_CASE("across GPUs: where the links bind, per variant, beside FP16's bytes", "[views][context_parallel]") {
  const Results r = preset_at(4);
  const std::vector<View> all = chart_views(r, 64, 0);
  const View* links = find_view(all, "cp_links");
  REQUIRE(links);
  const auto& t = std::get<Table>(links->body);
  REQUIRE(t.rows.size() == r.variants.size());
  auto column = [&](const std::string& key) {
    const auto it = std::find_if(t.columns.begin(), t.columns.end(), [&](const Column& c) { return c.key == key; });
    REQUIRE(it != t.columns.end());
    return size_t(it - t.columns.begin());
  };
  for (size_t v = 0; v < r.variants.size(); ++v) {
    const auto& cp = r.variants[v].model->details["context_parallel"];
    INFO(r.variants[v].label);
    CHECK(t.rows[v][column("variant")].text == r.variants[v].label);
    CHECK(t.rows[v][column("link")].text == "NVLink");
    CHECK(t.rows[v][column("link_bytes")].value == cp["link_bytes"].get<double>());
    // The preset's H100s over NVLink: no length the model scans waits on the link.
    CHECK(t.rows[v][column("link_bound_up_to_tokens")].text == "never");
    CHECK(t.rows[v][column("scaling_efficiency")].value == cp["scaling_efficiency"].get<double>());
  }
  CHECK(t.rows[0][column("link_bytes_over_fp16")].value == 1.0);  // the preset's first variant is FP16 (flash2)
  CHECK(t.rows[3][column("link_bytes_over_fp16")].value < 0.3);    // FireQ's INT4 cache
  // On PCIe (an L40S) FP16's transfers bind at short sequences: the crossover is a number of tokens.
  Experiment e = load_experiment(std::string(ATTNLAB_SOURCE_DIR) + "/configs/context-parallel.json");
  e.gpu_model = "l40s";
  Runner runner;
  runner.add_backend(std::make_unique<sim::ModelBackend>());
  const std::vector<View> pcie = chart_views(runner.run(e), 64, 0);
  const auto& tp = std::get<Table>(find_view(pcie, "cp_links")->body);
  CHECK(tp.rows[0][column("link")].text == "PCIe");
  CHECK(tp.rows[0][column("link_bound_up_to_tokens")].value > 0);
  CHECK(tp.rows[0][column("link_bound_up_to_tokens")].value ==
        double(runner.run(e).variants[0].model->details["context_parallel"]["link_bound_up_to_tokens"].get<int64_t>()));
}

TEST_CASE("on one GPU there are no across-GPU views", "[views][context_parallel]") {
  const std::vector<View> all = chart_views(preset_at(1), 64, 0);
  CHECK(!find_view(all, "cp_timeline"));
  CHECK(!find_view(all, "cp_bytes"));
  CHECK(!find_view(all, "cp_links"));
}

}  // namespace ATTNLAB_FILE_LOCAL
}  // namespace attnlab::views
