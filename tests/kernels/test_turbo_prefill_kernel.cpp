// TurboAttention's prefill on the GPU (kernels/turbo_prefill_sm90.cu after the pre-pass of
// kernels/turbo_cache_write.cu) against the `turbo` reference (Alg. 1, SAS), on the GPU. Skipped, with the
// reason printed, where there is no usable GPU. Seeds are fixed and printed.
//
// What may differ, and by how much (SAS path): the integer products are exact, S, P̃, s_P, the P codes and
// O's two roundings per tile are the reference's operations in its order (the kernel's head comment), so
// only ℓ's summation order moves. The reference adds a tile's 64 terms in order and then fl(α·ℓ); a thread
// of the kernel keeps its share — fl(α·ℓ) plus its 16 terms per tile — and the four shares of a row are
// summed at the end. A sum of n ≥ 0 terms in any order is within γ_{n−1} = (n − 1)·u/(1 − (n − 1)·u) of the
// exact sum (u = 2⁻²⁴), and fl(fl(α·ℓ) + Σ) adds at most 2u per tile: the reference's ℓ is within γ₆₃ + 2u·T
// of the exact one, the kernel's within γ₁₅ + γ₃ + 2u·T. With T ≤ 16 tiles here, |Δℓ|/ℓ ≤ γ₆₃ + γ₁₅ + γ₃ +
// 4u·16 ≈ 9.0·10⁻⁶, and O = fl(O/ℓ) one more u on each side, G itself being identical: the test allows
// rtol 2e-5 plus one FP16 ulp of the larger value (O's FP16 rounding may fall either side). L = m + log ℓ:
// m identical, so |ΔL| ≤ 9.0·10⁻⁶ plus logf's and std::log's ≤ 1 ulp each and the sum's rounding: allowed
// 2e-5 + 4·2⁻²⁴·(1 + |L|).
// exact_exp: the kernel takes ex2.approx(t·log₂e), the reference std::exp; P̃ may differ by a few ulp, enough
// to flip a P code near a half-integer — the kernel's error against FP64 stays within 1.02× the reference's
// (test_turbo_decode_kernel.cpp argues the same).
#include "core/data/generators.h"
#include "core/ground_truth.h"
#include "core/metrics.h"
#include "core/registry.h"
#include "kernels/device.h"
#include "kernels/turbo_prefill_host.h"
#include "tests/catch.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>

namespace attnlab {
namespace {

#define GPU_OR_SKIP()                                                \
  do {                                                               \
    const kernels::DeviceInfo dev_ = kernels::probe_device();        \
    if (!dev_.usable) ATTNLAB_SKIP("no usable GPU: " + dev_.reason); \
  } while (0)

const VariantSpec& turbo() { return *find_variant("turbo"); }

double ulp16(double x) {
  const double a = std::max(std::abs(x), std::ldexp(1.0, -14));
  return std::ldexp(1.0, std::ilogb(a) - 10);
}

struct Case {
  int64_t d, q_heads, kv_heads, q_len, kv_len;
  bool causal, exact_exp;
  const char* gen;
  const char* sas_precision = "fp32";
};

void check_case(const Case& c, uint64_t seed) {
  Problem p;
  p.batch = 2, p.q_heads = c.q_heads, p.kv_heads = c.kv_heads, p.head_dim = c.d;
  p.q_len = c.q_len, p.kv_len = c.kv_len, p.causal = c.causal, p.phase = Phase::prefill;
  const QKV in = data::generate(p, c.gen, ParamValues::defaults(data::find_generator(c.gen)->params), seed);
  ParamValues pv = ParamValues::defaults(turbo().params);
  pv.set(turbo().params, "exact_exp", c.exact_exp, "test");
  pv.set(turbo().params, "sas_precision", c.sas_precision, "test");
  const ReferenceOutput ref = turbo().reference(p, in, pv, {});
  const kernels::TurboPrefillOutput out = kernels::turbo_prefill_once(p, in, pv);
  const std::string what = fmt::format("{} d={} H={}/{} N={}/{} causal={} exact_exp={} sas {} seed={}", c.gen, c.d,
                                       c.q_heads, c.kv_heads, c.q_len, c.kv_len, c.causal, c.exact_exp,
                                       c.sas_precision, seed);
  INFO(what);
  if (c.exact_exp) {
    const TensorF64 truth = attention_fp64(p, in);
    const double err_k = compare_to_truth(out.o, truth).rel_l2, err_r = compare_to_truth(ref.o, truth).rel_l2;
    INFO(fmt::format("rel_l2 kernel {:.4e} reference {:.4e}", err_k, err_r));
    CHECK(err_k <= 1.02 * err_r + 1e-5);
    return;
  }
  int64_t bad = 0;
  for (int64_t i = 0; i < out.o.size(); ++i) {
    const double r = ref.o.data()[i], k = out.o.data()[i];
    const double tol = 2e-5 * std::abs(r) + ulp16(std::max(std::abs(r), std::abs(k)));
    if (!(std::abs(k - r) <= tol) && bad++ < 6) FAIL_CHECK(fmt::format("o[{}] = {} vs reference {}", i, k, r));
  }
  const std::vector<double>& ref_lse = ref.probes.at("lse").values;
  REQUIRE(ref_lse.size() == out.lse.size());
  for (size_t i = 0; i < out.lse.size(); ++i) {
    const double tol = 2e-5 + std::ldexp(4.0, -24) * (1 + std::abs(ref_lse[i]));
    if (!(std::abs(out.lse[i] - ref_lse[i]) <= tol) && bad++ < 6)
      FAIL_CHECK(fmt::format("lse[{}] = {} vs reference {}", i, out.lse[i], ref_lse[i]));
  }
  CHECK(bad == 0);
}

TEST_CASE("turbo prefill kernel equals the turbo reference (SAS) up to ℓ's summation order", "[gpu][kernels][turbo]") {
  GPU_OR_SKIP();
  uint64_t seed = 6100;
  for (const Case& c : {Case{128, 4, 4, 256, 256, false, false, "llm_like"}, Case{128, 4, 2, 300, 300, true, false, "llm_like"},
                        Case{64, 4, 4, 200, 333, true, false, "normal"}, Case{64, 8, 2, 130, 130, false, false, "llm_like"},
                        Case{128, 2, 2, 1000, 1000, true, false, "normal"}})
    check_case(c, ++seed);
}

TEST_CASE("turbo prefill kernel with SAS in FP16x2 equals the reference's FP16 SAS up to ℓ's order", "[gpu][kernels][turbo]") {
  // Sas16 is core/sas.cpp's Fp16Kernel operation for operation (FP16 roundings at the same points), so the
  // bound of the FP32 path holds unchanged.
  GPU_OR_SKIP();
  check_case(Case{128, 4, 2, 300, 300, true, false, "llm_like", "fp16"}, 6150);
  check_case(Case{64, 4, 4, 256, 333, false, false, "normal", "fp16"}, 6151);
}

TEST_CASE("turbo prefill kernel with exact_exp is as accurate as the reference", "[gpu][kernels][turbo]") {
  GPU_OR_SKIP();
  check_case(Case{128, 4, 2, 300, 300, true, true, "llm_like"}, 6200);
  check_case(Case{64, 4, 4, 256, 256, false, true, "normal"}, 6201);
}

TEST_CASE("turbo prefill kernel on a small shape (sanitizer run)", "[sanitize]") {
  GPU_OR_SKIP();
  check_case(Case{64, 2, 1, 100, 100, true, false, "llm_like"}, 6300);
}

}  // namespace
}  // namespace attnlab
