// The fireq decode kernel (kernels/fireq/fireq_decode.cu) against the `fireq` reference (core/variants/fireq.cpp),
// on a GPU with FP8 tensor cores (sm_89+). Skipped, with the reason printed, elsewhere.
//
// What is equal, exactly: the operands. The kernel reads the reference's own INT4 cache and E4M3 query
// (kernels/fireq/fireq_decode_host.cpp builds them with the reference's steps) and converts every code through
// §3.1.1's table: the first case checks every table entry the kernel can build (128 scales × 16 codes)
// against fireq::int4_fp8_lut, byte for byte. Every FP8 product is exact.
// What differs, and by how much (with one chain, the kernel's 64-token tiles are the reference's B_c = 64
// tiles in the same order — the cases set block_c to 64 — so both take the same running max after each tile):
//   1. S's accumulator. A tensor core aligns an MMA's addends to the largest before it adds and keeps a limited
//      width: Hopper's FP8 path about 14 significant bits (the finding of tests/kernels/fp8/test_flash3_fp8_kernel.cpp),
//      its FP16 path at least as many (tests/kernels/common/test_mma_accumulation.cpp: 2⁻²³ on an H100), so each addend
//      loses < 2⁻¹³ of the largest, itself ≤ ‖q̂‖·‖k̂‖ (Cauchy–Schwarz over the step's operands). A k32 step
//      has 33 addends on sm_89 (one FP8 MMA: 32 products and the running sum) and 34 on sm_90, where the
//      kernel runs it as two FP16 MMAs of 16 products and the running sum each (kernels/fireq/fireq_decode.cu,
//      mma_e4m3); the bound takes the larger, kAddendsPerStep = 34: |ΔS| ≤ (d/32)·34·2⁻¹³·‖q̂‖·‖k̂‖·β·τ, with
//      ‖q̂‖ the row's E4M3 query and ‖k̂‖ the largest table-converted key of its KV head (computed below from
//      the uploaded bytes).
//   2. The exponentials: ex2.approx of S·(β·τ·log₂e) − m against the reference's FP32 exp of S − m: a few
//      ulps, ≤ 10⁻⁴·(1 + |S|) relative at these magnitudes.
//   3. P̃ → E4M3 flips: items 1–2 may carry a P̃ across a rounding midpoint of E4M3, changing P̂ by one E4M3
//      ulp — ≤ 2⁻⁴ for P̃ ∈ [½, 1), less below — and O by ≤ 2⁻⁴·max|v̂|/ℓ ≤ 2⁻⁴·max|v̂| (ℓ ≥ 1: the row's
//      maximum has P̃ ≈ 1), with max|v̂| the largest table-converted value (computed below from the uploaded
//      bytes). The per-element bound allows one such flip. P̂·V̂'s own accumulator is zeroed per tile and spans
//      its 2 k-steps: each loses < 34·2⁻¹³ of the tile's Σ P̂|v̂| (item 1's rule and count); over all tiles
//      ≤ 2·34·2⁻¹³·Σ P̂|v̂| ≤ 2·34·2⁻¹³·(1 + 2⁻⁴)·ℓ·max|v̂| (Σ P̂ ≤ (1 + 2⁻⁴)·Σ P̃), and after the division by ℓ
//      ≤ 2·34·2⁻¹³·(1 + 2⁻⁴)·max|v̂|; O's and ℓ's FP32 sums in another order add ≤ N·2⁻²³·max|v̂|.
//   4. O is stored in BF16 by both: one BF16 ulp apart (2⁻⁷·|o|) when the values straddle a rounding.
// With C > 1 chains the chains' running maxima are not the reference's, so P̂ rounds differently in many
// places, each side within 2⁻⁴ relative of the same real weights: no per-element bound, but against FP64
// both sides' errors are the INT4 cache's (≥ 5·10⁻² relative on these data) plus P̂'s (≤ 2⁻⁴/√3 RMS per
// weight): err_kernel ≤ √(1 + (2⁻⁴/√3 / 5·10⁻²)²)·err_reference < 1.25·err_reference.
// The logsumexp sums the FP32 P̃ (not P̂): |ΔL| ≤ item 1 + item 2 + N·2⁻²³ (ℓ's order), at any C.
#include "core/fireq/int4_lut.h"
#include "core/formats/fp8.h"
#include "core/ground_truth.h"
#include "core/metrics.h"
#include "core/data/generators.h"
#include "core/registry.h"
#include "core/variants/fireq_layout.h"
#include "kernels/common/cuda_check.h"
#include "kernels/common/device.h"
#include "kernels/fireq/fireq_decode.h"
#include "kernels/fireq/fireq_decode_host.h"
#include "sim/schedule.h"
#include "tests/catch.h"
#include "tests/support/fireq_cache_bounds.h"
#include "tests/support/model_cases.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

namespace attnlab {
namespace ATTNLAB_FILE_LOCAL {

// Addends of one k32 step's sums (item 1): sm_89's FP8 MMA 33, sm_90's two FP16 MMAs 34 — the larger.
constexpr double kAddendsPerStep = 34;

std::string fp8_gpu_refusal(const kernels::DeviceInfo& dev) {
  if (!dev.usable) return dev.reason;
  if (dev.sm_major * 10 + dev.sm_minor < 89)
    return fmt::format("sm_89 or newer needed (this GPU is sm_{}{}): the fireq kernel needs FP8 tensor cores", dev.sm_major, dev.sm_minor);
  return "";
}

TEST_CASE("fireq decode kernel: its INT4 → FP8 table is §3.1.1's, byte for byte", "[gpu][kernels][fireq]") {
  const kernels::DeviceInfo dev = kernels::probe_device();
  if (const std::string why = fp8_gpu_refusal(dev); !why.empty()) ATTNLAB_SKIP(why);
  kernels::DeviceBuffer out(2048);
  ATTNLAB_CUDA(kernels::fireq_lut_probe(out.as<uint8_t>(), nullptr));
  std::vector<uint8_t> got(2048);
  ATTNLAB_CUDA(cudaMemcpy(got.data(), out.as<void>(), got.size(), cudaMemcpyDeviceToHost));
  int64_t bad = 0;
  for (int b = 0; b < 127; ++b) {  // every E4M3 scale σ ≥ 0 (0x7F is NaN)
    const float sigma = formats::fp8_value(uint8_t(b), formats::Fp8::e4m3);
    const std::array<float, 16> lut = fireq::int4_fp8_lut(sigma);
    for (int c = -8; c < 8; ++c) {
      const uint8_t want = formats::fp8_bits(lut[size_t(c + 8)], formats::Fp8::e4m3);
      if (got[size_t(b * 16 + c + 8)] != want && bad++ < 5)
        FAIL_CHECK(fmt::format("σ = {} (0x{:02x}), c = {}: kernel 0x{:02x}, reference 0x{:02x}", sigma, b, c,
                               got[size_t(b * 16 + c + 8)], want));
    }
  }
  CHECK(bad == 0);
}

void check_case(int64_t d, int64_t n, int64_t q_heads, int64_t kv_heads, int chains, uint64_t seed,
                const char* generator = "normal") {
  Problem p;
  p.batch = 2, p.q_heads = q_heads, p.kv_heads = kv_heads, p.head_dim = d, p.q_len = 1, p.kv_len = n;
  p.phase = Phase::decode;
  const QKV in = data::generate(p, generator, ParamValues::defaults(data::find_generator(generator)->params), seed);
  const TensorF64 truth = attention_fp64(p, in);
  const VariantSpec& f = *find_variant("fireq");
  // B_c as the kernel's tiles (the default, 128, is the prefill kernel's), so that one chain takes the reference's
  // running maxima (the head comment's items hold tile for tile).
  ParamValues params = ParamValues::defaults(f.params);
  params.set(f.params, "block_c", fireq_layout::kTile, "test");
  const ReferenceOutput ref = f.reference(p, in, params, {});
  const kernels::FireqHostInputs host = kernels::fireq_host_inputs(p, in, params);
  const kernels::FireqDeviceInputs dev_in = kernels::upload_fireq(p, host);
  const kernels::FireqDecodeOutput out = kernels::fireq_decode_once(p, dev_in, chains);
  INFO(fmt::format("d={} N={} H={}/{} chains={} {} seed={}", d, n, q_heads, kv_heads, chains, generator, seed));

  // Item 1's bound per row, and max|v̂| (item 3: the table-converted values the kernel multiplies).
  std::vector<double> k_norm;
  double max_v = 0;
  for (const std::vector<uint8_t>& img : host.images) {
    k_norm.push_back(test::fireq_cache_key_norm(img, d, n));
    max_v = std::max(max_v, test::fireq_cache_max_value(img, d, n));
  }
  std::vector<double> ds(size_t(p.batch * p.q_heads));
  for (int64_t bh = 0; bh < p.batch * p.q_heads; ++bh) {
    double qn = 0;
    for (int64_t c = 0; c < d; ++c) {
      const double x = formats::fp8_value(host.q[size_t(bh * d + c)], formats::Fp8::e4m3);
      qn += x * x;
    }
    const int64_t b = bh / p.q_heads, h = bh % p.q_heads;
    const double beta_tau = host.q_scale[size_t(bh)];  // fl(β·τ)
    const double k_max = k_norm[size_t(b * p.kv_heads + p.kv_head_of(h))];
    ds[size_t(bh)] = double(d / 32) * kAddendsPerStep * 0x1p-13 * std::sqrt(qn) * k_max * beta_tau;
  }

  int64_t bad = 0;
  if (chains == 1) {
    for (int64_t i = 0; i < out.o.size(); ++i) {
      const double r = ref.o.data()[i], k = out.o.data()[i];
      const double s = ds[size_t(i / d)];
      // Items 3 (a flip; P̂·V̂'s accumulator; FP32 order), 1–2 (e^{2ΔS} − 1), 4 (BF16).
      const double pv_sum = 2 * kAddendsPerStep * 0x1p-13 * (1 + 0x1p-4);  // item 3's accumulator
      const double tol = (0x1p-4 + pv_sum + std::expm1(2 * (s + 1e-4)) + n * 0x1p-23) * max_v + 0x1p-7 * std::abs(r) + 1e-6;
      if (!(std::abs(k - r) <= tol) && bad++ < 3) FAIL_CHECK(fmt::format("o[{}] = {} vs {} (bound {:.3g})", i, k, r, tol));
    }
  }
  const std::vector<double>& ref_lse = ref.probes.at("lse").values;
  REQUIRE(ref_lse.size() == out.lse.size());
  for (size_t i = 0; i < out.lse.size(); ++i) {
    const double tol = ds[i] + 1e-4 * (1 + std::abs(ref_lse[i])) + n * 0x1p-23;
    if (!(std::abs(out.lse[i] - ref_lse[i]) <= tol) && bad++ < 6)
      FAIL_CHECK(fmt::format("lse[{}] = {} vs {} (bound {:.3g})", i, out.lse[i], ref_lse[i], tol));
  }
  CHECK(bad == 0);
  const double err_k = compare_to_truth(out.o, truth).rel_l2, err_r = compare_to_truth(ref.o, truth).rel_l2;
  INFO(fmt::format("rel_l2 kernel {:.4e} reference {:.4e}", err_k, err_r));
  CHECK(err_k <= (chains == 1 ? 1.05 : 1.25) * err_r + 1e-5);
}

TEST_CASE("fireq decode kernel equals the fireq reference up to rare E4M3 flips of P̂", "[gpu][kernels][fireq]") {
  const kernels::DeviceInfo dev = kernels::probe_device();
  if (const std::string why = fp8_gpu_refusal(dev); !why.empty()) ATTNLAB_SKIP(why);
  const uint64_t seed = 20261126;
  for (int64_t d : {64, 128})
    for (int64_t n : {1, 100, 1024, 4097}) {
      check_case(d, n, 4, 4, 1, seed + n + d);               // MHA, the reference's tiles
      check_case(d, n, 8, 2, 1, seed + n + d + 1);           // GQA 4:1
      check_case(d, n, 8, 1, 1, seed + n + d + 2, "llm_like");  // G = 8, outlier channels
    }
  // Split-KV: several chains per pair, merged — 12 is the benchmark's GQA count, more than the merge's batch of
  // 8 chains (kernels/common/chain_merge.cuh: a later batch rescales the sums).
  for (int64_t d : {64, 128}) {
    for (int chains : {2, 7, 12}) check_case(d, 4097, 8, 2, chains, seed + chains);
    check_case(d, 3000, 4, 4, 5, seed + 9, "llm_like");
  }
}

// No GPU needed: the chains the kernel launches are the ones the cost model prices. Both take
// balanced_warp_chains, the kernel over the warps its occupancy query reports (3 CTAs of 4 warps at d 128,
// kernels/fireq/fireq_decode.cu's launch bound), the model over the CTAs its register and shared-memory count fits
// an SM (sim/schedule.cpp): a change to either side's occupancy or cap shows here.
TEST_CASE("fireq decode: the kernel's chain count is the cost model's", "[kernels][fireq][sim]") {
  constexpr int kH100Sms = 132, kWarpsPerSm = 3 * 4;
  for (int64_t batch : {1, 4, 16})
    for (int64_t kv_heads : {32, 8, 4})  // G 1, 4, 8 (the kernel holds ≤ 8 query heads per KV head)
      for (int64_t n : {1000, 8192, 32768}) {
        Problem p;
        p.batch = batch, p.q_heads = 32, p.kv_heads = kv_heads, p.head_dim = 128, p.q_len = 1, p.kv_len = n;
        p.phase = Phase::decode;
        const sim::Schedule s = sim::make_schedule(p, test::request("fireq"), test::h100());
        const int pairs = int(batch * kv_heads), tiles = int((n + 63) / 64);
        INFO(fmt::format("B {} H 32/{} N {}", batch, kv_heads, n));
        CHECK(s.splits == kernels::fireq_decode_chains(pairs, tiles, kH100Sms, kWarpsPerSm));
      }
  // The benchmark's shapes (B 16, N 32768): 3 chains per pair at MHA, 12 at GQA 4:1 (kernels/PERF.md, v8).
  CHECK(kernels::fireq_decode_chains(16 * 32, 512, kH100Sms, kWarpsPerSm) == 3);
  CHECK(kernels::fireq_decode_chains(16 * 8, 512, kH100Sms, kWarpsPerSm) == 12);
}

TEST_CASE("fireq decode kernel: small shapes for the sanitizers", "[gpu][sanitize]") {
  const kernels::DeviceInfo dev = kernels::probe_device();
  if (const std::string why = fp8_gpu_refusal(dev); !why.empty()) ATTNLAB_SKIP(why);
  for (int64_t d : {64, 128}) {
    check_case(d, 200, 4, 2, 1, 7);
    check_case(d, 300, 4, 2, 3, 8);
  }
}

}  // namespace
}  // namespace attnlab
