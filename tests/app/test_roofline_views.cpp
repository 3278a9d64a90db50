// The cost model against the kernels, readable: the roofline labels each point with its variant, joins
// each predicted point to its measured one, draws coinciding roofs once naming them all and fits its axes
// to the points; the model-vs-measured chart lists every (variant, shape) with both times and the error,
// the largest error first. Built from a hand-made kernel + model run (tests/support/kernel_results.h).
#include "app/report/svg.h"
#include "app/views/chart.h"
#include "app/views/measured_views.h"
#include "app/views/roofline_views.h"
#include "sim/gpu_spec.h"
#include "tests/catch.h"
#include "tests/support/kernel_results.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <regex>

namespace attnlab::views {
namespace ATTNLAB_FILE_LOCAL {

const Series& series(const LineChart& c, const std::string& name) {
  const auto it = std::find_if(c.series.begin(), c.series.end(), [&](const Series& s) { return s.name == name; });
  REQUIRE(it != c.series.end());
  return *it;
}

LineChart roofline(const Results& r) {
  const std::vector<View> v = roofline_views(r);
  REQUIRE(v.size() == 1);
  return std::get<LineChart>(v[0].body);
}

TEST_CASE("roofline: every point labelled with its variant, each predicted point joined to its measured one",
          "[views][roofline]") {
  const Results r = test::kernel_results();
  const LineChart c = roofline(r);
  const Series &model = series(c, "predicted (model)"), &kernel = series(c, "measured (kernel)");
  for (const Series* s : {&model, &kernel}) {
    REQUIRE(s->labels.size() == r.variants.size());  // one label per point
    for (size_t i = 0; i < r.variants.size(); ++i) CHECK(s->labels[i] == r.variants[i].label);
  }
  // One link per (predicted, measured) pair, from the one to the other.
  REQUIRE(c.links.size() == r.variants.size());
  for (size_t i = 0; i < c.links.size(); ++i) {
    CHECK(c.links[i].x0 == model.x[i]);
    CHECK(c.links[i].y0 == model.y[i]);
    CHECK(c.links[i].x1 == kernel.x[i]);
    CHECK(c.links[i].y1 == kernel.y[i]);
  }
  CHECK_FALSE(c.link_meaning.empty());
  // A variant with no kernel: its predicted point, and no link.
  Results partial = r;
  partial.variants[1].kernel.reset();
  const LineChart p = roofline(partial);
  CHECK(series(p, "predicted (model)").labels.size() == r.variants.size());
  CHECK(series(p, "measured (kernel)").labels.size() == r.variants.size() - 1);
  CHECK(p.links.size() == r.variants.size() - 1);
}

TEST_CASE("roofline: roofs that coincide are one line naming them all", "[views][roofline]") {
  // On the H100 FP8 and INT8 have the same peak; FP16 has half of it. The points lie past both knees.
  const sim::GpuSpec gpu = sim::load_gpu_spec("h100-sxm5");
  REQUIRE(gpu.peak(sim::Unit::tensor_fp8) == gpu.peak(sim::Unit::tensor_int8));
  const LineChart c = roofline(test::kernel_results());
  std::vector<std::string> roofs;
  for (const Series& s : c.series)
    if (!s.points) roofs.push_back(s.name);
  CHECK(roofs == std::vector<std::string>{"FP16 roof", "FP8 and INT8 roof"});
  CHECK(series(c, "FP8 and INT8 roof").y.back() == Approx(gpu.peak(sim::Unit::tensor_int8) / 1e12));
  CHECK(series(c, "FP16 roof").y.back() == Approx(gpu.peak(sim::Unit::tensor_fp16) / 1e12));
}

TEST_CASE("roofline: the axes span the points by the stated margin, and hold every roof drawn", "[views][roofline]") {
  const LineChart c = roofline(test::kernel_results());
  double x_lo = INFINITY, x_hi = 0, y_lo = INFINITY, y_hi = 0;
  for (const Series& s : c.series)
    if (s.points)
      for (size_t i = 0; i < s.x.size(); ++i)
        x_lo = std::min(x_lo, s.x[i]), x_hi = std::max(x_hi, s.x[i]), y_lo = std::min(y_lo, s.y[i]),
        y_hi = std::max(y_hi, s.y[i]);
  REQUIRE(c.x.fixed());
  REQUIRE(c.y.fixed());
  CHECK(c.x.lo == Approx(x_lo / kRooflineMargin));
  CHECK(c.x.hi == Approx(x_hi * kRooflineMargin));
  CHECK(c.y.lo <= y_lo / kRooflineMargin * (1 + 1e-12));
  CHECK(c.y.hi >= y_hi * kRooflineMargin * (1 - 1e-12));
  // Not the old fixed 1–2000 FLOP/byte: the points (505 to 1010 FLOP/byte) fill the x axis.
  CHECK(c.x.lo > 300);
  CHECK(c.x.hi < 1600);
  for (const Series& s : c.series)
    for (size_t i = 0; i < s.x.size(); ++i) {
      CHECK(s.x[i] >= c.x.lo * (1 - 1e-12));
      CHECK(s.x[i] <= c.x.hi * (1 + 1e-12));
      CHECK(s.y[i] >= c.y.lo);
      CHECK(s.y[i] <= c.y.hi);
    }
}

TEST_CASE("roofline SVG: one text label per point, one dashed line per link", "[views][roofline][report]") {
  const Results r = test::kernel_results();
  const std::vector<View> v = roofline_views(r);
  REQUIRE(v.size() == 1);
  const std::string svg = report::render_svg(v[0]);
  const std::regex label(R"re(<text class="point-label"[^>]*>([^<]*)</text>)re");
  std::vector<std::string> labels;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), label); it != std::sregex_iterator(); ++it)
    labels.push_back((*it)[1]);
  const size_t points = 2 * r.variants.size();  // predicted and measured
  CHECK(labels.size() == points);
  for (const auto& variant : r.variants)
    CHECK(std::count(labels.begin(), labels.end(), variant.label) == 2);
  size_t circles = 0, links = 0;
  for (size_t at = 0; (at = svg.find("<circle", at)) != std::string::npos; ++at) ++circles;
  for (size_t at = 0; (at = svg.find("<line class=\"link\"", at)) != std::string::npos; ++at) ++links;
  CHECK(circles == points);
  CHECK(links == r.variants.size());
}

TEST_CASE("model vs measured: every (variant, shape) with both times and the error, largest error first",
          "[views][roofline]") {
  Results a = test::kernel_results(), b = a;
  b.problem["q_len"] = b.problem["kv_len"] = 8192;
  for (auto& v : b.variants) v.kernel->median_ms *= 4, v.model->time_ms *= 3;
  a.variants[0].kernel.reset();  // flash2 at the first shape: nothing measured, no bar
  const std::vector<View> views = model_vs_measured_views({a, b});
  REQUIRE(views.size() == 1);
  const auto& c = std::get<BarChart>(views[0].body);
  CHECK(c.grouped);
  CHECK(c.stacks == std::vector<std::string>{"predicted (model)", "measured (kernel)"});
  REQUIRE(c.bars.size() == a.variants.size() - 1 + b.variants.size());
  std::vector<std::string> expected;
  for (const Results* r : {&a, &b})
    for (const auto& v : r->variants)
      if (v.kernel) {
        const double error = model_error_percent(v.model->time_ms, v.kernel->median_ms);
        expected.push_back(fmt::format("{} · {}: {:+.1f}%", v.label, shape_label(r->problem), error));
        const auto bar = std::find_if(c.bars.begin(), c.bars.end(), [&](const Bar& x) { return x.label == expected.back(); });
        REQUIRE(bar != c.bars.end());
        CHECK(bar->segments == std::vector<double>{v.model->time_ms, v.kernel->median_ms});
      }
  for (size_t i = 1; i < c.bars.size(); ++i) {
    const auto error = [](const Bar& x) { return std::abs(x.segments[0] / x.segments[1] - 1); };
    CHECK(error(c.bars[i - 1]) >= error(c.bars[i]));
  }
  CHECK(model_error_percent(1.2, 1.0) == Approx(20.0));  // + : the model predicts slower
  // One shape: the title names it and the bars only their variant.
  const auto one = std::get<BarChart>(model_vs_measured_views({b})[0].body);
  CHECK(one.bars[0].label.find(" · ") == std::string::npos);
  CHECK(model_vs_measured_views({b})[0].title.find(shape_label(b.problem)) != std::string::npos);
  // chart_views has it for a run with both backends, and nothing without a kernel.
  const std::vector<View> all = chart_views(b);
  CHECK(std::count_if(all.begin(), all.end(), [](const View& v) { return v.id == "model_vs_measured"; }) == 1);
  // Predictions for another GPU than the one measured: no model error is drawn (core/gpu_names.h).
  Results elsewhere = a;
  elsewhere.environment.gpu = "NVIDIA H200";
  CHECK(model_vs_measured_views({elsewhere}).empty());
  CHECK(model_vs_measured_views({elsewhere, b}).size() == 1);  // b's own pairs still drawn
  for (auto& v : b.variants) v.kernel.reset();
  CHECK(model_vs_measured_views({b}).empty());
}

}  // namespace
}  // namespace attnlab::views
