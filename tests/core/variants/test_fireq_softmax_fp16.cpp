// fireq's softmax_precision = fp16 (FireQ §3.2.2, core/fireq/softmax_fp16.h) against the FP32 default.
//
// The logsumexp bound. L = m + log ℓ does not depend on m, and ℓ sums the unquantized P̃, so L moves only with
// the FP16 roundings of the softmax, none of E4M3's. Per visible score, in log₂ units: S₂ = fp16(S·log₂e) errs
// by ≤ 2⁻¹¹·|S₂|, S₂ − m₂ by ≤ 2⁻¹¹·|S₂ − m₂|, and P̃ = fp16(2^…) by ≤ 2⁻¹¹ relative (2⁻²⁵ absolute for FP16's
// subnormals). An error δ in the exponent moves P̃ by ≈ ln 2·δ relative, so ℓ moves by the P̃-weighted mean of
// those: with |S₂| ≤ |m₂| + |S₂ − m₂| and the weighted mean of |S₂ − m₂| ≤ log₂ N + 2 (P̃ = 2^{S₂ − m₂}, the
// row's maximum has P̃ = 1, and N − 1 scores at a common depth x weigh in at most x·(N − 1)2⁻ˣ/(1 + (N −
// 1)2⁻ˣ) ≤ log₂ N + 2),
//   |ΔL| ≤ 2⁻¹¹·(ln 2·|m₂| + 2·ln 2·(log₂ N + 2) + 1) + N·2⁻²⁵ = 2⁻¹¹·(|m| + 2·ln N + 3.8) + N·2⁻²⁵,
// with |m| ≤ |L| + ln N (1 ≤ ℓ ≤ N). The FP32 side's own error (its exp, the factors' order: a few FP32 ulps
// of S) adds ≤ 10⁻⁵·(1 + |L|); the first-order ln 2·δ for 2^δ − 1 takes 1% more.
#include "core/variants/variants.h"
#include "tests/catch.h"
#include "tests/support/variant_cases.h"

#include <fmt/format.h>

#include <cmath>
#include <vector>

namespace attnlab {
namespace ATTNLAB_FILE_LOCAL {

const std::vector<double>& lse_of(const ReferenceOutput& out) { return out.probes.at("lse").values; }

TEST_CASE("fireq softmax_precision = fp16: the logsumexp within the FP16 roundings' bound of FP32's", "[variants][fireq]") {
  const VariantSpec v = variants::fireq();
  for (const char* kv : {"int4", "fp8"})
    for (bool causal : {false, true})
      for (bool gqa : {false, true}) {
        const Problem p = test::sweep_problem(64, 200, causal, gqa, Phase::prefill);
        const QKV in = test::generated(p, "llm_like", 11);
        INFO(fmt::format("prefill_kv {} causal {} gqa {}", kv, causal, gqa));
        const ReferenceOutput f32 = test::run_checked(v, p, in, test::params_of(v, {{"prefill_kv", kv}}));
        const ReferenceOutput f16 =
            test::run_checked(v, p, in, test::params_of(v, {{"prefill_kv", kv}, {"softmax_precision", "fp16"}}));
        const std::vector<double>&a = lse_of(f32), &b = lse_of(f16);
        REQUIRE(a.size() == b.size());
        int64_t moved = 0;
        double worst = 0;
        for (size_t i = 0; i < a.size(); ++i) {
          REQUIRE(std::isfinite(a[i]));
          const double n = double(p.kv_len), m = std::fabs(a[i]) + std::log(n);
          const double bound = 1.01 * std::ldexp(m + 2 * std::log(n) + 3.8, -11) + n * std::ldexp(1.0, -25) +
                               1e-5 * (1 + std::fabs(a[i]));
          worst = std::max(worst, std::fabs(a[i] - b[i]) / bound);
          moved += a[i] != b[i];
        }
        CHECK(worst <= 1.0);
        CHECK(moved > 0);  // the FP16 path ran
        // O: the same E4M3 P̂ up to the flips of P̃'s FP16 roundings — not bit for bit, but close: a flip moves one
        // P̂ by ≤ 2⁻⁴ of itself, so the relative L2 difference stays a fraction of E4M3's step.
        double diff = 0, norm = 0;
        for (int64_t i = 0; i < f32.o.size(); ++i) {
          diff += std::pow(double(f32.o.data()[i]) - double(f16.o.data()[i]), 2);
          norm += std::pow(double(f32.o.data()[i]), 2);
        }
        CHECK(std::sqrt(diff / norm) < std::ldexp(1.0, -4));
      }
}

TEST_CASE("fireq softmax_precision: decode keeps FP32 — the same output under fp16", "[variants][fireq]") {
  const VariantSpec v = variants::fireq();
  const Problem p = test::sweep_problem(128, 300, false, true, Phase::decode);
  const QKV in = test::generated(p, "llm_like", 5);
  const ReferenceOutput a = test::run_checked(v, p, in, test::params_of(v, {}));
  const ReferenceOutput b = test::run_checked(v, p, in, test::params_of(v, {{"softmax_precision", "fp16"}}));
  for (int64_t i = 0; i < a.o.size(); ++i) REQUIRE(a.o.data()[i] == b.o.data()[i]);
  CHECK(lse_of(a) == lse_of(b));
}

}  // namespace
}  // namespace attnlab
