// The cost model's producer warpgroup (core/kernel_traits.h kProducerLoads; sim/cost_model.h step 3): which
// schedules have one, what it removes from the prediction, and the H100 measurements of flash3_fp8 v8 and fireq
// prefill v6 with each kv_loads (sim/measurements/h100-fp8-prefill-loads-2026-11-27.json: `attnlab bench` with
// configs/bench-flash3-fp8-loads.json, bench-fireq-prefill.json and bench-fireq-prefill-d64.json, 2026-11-27).
#include "core/registry.h"
#include "sim/calibrate.h"
#include "sim/cost_model.h"
#include "sim/measurements.h"
#include "sim/schedule.h"
#include "tests/catch.h"
#include "tests/support/model_cases.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

namespace attnlab::sim {
namespace ATTNLAB_FILE_LOCAL {

Problem bench_prefill(int64_t n, int64_t d, bool causal) {
  Problem p;
  p.batch = 4, p.q_heads = 16, p.kv_heads = 16, p.q_len = n, p.kv_len = n, p.head_dim = d, p.causal = causal;
  return p;
}

using test::request;
using test::h100;


TEST_CASE("a producer warpgroup copies K/V where the kernel has one and the parameters select it", "[sim][model]") {
  const Problem p = bench_prefill(4096, 128, false), p64 = bench_prefill(4096, 64, false);
  CHECK(make_schedule(p, request("flash3_fp8"), h100()).producer_loads);  // tma_producer is the default
  CHECK(!make_schedule(p, request("flash3_fp8", {{"kv_loads", "cp_async"}}), h100()).producer_loads);
  CHECK(make_schedule(p, request("fireq", {{"prefill_kv", "fp8"}, {"block_c", 128}}), h100()).producer_loads);
  CHECK(!make_schedule(p, request("fireq", {{"prefill_kv", "fp8"}, {"kv_loads", "cp_async"}}), h100()).producer_loads);
  // fireq's INT4 mode copies with cp.async whatever kv_loads says; its three-stage order has the producer too.
  CHECK(!make_schedule(p, request("fireq"), h100()).producer_loads);
  CHECK(make_schedule(p64, request("fireq", {{"prefill_kv", "fp8"}, {"pipeline", "three_stage"}}), h100()).producer_loads);
  CHECK(!make_schedule(p64, request("fireq", {{"prefill_kv", "fp8"}, {"pipeline", "three_stage"}, {"kv_loads", "cp_async"}}),
                       h100()).producer_loads);
  // flash2's wgmma generation (v2) has one by default; its cp.async pipeline (v1) and its mma.sync kernel do not.
  CHECK(make_schedule(p, request("flash2"), h100()).producer_loads);
  CHECK(!make_schedule(p, request("flash2", {{"kv_loads", "cp_async"}}), h100()).producer_loads);
  CHECK(!make_schedule(p, request("flash2", {{"kernel", "mma_sync"}}), h100()).producer_loads);
  // int_flash's wgmma kernel (B_c 128) has one by default; its cp.async pipeline and the mma.sync kernel (B_c 64) do
  // not. Not on a GPU without the sm_90a kernel (the A100's schedule has no traits row).
  CHECK(make_schedule(p, request("int_flash", {{"block_c", 128}}), h100()).producer_loads);
  CHECK(!make_schedule(p, request("int_flash", {{"block_c", 128}, {"kv_loads", "cp_async"}}), h100()).producer_loads);
  CHECK(!make_schedule(p, request("int_flash"), h100()).producer_loads);
  CHECK(!make_schedule(p, request("flash3_fp8"), load_gpu_spec("a100-sxm4-80gb")).producer_loads);
  CHECK(make_schedule(p, request("flash3_fp8"), load_gpu_spec("h200")).producer_loads);
}

TEST_CASE("the producer removes exactly step 3's exposed min(t_tensor, t_simt) / k, nothing else", "[sim][model]") {
  for (int64_t d : {64, 128})
    for (bool causal : {false, true}) {
      const Problem p = bench_prefill(8192, d, causal);
      const Schedule tma = make_schedule(p, request("flash3_fp8"), h100());
      const Schedule cp = make_schedule(p, request("flash3_fp8", {{"kv_loads", "cp_async"}}), h100());
      const Layout lt = layout(tma, h100(), {}, nullptr), lc = layout(cp, h100(), {}, nullptr);
      const Timing tt = timing(lt, h100()), tc = timing(lc, h100());
      INFO(fmt::format("d {} causal {}", d, causal));
      // The same work, bytes and units: only the overlap differs.
      CHECK(tt.t_tensor == tc.t_tensor);
      CHECK(tt.t_simt == tc.t_simt);
      CHECK(tt.t_mem == tc.t_mem);
      const double exposed = std::min(tc.t_tensor, tc.t_simt) / lc.interleave * lc.tail_factor;
      CHECK(tc.time_ms - tt.time_ms == Approx(exposed * 1e3).epsilon(1e-9));
    }
}

TEST_CASE("flash3_fp8 v8 and fireq prefill v6 on the H100: the producer's gain as measured, no re-fit",
          "[sim][model]") {
  // Before the producer was in the model its prediction did not depend on kv_loads: model / measured was 1.28–1.39
  // for flash3_fp8's TMA producer, 1.10–1.13 for its cp.async, 1.01–1.07 and 0.90–0.95 for fireq's (FP8 mode,
  // two-stage). With step 3's full overlap, on 2026-11-27 (the shipped factors, fitted before these kernels ran):
  // the gain the model gives the producer (t_cp.async / t_TMA, 1.10–1.23 measured) within 4.5% of the measured one
  // at every one of the 16 pairs; the whole prediction of the FP8-mode rows (both orders; the INT4 mode left out)
  // at a median |error| of 9.8%: flash3_fp8 +8% to +16% at d 128 and +20% to +26% at d 64, fireq −5% to −12% (the
  // model predicts both variants alike; it has no term for fireq's β_K reads, which measured 21–32% slower).
  // Asserted: each gain within 6% — the 4.5% measured plus the spread of one run's time (flash3_fp8's TMA kernel,
  // timed in two files of that day, differs by up to 1.7%) — and the median |error| ≤ 10%, the all-kernel fit's
  // own bound (test_cost_model.cpp). The INT4 mode (0.81–0.83 at d 64: a conversion the model overlaps with the
  // MMAs, kernels/PERF.md) is reported, not bounded.
  std::string gpu;
  const auto m = load_measurements(std::string(ATTNLAB_SOURCE_DIR) +
                                       "/sim/measurements/h100-fp8-prefill-loads-2026-11-27.json",
                                   &gpu);
  REQUIRE(gpu == "h100-sxm5");
  REQUIRE(m.size() == 50);
  const GpuSpec spec = load_gpu_spec(gpu);
  using Key = std::tuple<std::string, int64_t, int64_t, bool>;  // variant, d, N, causal
  std::map<Key, std::map<std::string, std::pair<double, double>>> pairs;  // kv_loads → (measured, model) ms
  std::vector<double> errors;
  std::string report;
  for (const auto& x : m) {
    const double model = predict(make_schedule(x.problem, x.variant, spec), spec).time_ms;
    const double error = model / x.median_ms - 1;
    const bool int4 = x.variant.params.values().count("prefill_kv") && x.variant.params.choice("prefill_kv") == "int4";
    const bool three = x.variant.params.values().count("pipeline") && x.variant.params.choice("pipeline") == "three_stage";
    report += fmt::format("\n  {} ({}): model / measured {:.3f}", x.label, x.variant.params.choice("kv_loads"),
                          model / x.median_ms);
    if (int4) continue;
    errors.push_back(std::abs(error));
    if (!three)
      pairs[{x.variant.id, x.problem.head_dim, x.problem.q_len, x.problem.causal}][x.variant.params.choice("kv_loads")] =
          {x.median_ms, model};
  }
  int compared = 0;
  double worst_gain = 0;
  for (const auto& [key, by] : pairs) {
    if (by.size() < 2) continue;  // flash3_fp8 at d 64 ran with the producer only
    const auto& [tma_measured, tma_model] = by.at("tma_producer");
    const auto& [cp_measured, cp_model] = by.at("cp_async");
    const double measured_gain = cp_measured / tma_measured, model_gain = cp_model / tma_model;
    INFO(fmt::format("{} d {} N {} causal {}: gain measured {:.3f}, model {:.3f}", std::get<0>(key), std::get<1>(key),
                     std::get<2>(key), std::get<3>(key), measured_gain, model_gain));
    CHECK(std::abs(model_gain / measured_gain - 1) <= 0.06);
    worst_gain = std::max(worst_gain, std::abs(model_gain / measured_gain - 1));
    ++compared;
  }
  CHECK(compared == 16);
  const double mid = median(errors), worst = *std::max_element(errors.begin(), errors.end());
  WARN(fmt::format("{}\nFP8 rows: median |error| {:.1f}%, worst {:.1f}%; the producer's gain within {:.1f}%", report,
                   100 * mid, 100 * worst, 100 * worst_gain));
  CHECK(mid <= 0.10);
}

}  // namespace
}  // namespace attnlab::sim
