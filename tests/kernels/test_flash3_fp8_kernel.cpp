// The flash3_fp8 CUDA kernel (kernels/flash3_fp8_sm90.cu) against the flash3_fp8 reference
// (core/variants/flash3_fp8.cpp), on an sm_90a GPU. Skipped, with the reason printed, elsewhere.
//
// What is the same: the E4M3 inputs and their FP32 block scales (the host quantizes by the reference's rule:
// the test holds the scales equal, bit for bit), and every product — an E4M3 × E4M3 product is exact in
// FP32 (4-bit significands), so Q₈·K₈ᵀ and P̃₈·V₈ differ from the reference's only by the order of their FP32
// sums. What remains:
//   1. Accumulation order: |ΔS| ≤ d·2⁻²⁴·Σ|q·k|·f (γ_d), and P̃·V likewise: relative 10⁻⁵ at d = 128.
//   2. The exponentials: the kernel's ex2.approx on S·f·log₂e (2 ulp, plus the rounding of the product:
//      |S|·2⁻²⁴ absolute in the exponent) against the reference's FP32 exp of S − m: P̃ and ℓ agree to
//      ~(|S| + 4)·2⁻²⁴ relative — a few 10⁻⁶ for the scores here.
//   3. P̃ → E4M3 flips: a P̃ within that distance of a rounding midpoint of E4M3 can round the other way,
//      moving P̃₈ by one E4M3 ulp — at most 2⁻⁴ (P̃ ∈ [½, 1)) — and O by at most 2⁻⁴·max|V|·(1 + 2⁻⁴)/ℓ ≤
//      0.067·max|V| (ℓ ≥ 1: the row's maximum has P̃ = 1). The per-element bound allows one such flip; flips
//      are rare (a relative perturbation of ~10⁻⁶ against a 2⁻⁴ grid), so over the whole output the kernel's
//      error against FP64 stays within 1.05× the reference's.
//   4. O is rounded to FP16 by both: one FP16 ulp of O apart (2⁻¹⁰·|O|) when the FP32 values straddle a
//      rounding point.
// The logsumexp sums the FP32 P̃ (not P̃₈): no flips reach it, only items 1–2: |ΔL| ≤ 10⁻⁴·(1 + |L|).
#include "core/ground_truth.h"
#include "core/metrics.h"
#include "core/data/generators.h"
#include "core/registry.h"
#include "kernels/device.h"
#include "kernels/flash3_fp8_host.h"
#include "kernels/kernel_path.h"
#include "tests/catch.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>

namespace attnlab {
namespace {

uint64_t fresh_seed() { return uint64_t(std::chrono::steady_clock::now().time_since_epoch().count()); }

void check_case(int64_t d, int64_t nq, int64_t nkv, bool causal, int64_t kv_heads, uint64_t seed,
                const char* generator = "normal") {
  Problem p;
  p.batch = 2, p.q_heads = 4, p.kv_heads = kv_heads, p.head_dim = d, p.q_len = nq, p.kv_len = nkv, p.causal = causal;
  if (nq == 1) p.phase = Phase::decode;
  const QKV in = data::generate(p, generator, ParamValues::defaults(data::find_generator(generator)->params), seed);
  const TensorF64 truth = attention_fp64(p, in);
  const VariantSpec& f = *find_variant("flash3_fp8");
  const ReferenceOutput ref = f.reference(p, in, ParamValues::defaults(f.params), {});
  const kernels::Fp8Inputs up = kernels::upload_fp8(p, in);
  const kernels::Fp8Output out = kernels::flash3_fp8_once(p, up);
  INFO(fmt::format("d={} Nq={} Nkv={} causal={} H={}/{} {} seed={}", d, nq, nkv, causal, p.q_heads, kv_heads,
                   generator, seed));
  // The block scales: the reference's, bit for bit.
  auto same = [](const std::vector<float>& gpu, const std::vector<double>& ref_values) {
    if (gpu.size() != ref_values.size()) return false;
    for (size_t i = 0; i < gpu.size(); ++i)
      if (double(gpu[i]) != ref_values[i]) return false;
    return true;
  };
  CHECK(same(up.scales_q, ref.probes.at("scales.q").values));
  CHECK(same(up.scales_k, ref.probes.at("scales.k").values));
  CHECK(same(up.scales_v, ref.probes.at("scales.v").values));
  double max_v = 0;
  for (float x : in.v.values()) max_v = std::max(max_v, double(std::abs(x)));
  int64_t bad = 0;
  for (int64_t i = 0; i < out.o.size(); ++i) {
    const double r = ref.o.data()[i], k = out.o.data()[i];
    const double tol = 0x1p-4 * (1 + 0x1p-4) * max_v + 0x1p-10 * std::abs(r) + 1e-6;  // items 3, 4 (1–2 below it)
    if (!(std::abs(k - r) <= tol) && bad++ < 3) FAIL_CHECK(fmt::format("o[{}] = {} vs {}", i, k, r));
  }
  CHECK(bad == 0);
  const std::vector<double>& ref_lse = ref.probes.at("lse").values;
  for (size_t i = 0; i < out.lse.size(); ++i)
    if (!(std::abs(out.lse[i] - ref_lse[i]) <= 1e-4 * (1 + std::abs(ref_lse[i]))) && bad++ < 3)
      FAIL_CHECK(fmt::format("lse[{}] = {} vs {}", i, out.lse[i], ref_lse[i]));
  const double err_k = compare_to_truth(out.o, truth).rel_l2, err_r = compare_to_truth(ref.o, truth).rel_l2;
  INFO(fmt::format("rel_l2 kernel {:.4e} reference {:.4e}", err_k, err_r));
  CHECK(err_k <= 1.05 * err_r + 1e-5);
}

TEST_CASE("flash3_fp8 kernel equals the flash3_fp8 reference up to rare E4M3 flips of P", "[gpu][kernels][fp8]") {
  const kernels::DeviceInfo dev = kernels::probe_device();
  if (!dev.usable) ATTNLAB_SKIP(dev.reason);
  if (!kernels::warpgroup_mma_available()) ATTNLAB_SKIP("no sm_90a GPU: the flash3_fp8 kernel is FP8 wgmma only");
  const uint64_t seed = fresh_seed();
  for (int64_t d : {64, 128})
    for (int64_t n : {100, 1024, 4097})
      for (bool causal : {false, true})
        for (int64_t kv_heads : {4, 1}) check_case(d, n, n, causal, kv_heads, seed + n + d);
  // Ragged: more keys than queries (bottom-right causal), a single query row (decode), outlier channels.
  for (int64_t d : {64, 128}) {
    check_case(d, 300, 1000, true, 2, seed + 1);
    check_case(d, 1, 777, false, 2, seed + 2);
    check_case(d, 513, 513, true, 4, seed + 3, "llm_like");
  }
}

TEST_CASE("flash3_fp8 kernel: small shapes for the sanitizers", "[gpu][sanitize]") {
  const kernels::DeviceInfo dev = kernels::probe_device();
  if (!dev.usable) ATTNLAB_SKIP(dev.reason);
  if (!kernels::warpgroup_mma_available()) ATTNLAB_SKIP("no sm_90a GPU: the flash3_fp8 kernel is FP8 wgmma only");
  for (int64_t d : {64, 128}) check_case(d, 200, 300, true, 2, 7);
}

}  // namespace
}  // namespace attnlab
