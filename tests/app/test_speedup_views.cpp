// The speedup view (app/views/speedup_views.h): TurboAttention Fig. 6's bars — the FP16 baseline's time over
// each variant's, per backend — with the ratios recomputed here from the times the Results hold.
#include "app/views/chart.h"
#include "app/views/speedup_views.h"
#include "core/config.h"
#include "sim/model_backend.h"
#include "tests/catch.h"

#include <nlohmann/json.hpp>

#include <string>

namespace attnlab::views {
namespace {

// A decode run of the fig. 6 variants with the cost model's times and no kernel (as on a machine without a
// GPU: the runner records why).
Results model_only(bool with_baseline = true) {
  nlohmann::json variants = {{{"id", "turbo"}, {"label", "turbo_4bit"}, {"params", {{"two_bit_heads", 0}}}},
                             {{"id", "kivi"}, {"label", "kivi_2bit"}, {"params", {{"bits", 2}}}}};
  if (with_baseline) variants.insert(variants.begin(), nlohmann::json::object({{"id", "flash2"}}));
  const Experiment e = parse_experiment({{"problem", {{"batch", 4}, {"q_heads", 40}, {"kv_heads", 10}, {"q_len", 1},
                                                      {"kv_len", 32768}, {"head_dim", 128}, {"phase", "decode"}}},
                                         {"variants", variants},
                                         {"backends", {"kernel", "model"}},
                                         {"gpu_model", "h100-sxm5"}});
  Results r;
  r.config = to_json(e);
  r.problem = r.config["problem"];
  r.environment.skipped.push_back({"", "kernel", "no GPU: no CUDA device"});
  for (const VariantRequest& v : e.variants) {
    r.variants.push_back(VariantResult{v.id, v.label.empty() ? v.id : v.label, v.params.to_json(), std::nullopt,
                                       std::nullopt, sim::model_result(e, v)});
  }
  return r;
}

const BarChart& bars_of(const std::vector<View>& views) {
  REQUIRE(views.size() == 1);
  REQUIRE(views[0].id == "speedup");
  return std::get<BarChart>(views[0].body);
}

TEST_CASE("speedup view: the model's bars over the FP16 baseline, and why the kernels are missing", "[views]") {
  const Results r = model_only();
  const std::vector<View> views = speedup_views(r);
  const BarChart& c = bars_of(views);
  REQUIRE(c.bars.size() == 2);  // turbo and kivi, model only
  const double base = r.variants[0].model->time_ms;
  CHECK(c.bars[0].label == "turbo_4bit · model");
  CHECK(c.bars[0].segments.at(0) == Approx(base / r.variants[1].model->time_ms).epsilon(1e-12));
  CHECK(c.bars[1].label == "kivi_2bit · model");
  CHECK(c.bars[1].segments.at(0) == Approx(base / r.variants[2].model->time_ms).epsilon(1e-12));
  CHECK_FALSE(c.bars[0].marked);
  CHECK(c.bars[0].segments[0] > 1.0);  // a 4-bit cache moves a quarter of FP16's bytes
  CHECK(views[0].note.find("The kernels did not run (no GPU: no CUDA device)") != std::string::npos);
  CHECK(c.y.label == "speedup over flash2");
  // It is among the report's chart views.
  bool listed = false;
  for (const View& v : chart_views(r)) listed = listed || v.id == "speedup";
  CHECK(listed);
}

TEST_CASE("speedup view: measured bars beside predicted ones where the kernels ran", "[views]") {
  Results r = model_only();
  r.environment.skipped.clear();
  const double times[] = {3.4, 1.05, 1.4};  // flash2, turbo, kivi (ms)
  for (size_t i = 0; i < 3; ++i) {
    r.variants[i].kernel = KernelResult{};
    r.variants[i].kernel->median_ms = times[i];
  }
  const std::vector<View> views = speedup_views(r);
  const BarChart& c = bars_of(views);
  REQUIRE(c.bars.size() == 4);
  CHECK(c.bars[0].label == "turbo_4bit · measured");
  CHECK(c.bars[0].marked);
  CHECK(c.bars[0].segments[0] == Approx(3.4 / 1.05).epsilon(1e-12));
  CHECK(c.bars[1].label == "turbo_4bit · model");
  CHECK_FALSE(c.bars[1].marked);
  CHECK(c.bars[2].segments[0] == Approx(3.4 / 1.4).epsilon(1e-12));
  CHECK(views[0].note.find("did not run") == std::string::npos);
}

TEST_CASE("speedup view: absent without an FP16 baseline", "[views]") {
  CHECK(speedup_views(model_only(false)).empty());
}

}  // namespace
}  // namespace attnlab::views
