// The model-breakdown view (app/views/breakdown_views.h): per variant the cost model's time per unit, its
// total and the kernel's measured time; its note names the binding unit and, where latency slows issue, the
// warps per scheduler behind it. From the model run on the Fig. 6 prefill preset (any machine), and from the
// H100's saved Fig. 6 decode results (tests/data/h100-fig6-decode: kernel and model), as a laptop opens them.
#include "app/report/html.h"
#include "app/report/results_file.h"
#include "app/report/svg.h"
#include "app/views/chart.h"
#include "core/config.h"
#include "core/runner.h"
#include "sim/model_backend.h"
#include "tests/catch.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <regex>
#include <tuple>

namespace attnlab::views {
namespace ATTNLAB_FILE_LOCAL {

const View* find_view(const std::vector<View>& all, const std::string& id) {
  const auto it = std::find_if(all.begin(), all.end(), [&](const View& v) { return v.id == id; });
  return it == all.end() ? nullptr : &*it;
}

size_t stack_of(const BarChart& c, const std::string& name) {
  const auto it = std::find(c.stacks.begin(), c.stacks.end(), name);
  REQUIRE(it != c.stacks.end());
  return size_t(it - c.stacks.begin());
}

// The preset's model alone (any machine), with one value set to keep its data small.
Results model_run(const char* config, const char* path, int64_t value) {
  Experiment e = load_experiment(config);
  set_value(e, path, value, "test");
  Runner runner;
  runner.add_backend(std::make_unique<sim::ModelBackend>());
  RunControl control;
  control.ground_truth = false;
  return runner.run(e, control);
}

TEST_CASE("model breakdown: each unit's time, the total and the bound, from the model's own numbers", "[views][report]") {
  const Results r = model_run("configs/papers/turbo-fig6-prefill.json", "problem.len", 1024);
  const std::vector<View> all = chart_views(r);
  const View* view = find_view(all, "model_breakdown");
  REQUIRE(view != nullptr);
  const auto& c = std::get<BarChart>(view->body);
  CHECK(c.grouped);
  CHECK(std::find(c.stacks.begin(), c.stacks.end(), "measured (kernel)") == c.stacks.end());  // no kernels here
  REQUIRE(c.bars.size() == r.variants.size());
  const size_t total = stack_of(c, "model total");
  for (size_t i = 0; i < r.variants.size(); ++i) {
    const VariantResult& v = r.variants[i];
    INFO(v.label << " bound by " << v.model->bound);
    CHECK(c.bars[i].label == v.label);
    CHECK(c.bars[i].segments[total] == v.model->time_ms);
    // Every unit bar is the model's recorded time for that unit; the binding one is the longest of them (the
    // total adds the overlapped rest and the fixed costs, so it is at least as long).
    double longest = 0;
    std::string longest_unit;
    for (size_t k = 0; k < c.stacks.size(); ++k) {
      if (k == total) continue;
      const double x = c.bars[i].segments[k];
      const auto& units = v.model->details["unit_ms"];
      if (units.contains(c.stacks[k])) CHECK(x == units[c.stacks[k]].get<double>());
      else CHECK(std::isnan(x));
      if (std::isfinite(x) && x > longest) longest = x, longest_unit = c.stacks[k];
    }
    CHECK(longest <= v.model->time_ms);
    // The bound's unit: "memory" is HBM's, "latency" the issue unit's (issue slowed by the latency term).
    const std::string bound = v.model->bound == "memory" ? "hbm" : v.model->bound == "latency" ? "issue" : v.model->bound;
    CHECK(longest_unit == bound);
  }
  // The INT8 variants are bound by issue, each at the rate Nsight Compute measured for its producer kernel at two
  // warps per scheduler (core/kernel_traits.h kPrefillIssue): int_flash 0.60, turbo SAS FP32 0.63; the note says so,
  // variant by variant.
  CHECK(view->note.find("flash2 (FP16): ") != std::string::npos);
  CHECK(view->note.find("int_flash (INT8): ") != std::string::npos);
  CHECK(view->note.find("bound by instruction issue, slowed by latency (2 warps per scheduler issue 60% of the peak rate)") !=
        std::string::npos);
  CHECK(view->note.find("turbo SAS FP32: ") != std::string::npos);
  CHECK(view->note.find("bound by instruction issue, slowed by latency (2 warps per scheduler issue 63% of the peak rate)") !=
        std::string::npos);
  CHECK(report::render_html(r).find("<section class=\"view\" id=\"model_breakdown\">") != std::string::npos);
}

TEST_CASE("model breakdown: the H100's saved results show the measurement beside the model",
          "[views][report][results]") {
  const Results r = report::read_results(std::filesystem::path(ATTNLAB_SOURCE_DIR) / "tests/data/h100-fig6-decode", "test");
  const std::vector<View> all = chart_views(r);
  const View* view = find_view(all, "model_breakdown");
  REQUIRE(view != nullptr);
  const auto& c = std::get<BarChart>(view->body);
  const size_t measured = stack_of(c, "measured (kernel)");
  for (size_t i = 0; i < r.variants.size(); ++i) {
    INFO(r.variants[i].label);
    REQUIRE(r.variants[i].kernel);
    CHECK(c.bars[i].segments[measured] == r.variants[i].kernel->median_ms);
    CHECK(view->note.find(r.variants[i].label + ": ") != std::string::npos);
  }
  CHECK(view->note.find("measured ") != std::string::npos);
  CHECK(view->note.find("NVIDIA") == std::string::npos);  // the note names the model's GPU by its spec id
  CHECK(view->note.find("h100-sxm5") != std::string::npos);
}

TEST_CASE("model breakdown: a latency-bound kernel's note gives its warps per scheduler and issue rate", "[views]") {
  // The Fig. 6 decode preset at 4096 tokens: turbo's chains are short, 2 warps per scheduler against the H100's
  // 5.47 cycles (tests/app/test_speedup_views.cpp asserts the bound).
  const Results r = model_run("configs/papers/turbo-fig6-decode.json", "problem.kv_len", 4096);
  const std::vector<View> all = chart_views(r);
  const View* view = find_view(all, "model_breakdown");
  REQUIRE(view != nullptr);
  const auto turbo = std::find_if(r.variants.begin(), r.variants.end(), [](const VariantResult& v) { return v.label == "turbo 4-bit"; });
  REQUIRE(turbo != r.variants.end());
  REQUIRE(turbo->model->bound == "latency");
  const double rate = turbo->model->details["issue_rate"].get<double>();
  const double warps = turbo->model->details["warps_per_scheduler"].get<double>();
  INFO(view->note);
  CHECK(view->note.find(fmt::format("turbo 4-bit: {:.3g} ms predicted, bound by instruction issue, slowed by latency ({:.2g} "
                                    "warps per scheduler issue {:.0f}% of the peak rate)",
                                    turbo->model->time_ms, warps, 100 * rate)) != std::string::npos);
}

// "Where the model's time goes" draws every term of the total: the stacked segments of each variant's model bar
// add up to its predicted time (to rounding), whatever binds — issue slowed by latency (turbo's decode chains),
// HBM (flash2's decode), the SFU (flash2's prefill) — and the split-KV decode's merge launch and the fixed costs
// per wave and per launch are among them. The measured time stands beside as its own bar.
TEST_CASE("model total: the terms of the model's time add up to it, latency and fixed costs drawn", "[views][report]") {
  for (const auto& [config, path, value] : {std::tuple{"configs/papers/turbo-fig6-decode.json", "problem.kv_len", 4096},
                                            std::tuple{"configs/papers/turbo-fig6-prefill.json", "problem.len", 1024}}) {
    INFO(config);
    const Results r = model_run(config, path, value);
    const std::vector<View> all = chart_views(r);
    const View* view = find_view(all, "model_total");
    REQUIRE(view != nullptr);
    CHECK(view->title.rfind("Where the model's time goes", 0) == 0);
    const auto& c = std::get<BarChart>(view->body);
    CHECK_FALSE(c.grouped);
    REQUIRE(c.bars.size() == r.variants.size());  // no kernel ran: no measured bars
    for (size_t i = 0; i < r.variants.size(); ++i) {
      const VariantResult& v = r.variants[i];
      INFO(v.label << " bound by " << v.model->bound);
      double sum = 0;
      for (double x : c.bars[i].segments)
        if (std::isfinite(x)) sum += x;
      CHECK(sum == Approx(v.model->time_ms).epsilon(1e-12));
      const auto has = [&](const std::string& stack) {
        const auto it = std::find(c.stacks.begin(), c.stacks.end(), stack);
        return it != c.stacks.end() && std::isfinite(c.bars[i].segments[size_t(it - c.stacks.begin())]);
      };
      CHECK(has("fixed cost per wave"));
      CHECK(has("launches"));
      if (v.model->bound == "latency") {
        CHECK(has("latency (too few warps)"));
        CHECK(has("instruction issue at peak rate"));
      }
      if (v.model->bound == "memory") CHECK(has("K/V traffic (HBM)"));
    }
  }
  // Saved measurements beside the model: each variant's measured time is a bar of its own after its model bar.
  Results measured = model_run("configs/papers/turbo-fig6-decode.json", "problem.kv_len", 4096);
  measured.variants[0].kernel = KernelResult{};
  measured.variants[0].kernel->median_ms = 0.5;
  const std::vector<View> all = chart_views(measured);
  const auto& c = std::get<BarChart>(find_view(all, "model_total")->body);
  REQUIRE(c.bars.size() == measured.variants.size() + 1);
  CHECK(c.bars[1].label == measured.variants[0].label + " (measured)");
  CHECK(c.bars[1].segments.back() == 0.5);
  CHECK(c.stacks.back() == "measured (kernel)");
}

// The units-alone chart as the report draws it: many narrow bars side by side, each with its value written over it
// (views::place_bar_values). Read back from the SVG, no two value labels overlap (each one's box: 6.4 px a character,
// as svg.cpp measures, 13 px high, centred on its x, its baseline 4 px below the centre the layout chose) — on the
// Fig. 6 prefill preset's four variants × nine units.
TEST_CASE("model breakdown in the report: no two values over the bars overlap", "[views][report]") {
  const Results r = model_run("configs/papers/turbo-fig6-prefill.json", "problem.len", 1024);
  const std::vector<View> all = chart_views(r);
  const View* view = find_view(all, "model_breakdown");
  REQUIRE(view != nullptr);
  const std::string svg = report::render_svg(*view);
  struct Box {
    double x0, y0, x1, y1;
  };
  std::vector<Box> boxes;
  const std::regex value(R"re(<text x="([0-9.]+)" y="([0-9.]+)" text-anchor="middle">([^<]+)</text>)re");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), value); it != std::sregex_iterator(); ++it) {
    const double x = std::stod((*it)[1]), y = std::stod((*it)[2]), w = 6.4 * double((*it)[3].length());
    boxes.push_back({x - w / 2, y - 4 - 6.5, x + w / 2, y - 4 + 6.5});
  }
  REQUIRE(boxes.size() >= 8);  // most bars keep their value
  for (size_t i = 0; i < boxes.size(); ++i)
    for (size_t j = 0; j < i; ++j) {
      const Box &a = boxes[i], &b = boxes[j];
      INFO("labels " << i << " and " << j << ": " << a.x0 << "–" << a.x1 << " × " << a.y0 << "–" << a.y1 << " and " << b.x0 << "–" << b.x1 << " × " << b.y0 << "–" << b.y1);
      // The SVG prints positions to 0.1 px: boxes that touch in the layout may cross by that much once read back.
      constexpr double kPrinted = 0.2;
      CHECK_FALSE((a.x0 < b.x1 - kPrinted && b.x0 < a.x1 - kPrinted && a.y0 < b.y1 - kPrinted && b.y0 < a.y1 - kPrinted));
    }
}

}  // namespace
}  // namespace attnlab::views
