// The speedup view (app/views/speedup_views.h) and its place in the report: the TurboAttention Fig. 6 preset on
// the cost model alone draws the model's bars at the ratios of the model's own times and says that the
// kernels did not run and why; a Results with kernel times draws measured bars beside predicted ones; a
// variant the kernels skipped has no measured bar, and the note names the reason.
#include "app/report/html.h"
#include "app/views/axis.h"
#include "app/views/chart.h"
#include "core/config.h"
#include "core/runner.h"
#include "sim/model_backend.h"
#include "tests/catch.h"
#include "tests/support/sample_results.h"

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

// The report's section of the view `id` (from its opening tag to its end).
std::string section_of(const std::string& html, const std::string& id) {
  const size_t at = html.find(fmt::format("<section class=\"view\" id=\"{}\">", id));
  if (at == std::string::npos) return "";
  return html.substr(at, html.find("</section>", at) - at);
}

// The tooltip the SVG gives one bar: "<variant> · <stack>: <value>".
std::string bar_title(const std::string& label, const std::string& stack, double value) {
  return fmt::format("<title>{} · {}: {}</title>", report::escape_html(label), stack, tick_label(value));
}

TEST_CASE("speedup view: the Fig. 6 preset on the model alone draws the model's ratios, says the kernels did not run",
          "[views][report]") {
  Experiment e = load_experiment("configs/papers/turbo-fig6-decode.json");
  REQUIRE(e.speedup_over == "flash2 (FP16)");
  set_value(e, "problem.kv_len", 4096, "test");  // the paper's shortest context of the panel: less data to make
  Runner runner;                                 // the cost model only: no kernel backend, on any machine
  runner.add_backend(std::make_unique<sim::ModelBackend>());
  RunControl control;
  control.ground_truth = false;
  const Results r = runner.run(e, control);

  REQUIRE(r.variants.size() == 4);
  const auto base = std::find_if(r.variants.begin(), r.variants.end(), [](const VariantResult& v) { return v.label == "flash2 (FP16)"; });
  REQUIRE(base != r.variants.end());
  REQUIRE(base->model);
  const std::vector<View> all = chart_views(r);
  const View* view = find_view(all, "speedup");
  REQUIRE(view != nullptr);
  const auto* chart = std::get_if<BarChart>(&view->body);
  REQUIRE(chart != nullptr);
  CHECK(chart->grouped);
  CHECK(chart->stacks == std::vector<std::string>{"predicted (model)"});  // no measured bars without kernels
  REQUIRE(chart->bars.size() == r.variants.size());

  const std::string html = report::render_html(r);
  const std::string section = section_of(html, "speedup");
  REQUIRE_FALSE(section.empty());
  for (size_t i = 0; i < r.variants.size(); ++i) {
    const VariantResult& v = r.variants[i];
    INFO(v.label);
    REQUIRE(v.model);
    REQUIRE(v.model->time_ms > 0);
    const double expected = base->model->time_ms / v.model->time_ms;  // FP16's time over the variant's
    CHECK(chart->bars[i].label == v.label);
    REQUIRE(chart->bars[i].segments.size() == 1);
    CHECK(chart->bars[i].segments[0] == Approx(expected).epsilon(1e-12));
    CHECK(section.find(bar_title(v.label, "predicted (model)", expected)) != std::string::npos);
  }
  CHECK(chart->bars[1].label == "turbo 4-bit");
  // A 4-bit cache moves about a quarter of FP16's bytes, but at 4096 tokens each chain's loop is short and
  // bound by its instructions' latency (the model's latency term), so the bar is near 1, not near 4.
  const auto turbo4 = std::find_if(r.variants.begin(), r.variants.end(), [](const VariantResult& v) { return v.label == "turbo 4-bit"; });
  REQUIRE(turbo4 != r.variants.end());
  CHECK(turbo4->model->hbm_bytes.at("total") < base->model->hbm_bytes.at("total") / 3);
  CHECK(turbo4->model->bound == "latency");
  CHECK(section.find("measured (kernel)") == std::string::npos);
  CHECK(section.find("The kernels did not run: this build has no CUDA kernels (no CUDA compiler at configure time).") != std::string::npos);
  CHECK(section.find("the cost model's prediction alone") != std::string::npos);
}

// small_results' turbo (model 0.001 ms, kernel 0.002 ms) beside a baseline and a variant without a kernel.
Results with_baseline() {
  Results r = test::small_results();
  r.config["report"] = {{"speedup_over", "FP16"}};
  r.environment.gpu = "NVIDIA H100 80GB HBM3";
  VariantResult fp16;
  fp16.id = "flash2", fp16.label = "FP16";
  fp16.model = ModelResult{};
  fp16.model->gpu = "h100-sxm5", fp16.model->time_ms = 0.004;
  fp16.kernel = KernelResult{};
  fp16.kernel->median_ms = 0.003;
  VariantResult kivi;
  kivi.id = kivi.label = "kivi";
  kivi.model = ModelResult{};
  kivi.model->gpu = "h100-sxm5", kivi.model->time_ms = 0.005;
  r.variants.insert(r.variants.begin(), fp16);
  r.variants.push_back(kivi);
  r.environment.skipped.push_back({"kivi", "kernel", "the kivi kernel reads 2- or 4-bit caches (got bits = 8)"});
  return r;
}

TEST_CASE("speedup view: measured bars beside predicted where the kernels ran", "[views][report]") {
  const Results r = with_baseline();
  const std::vector<View> all = chart_views(r);
  const View* view = find_view(all, "speedup");
  REQUIRE(view != nullptr);
  const auto& chart = std::get<BarChart>(view->body);
  CHECK(chart.stacks == std::vector<std::string>{"predicted (model)", "measured (kernel)"});
  REQUIRE(chart.bars.size() == 3);
  // FP16: 1 and 1; turbo: 0.004 / 0.001 predicted, 0.003 / 0.002 measured; kivi: 0.004 / 0.005, no kernel.
  CHECK(chart.bars[0].segments == std::vector<double>{1.0, 1.0});
  CHECK(chart.bars[1].segments[0] == Approx(4.0));
  CHECK(chart.bars[1].segments[1] == Approx(1.5));
  CHECK(chart.bars[2].segments[0] == Approx(0.8));
  CHECK(std::isnan(chart.bars[2].segments[1]));

  const std::string section = section_of(report::render_html(r), "speedup");
  REQUIRE_FALSE(section.empty());
  CHECK(section.find(bar_title("turbo", "predicted (model)", 4.0)) != std::string::npos);
  CHECK(section.find(bar_title("turbo", "measured (kernel)", 1.5)) != std::string::npos);
  CHECK(section.find(bar_title("FP16", "measured (kernel)", 1.0)) != std::string::npos);
  CHECK(section.find(bar_title("kivi", "predicted (model)", 0.8)) != std::string::npos);
  CHECK(section.find("<title>kivi · measured (kernel)") == std::string::npos);  // no bar for a missing time
  CHECK(section.find("did not run") == std::string::npos);
  CHECK(section.find("No measured (kernel) bar for kivi: the kivi kernel reads 2- or 4-bit caches (got bits = 8).") !=
        std::string::npos);
  CHECK(section.find("on the NVIDIA H100 80GB HBM3") != std::string::npos);  // where the measurement comes from
  CHECK(section.find("for the h100-sxm5") != std::string::npos);             // and what the model predicts for
}

TEST_CASE("speedup view: absent without a baseline in the config or among the variants", "[views]") {
  Results r = with_baseline();
  r.config.erase("report");
  CHECK(find_view(chart_views(r), "speedup") == nullptr);
  r.config["report"] = {{"speedup_over", "FP8"}};  // a results file whose variants lack it
  CHECK(find_view(chart_views(r), "speedup") == nullptr);
  r = with_baseline();
  for (auto& v : r.variants) v.model.reset(), v.kernel.reset();  // no times at all: no ratio to draw
  CHECK(find_view(chart_views(r), "speedup") == nullptr);
}

TEST_CASE("speedup view: no measured bars when the baseline's kernel did not run, and the note says why", "[views]") {
  Results r = with_baseline();
  r.variants[0].kernel.reset();
  r.environment.skipped.push_back({"flash2", "kernel", "no flash2 kernel for head_dim 96"});
  const std::vector<View> all = chart_views(r);
  const View* view = find_view(all, "speedup");
  REQUIRE(view != nullptr);
  CHECK(std::get<BarChart>(view->body).stacks == std::vector<std::string>{"predicted (model)"});
  CHECK(view->note.find("No measured (kernel) bars: FP16 has no time (no flash2 kernel for head_dim 96).") !=
        std::string::npos);
}

}  // namespace
}  // namespace attnlab::views
