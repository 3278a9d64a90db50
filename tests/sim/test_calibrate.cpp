// Calibration's speed without changing its answer: FactorTiming gives timing()'s very doubles, the
// leave-one-out fits started from the full fit land where the old from-scratch fits landed, and 1000
// measurements calibrate in seconds ([.bench]: `build/bin/attnlab_tests "[calibrate-bench]"`).
#include "core/registry.h"
#include "sim/calibrate.h"
#include "sim/factor_timing.h"
#include "sim/schedule.h"
#include "tests/catch.h"
#include "tests/support/model_cases.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>

namespace attnlab::sim {
namespace ATTNLAB_FILE_LOCAL {

using test::request;

std::vector<Measurement> shipped(const std::string& file) {
  return load_measurements(std::string(ATTNLAB_SOURCE_DIR) + "/sim/measurements/" + file);
}

// `n` measurements over varied shapes and variants (FP16, INT8 and FP8 tensor cores, prefill and decode),
// timed by the model itself with known factors and a deterministic ±8% scatter, as real timings scatter.
std::vector<Measurement> synthetic(size_t n, const GpuSpec& gpu) {
  GpuSpec truth = gpu;
  truth.efficiency = {{"hbm", 0.8}, {"mma_fp16", 0.55}, {"mma_int8", 0.6}, {"mma_fp8", 0.5}, {"exp_sfu", 0.7}};
  truth.cta_overhead_us = 3;
  uint64_t state = 12345;
  auto next = [&](uint64_t k) {  // a 64-bit LCG: reproducible on every platform
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return (state >> 33) % k;
  };
  const char* variants[] = {"flash2", "int_flash", "flash3_fp8"};
  std::vector<Measurement> m;
  while (m.size() < n) {
    Problem p;
    p.batch = int64_t(1) << next(4);
    p.q_heads = int64_t(8) << next(3);
    p.kv_heads = p.q_heads >> next(3);
    p.kv_len = int64_t(1024) << next(5);
    p.head_dim = next(2) ? 128 : 64;
    p.phase = next(4) == 0 ? Phase::decode : Phase::prefill;
    p.q_len = p.phase == Phase::decode ? 1 : p.kv_len;
    p.causal = p.phase == Phase::prefill && next(2);
    const char* id = p.phase == Phase::decode ? "flash2" : variants[next(3)];
    const VariantRequest v = request(id);
    const double scatter = 0.92 + 0.16 * double(next(1000)) / 1000;
    m.push_back({fmt::format("{} #{}", id, m.size()), p, v, predict(make_schedule(p, v, truth), truth).time_ms * scatter, ""});
  }
  return m;
}

TEST_CASE("FactorTiming: timing()'s doubles, bit for bit, for any factors", "[sim][calibrate]") {
  const GpuSpec gpu = load_gpu_spec("h100-sxm5");
  std::vector<Layout> layouts;
  for (const auto& x : synthetic(200, gpu))
    layouts.push_back(layout(make_schedule(x.problem, x.variant, gpu), gpu, {}, nullptr));
  for (const auto& x : shipped("h100-attnlab-kernels.json"))
    layouts.push_back(layout(make_schedule(x.problem, x.variant, gpu), gpu, {}, nullptr));
  GpuSpec plain = gpu;
  plain.efficiency.clear();
  const FactorTiming fast(plain, layouts);
  REQUIRE(fast.size() == layouts.size());
  for (int trial = 0; trial < 5; ++trial) {
    FactorParams p;
    GpuSpec g = plain;
    for (Unit u : kUnits) {
      const double e = 0.05 + 0.3 * trial + 0.07 * double(unit_index(u));  // some above 1
      p.efficiency[unit_index(u)] = e;
      g.efficiency[to_string(u)] = e;
    }
    p.cta_overhead_us = g.cta_overhead_us = 0.5 + trial;
    p.issue_latency_cycles = g.issue_latency_cycles = 2.5 + 2 * trial;  // the latency term binds in some
    const FactorTiming::Rates r = fast.rates(p);
    for (size_t i = 0; i < layouts.size(); ++i) {
      INFO("layout " << i << ", trial " << trial);
      CHECK(fast.time_ms(i, r) == timing(layouts[i], g).time_ms);  // exact: the same arithmetic
    }
  }
}

TEST_CASE("leave-one-out: whole refits up to 100 measurements, Levenberg–Marquardt from the full fit within 6.5%",
          "[sim][calibrate]") {
  // Both minimize the same loss without one measurement; coordinate descent from 1 (the refit) and
  // Levenberg–Marquardt from the full fit stop at different kinks of the model's max() and min() terms. On
  // these files the largest gap was 1.2% of a prediction before the latency term (h100-attnlab-kernels,
  // int_flash rows whose bound switches between the INT8 MMA and the SFU); its min(1, W / L̄) adds a kink
  // where the mma.sync rows switch between the MMA and the issue latency, and the gap is now 6.1%
  // (h100-attnlab-kernels, flash2 causal at N 4096, where Levenberg–Marquardt stays at the full fit's
  // 0.732 ms — 5.3% from the measured 0.695 — and the refit moves to 0.780, 12.1% from it) and 1.6% on an
  // int_flash row; every other row within 1.2%; the median error by at most 0.6 points — 0.602 on
  // h100-attnlab-kernels once each factor is held to its physical range (calibrate.cpp kPhysical), so ≤ 0.7.
  for (const char* file : {"h100-sxm5-sdpa-flash.json", "h100-attnlab-kernels.json", "h200-attnlab-kernels.json"}) {
    INFO(file);
    const auto m = shipped(file);
    const GpuSpec gpu = load_gpu_spec(file[1] == '2' ? "h200" : "h100-sxm5");
    const Calibration automatic = calibrate(gpu, m);
    const Calibration refit = calibrate(gpu, m, {}, {}, LooMethod::refit);
    const Calibration lm = calibrate(gpu, m, {}, {}, LooMethod::from_full_fit);
    CHECK(lm.efficiency == refit.efficiency);  // the full fit is one and the same
    CHECK(lm.median_error_after == refit.median_error_after);
    REQUIRE(lm.rows.size() == refit.rows.size());
    for (size_t i = 0; i < m.size(); ++i) {
      INFO(refit.rows[i].label);
      CHECK(automatic.rows[i].loo_ms == refit.rows[i].loo_ms);  // ≤ 100 measurements: whole refits
      CHECK(lm.rows[i].loo_ms == Approx(refit.rows[i].loo_ms).epsilon(0.065));
    }
    CHECK(std::abs(lm.median_error_loo - refit.median_error_loo) <= 0.007);
  }
}

TEST_CASE("calibration reports its progress up to the end", "[sim][calibrate]") {
  const auto m = shipped("h100-sxm5-sdpa-flash.json");
  std::vector<double> seen;
  std::string last;
  calibrate(load_gpu_spec("h100-sxm5"), m, {}, [&](double f, const std::string& stage) {
    seen.push_back(f);
    last = stage;
  });
  REQUIRE(seen.size() >= m.size());
  for (size_t i = 1; i < seen.size(); ++i) CHECK(seen[i] >= seen[i - 1]);
  CHECK(seen.back() == Approx(1.0));
  CHECK(last == fmt::format("leave-one-out fits: {}/{}", m.size(), m.size()));
}

TEST_CASE("1000 measurements calibrate in at most 5 s", "[.bench][calibrate-bench]") {
  const GpuSpec gpu = load_gpu_spec("h100-sxm5");
  const auto m = synthetic(1000, gpu);
  const auto start = std::chrono::steady_clock::now();
  const Calibration c = calibrate(gpu, m);  // > 100 measurements: leave-one-out from the full fit
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  WARN(fmt::format("calibrate: {} measurements in {:.2f} s; median |error| after {:.1f}%, leave-one-out {:.1f}%",
                   m.size(), s, 100 * c.median_error_after, 100 * c.median_error_loo));
  // The synthetic scatter is ±8%: a fit that found the factors predicts within it.
  CHECK(c.median_error_after < 0.05);
  CHECK(c.median_error_loo < 0.05);
  CHECK(s <= 5.0);  // the issue's bound on a 2-core machine
}

TEST_CASE("leave-one-out from the full fit against whole refits at 200 measurements", "[.bench][calibrate-bench]") {
  // The gap between the two leave-one-out methods (6.1% at most on the shipped files of 18–36 rows) at a
  // size where whole refits still finish (~10 s): one row's pull on the factors is ~1/N.
  const GpuSpec gpu = load_gpu_spec("h100-sxm5");
  const auto m = synthetic(200, gpu);
  const Calibration refit = calibrate(gpu, m, {}, {}, LooMethod::refit);
  const Calibration lm = calibrate(gpu, m, {}, {}, LooMethod::from_full_fit);
  double worst = 0;
  for (size_t i = 0; i < m.size(); ++i) worst = std::max(worst, std::abs(lm.rows[i].loo_ms / refit.rows[i].loo_ms - 1));
  WARN(fmt::format("200 measurements: largest leave-one-out gap {:.3f}%, median error {:.2f}% (refit) vs {:.2f}%",
                   100 * worst, 100 * refit.median_error_loo, 100 * lm.median_error_loo));
  CHECK(worst < 0.012);
}

}  // namespace
}  // namespace attnlab::sim
