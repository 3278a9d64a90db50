// The fireq prefill kernel (kernels/fireq/fireq_prefill_sm90.cu) against the `fireq` reference (core/variants/fireq.cpp)
// with block_c = 128 (the kernel's KV tile, so P̃ meets the same running maxima and β_V's blocks are the
// kernel's), in both prefill K/V formats, on an sm_90a GPU. Skipped, with the reason printed, elsewhere.
//
// prefill_kv = fp8. What is equal, exactly: the operands — Q̂, K̂, V̂ and the BF16 scales β, β_K, β_V (the host
// builds them with the reference's own steps: kernels/fireq/fireq_prefill_host.cpp; the scales are checked bit for
// bit against the reference's probes below) — and every E4M3 product. The per-element factor is the reference's up to the order
// of its FP32 products: the reference takes fl(S·fl(fl(β_K,j·β_i)·τ)), the kernel fl(S·fl(β_K,j·τ)) and folds
// fl(β_i·log₂e) into the exponent's FFMA — a few ulps of S, inside item 2's allowance. What differs, and by how
// much (both sides walk the same 128-key tiles in the same order, so the running maxima are taken over the same
// keys):
//   1. S's accumulator. Hopper's FP8 tensor cores keep about 14 significant bits of a k32 step's sum (the
//      finding of tests/kernels/fp8/test_flash3_fp8_kernel.cpp): each of a step's 33 addends (32 products and the
//      running sum) loses < 2⁻¹³ of the largest, itself ≤ ‖q̂ᵢ‖·‖k̂ⱼ‖ (Cauchy–Schwarz over the step's operands).
//      Scaled by f_ij: |ΔSᵢⱼ| ≤ (d/32)·33·2⁻¹³·τ·(β_i‖q̂ᵢ‖)·(β_K,j‖k̂ⱼ‖) (plus FP32's 2⁻²⁴ of S for the product
//      by f, below item 2's allowance), with the row's E4M3 query and its KV head's largest β_K‖k̂‖, computed
//      below from the uploaded bytes. A move of the scores by ≤ ΔS moves P̃ by e^{ΔS} − 1 relative, and ℓ with it:
//      O by ≤ (e^{2ΔS} − 1)·max|V|.
//   2. The exponentials: ex2.approx of S·log₂e − m (m = max·log₂e rounded) against the reference's FP32 exp of
//      S − m: a few ulps plus |S|·2⁻²⁴ in the exponent, ≤ 10⁻⁴·(1 + |S|) relative at these magnitudes.
//   3. P̂ → E4M3 flips: items 1–2 may carry a P̃ across a rounding midpoint of E4M3, changing P̂ by one E4M3 ulp —
//      ≤ 2⁻⁴ for P̃ ∈ [½, 1), less below — and O by ≤ 2⁻⁴·max|v̂·β_V|/ℓ ≤ 2⁻⁴·max|V̂| (ℓ ≥ 1: the row's maximum
//      has P̃ ≈ 1), with max|V̂| = max|v̂·β_V| read off the uploaded bytes and scales.
//      The per-element bound allows one such flip. P̂·V̂ⱼ's own accumulator: item 1's loss per k32 step, relative
//      to the tile's Σ P̂|v̂|; over the 4 steps of every tile, with Σ P̂ ≤ (1 + 2⁻⁴)·ℓ (P̂ rounds P̃ by ≤ 2⁻⁴
//      relative), and divided by ℓ: ≤ 4·33·2⁻¹³·(1 + 2⁻⁴)·max|V̂|.
//      Oᵢ's update: the kernel's FFMA Oᵢ·α + acc·(β_V·α) where the reference rounds fl32(P̂·V̂)·β_V, then
//      α·Oᵢ + that: ≤ 2 ulps of Oᵢ per tile, N/128·2⁻²²·max|V̂| in all (negligible, included).
//   4. O is stored in BF16 by both: one BF16 ulp apart (2⁻⁷·|o|) when the values straddle a rounding.
// Against FP64 both sides carry the FP8 quantization of Q̃, K̃, V and P̃ (≥ 10⁻² relative on these data); the
// kernel's extra (items 1–3, rare flips) stays within 5% of it: err_kernel ≤ 1.05·err_reference.
// The logsumexp sums the FP32 P̃ (not P̂): |ΔL| ≤ item 1 + item 2 + N·2⁻²³ (ℓ's summation order).
// softmax_precision = fp16 (§3.2.2; both sides follow core/fireq/softmax_fp16.h): S₂ = fp16(S·f) with the same
// FP32 factor f, m₂, fp16(S₂ − m₂) and P̃ — all RNE as the reference's — except the kernel's ex2.approx.f16x2
// (relative error ≤ 2⁻⁹·⁹, the PTX ISA's bound) against the reference's correctly rounded 2^x. Item 2': with
// item 1's ΔS the FP16 values S₂, m₂ and S₂ − m₂ may each round one FP16 step (2⁻¹⁰ relative) apart, so the
// exponent of P̃ moves by ≤ 2·ΔS·log₂e + 2⁻¹⁰·(2|m₂| + 2|S₂ − m₂|) in log₂ units, and P̃ by ln 2 times that,
// plus 2⁻⁹·⁹ + 2⁻¹¹ (the approximation against the reference's rounding). Weighted by P̃ in O and ℓ, the mean of
// |S₂ − m₂| is ≤ log₂ N + 2 (test_fireq_softmax_fp16.cpp's argument), |m₂| ≤ log₂e·(|L| + ln N); item 2'
// replaces item 2's 10⁻⁴ in O's and L's bounds. ℓ: the reference sums the FP16 P̃ in FP32; the kernel sums each
// tile's share of a row in half2 first (four chains of four and a two-level tree: ≤ 5 FP16 roundings of
// non-negative addends, ≤ 5·2⁻¹¹ relative), then adds it to its FP32 ℓ — 5·2⁻¹¹ more in item 2'.
// fp8_k_scale = tile: one β_K per KV tile (uploaded as fl(β_K,j·τ), checked bit for bit). The kernel multiplies
// S by fl(fl(β_i·log₂e)·fl(β_K,j·τ)), one factor per row and tile, in the exponent's FFMA; the reference by
// fl(fl(β_K,j·β_i)·τ), then takes exp: the same few FP32 ulps of S as item 2 allows. Items 1 and 3 as above,
// with each key's tile β_K.
// prefill_kv = int4 (the default). The operands: Q̂ and β as above, and the INT4 cache decode reads (its E4M3
// token scales σ checked bit for bit against the reference's scales.k and scales.v probes), which the kernel
// turns into LUT_σ[c] = FP8(c·σ) with the LUT that test_fireq_decode_kernel.cpp checks byte for byte; every
// E4M3 product is exact. The same items with k̂ = LUT(k) and v̂ = LUT(v) (no β_K, no β_V: the row factor is
// fl(β·τ), the reference's, times log₂e in the exponent): item 1 with max‖LUT(k)‖ of the KV head, item 3 with
// max|LUT(v)| — both read off the uploaded bytes (tests/support/fireq_cache_bounds.h); items 2 and 4 as they
// are. Against FP64 both carry the INT4 cache's quantization (≥ 5·10⁻² relative here): the same 5%.
// The loop orders: three_stage only moves when the MMAs are issued and waited for (with the TMA producer or the
// consumers' cp.async, as the two-stage order); every tile's arithmetic,
// and the order in which tiles reach Oᵢ and ℓ, is the same — the outputs must agree bit for bit, as must the
// two-stage order with and without ping-pong.
#include "core/formats/fp8.h"
#include "core/ground_truth.h"
#include "core/metrics.h"
#include "core/data/generators.h"
#include "core/registry.h"
#include "kernels/common/device.h"
#include "kernels/fireq/fireq_prefill_host.h"
#include "kernels/common/kernel_path.h"
#include "kernels/common/vt_permutation.h"
#include "tests/catch.h"
#include "tests/support/fireq_cache_bounds.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace attnlab {
namespace ATTNLAB_FILE_LOCAL {

// The kernel's K/V reads: the INT4 cache, or App. D's FP8 with β_K per key or per KV tile (fp8_k_scale).
enum class Mode { int4, fp8_token, fp8_tile };

ParamValues kernel_params(const VariantSpec& f, Mode mode, bool fp16_softmax = false) {
  ParamValues v = ParamValues::defaults(f.params);
  if (fp16_softmax) v.set(f.params, "softmax_precision", "fp16", "test");
  v.set(f.params, "prefill_kv", mode == Mode::int4 ? "int4" : "fp8", "test");
  if (mode == Mode::fp8_tile) v.set(f.params, "fp8_k_scale", "tile", "test");
  v.set(f.params, "block_c", int64_t(kernels::kFireqPrefillBlock), "test");
  v.set(f.params, "block_r", int64_t(kernels::kFireqPrefillBlock), "test");
  return v;
}

// β·‖x̂‖ of one row x (d) of E4M3 bytes with its scale β.
double scaled_norm(const uint8_t* x, int64_t d, float beta) {
  double sq = 0;
  for (int64_t c = 0; c < d; ++c) {
    const double v = formats::fp8_value(x[c], formats::Fp8::e4m3);
    sq += v * v;
  }
  return double(beta) * std::sqrt(sq);
}

// Outputs equal bit for bit (NaN never: the read-back refuses it).
int64_t differing(const kernels::FireqPrefillOutput& a, const kernels::FireqPrefillOutput& b) {
  int64_t n = 0;
  for (int64_t i = 0; i < a.o.size(); ++i) n += !(a.o.data()[i] == b.o.data()[i]);
  for (size_t i = 0; i < a.lse.size(); ++i) n += !(a.lse[i] == b.lse[i]);
  return n;
}

void check_case(Mode mode, int64_t d, int64_t nq, int64_t nkv, bool causal, int64_t q_heads, int64_t kv_heads,
                uint64_t seed, const char* generator = "llm_like", bool fp16 = false) {
  const bool int4 = mode == Mode::int4, k_tile = mode == Mode::fp8_tile;
  Problem p;
  p.batch = 2, p.q_heads = q_heads, p.kv_heads = kv_heads, p.head_dim = d, p.q_len = nq, p.kv_len = nkv;
  p.causal = causal;
  const QKV in = data::generate(p, generator, ParamValues::defaults(data::find_generator(generator)->params), seed);
  const TensorF64 truth = attention_fp64(p, in);
  const VariantSpec& f = *find_variant("fireq");
  const ParamValues params = kernel_params(f, mode, fp16);
  REQUIRE(kernels::fireq_prefill_refusal(params, d) == "");
  const ReferenceOutput ref = f.reference(p, in, params, {});
  const kernels::FireqPrefillHostInputs host = kernels::fireq_prefill_host_inputs(p, in, params);
  const kernels::FireqPrefillDeviceInputs dev_in = kernels::upload_fireq_prefill(host);
  const kernels::FireqPrefillOutput out = kernels::fireq_prefill_once(p, dev_in);
  INFO(fmt::format("{}{} d={} Nq={} Nkv={} causal={} H={}/{} {} seed={}", int4 ? "int4" : k_tile ? "fp8 β_K per tile" : "fp8",
                   fp16 ? " FP16 softmax" : "", d, nq, nkv, causal, q_heads, kv_heads, generator, seed));
  REQUIRE(host.fp16_softmax == fp16);
  REQUIRE(host.int4_kv == int4);
  REQUIRE(host.k_tile == k_tile);

  // The scales: the reference's, bit for bit (β_K uploaded as fl(β_K·τ), kv_pad entries per KV head in V̂ᵀ's key
  // order — or one per KV tile with fp8_k_scale = tile).
  const std::vector<double>& sq = ref.probes.at("scales.q").values;
  const std::vector<double>& sk = ref.probes.at("scales.k").values;
  const std::vector<double>& sv = ref.probes.at("scales.v").values;
  const int64_t pairs = p.batch * p.kv_heads;
  int64_t scale_bad = 0;
  REQUIRE(sq.size() == host.beta_q.size());
  for (size_t i = 0; i < sq.size(); ++i) scale_bad += double(host.beta_q[i]) != sq[i];
  const int64_t kv_tiles = (nkv + kernels::kFireqPrefillBlock - 1) / kernels::kFireqPrefillBlock;
  REQUIRE(int64_t(sk.size()) == pairs * (k_tile ? kv_tiles : nkv));
  // Item 1's max‖k̂‖ per KV head and item 3's max|v̂|: of the operands the kernel multiplies.
  std::vector<double> k_norm(size_t(pairs), 0.0);
  double max_v = 0;
  if (int4) {
    const size_t image_bytes = size_t(fireq_layout::tiles_for(nkv) * fireq_layout::tile_bytes(d));
    REQUIRE(host.cache.size() == size_t(pairs) * image_bytes);
    REQUIRE(int64_t(sv.size()) == pairs * nkv);
    for (int64_t bkv = 0; bkv < pairs; ++bkv) {
      const std::vector<uint8_t> img(host.cache.begin() + bkv * image_bytes, host.cache.begin() + (bkv + 1) * image_bytes);
      for (int64_t j = 0; j < nkv; ++j) {
        scale_bad += double(test::fireq_cache_sigma(img, d, false, j)) != sk[size_t(bkv * nkv + j)];
        scale_bad += double(test::fireq_cache_sigma(img, d, true, j)) != sv[size_t(bkv * nkv + j)];
      }
      k_norm[size_t(bkv)] = test::fireq_cache_key_norm(img, d, nkv);
      max_v = std::max(max_v, test::fireq_cache_max_value(img, d, nkv));
    }
  } else {
    REQUIRE(sv.size() == host.beta_v.size());
    for (size_t i = 0; i < sv.size(); ++i) scale_bad += double(host.beta_v[i]) != sv[i];
    const float tau = static_cast<float>(p.scale());
    for (int64_t bkv = 0; bkv < pairs; ++bkv)
      for (int64_t j = 0; j < nkv; ++j) {
        const int64_t tile = j / kernels::kFireqPrefillBlock;
        const float beta_k = static_cast<float>(sk[size_t(k_tile ? bkv * kv_tiles + tile : bkv * nkv + j)]);  // the reference's β_K
        if (!k_tile)
          scale_bad += host.beta_k_tau[size_t(bkv * host.kv_pad + j / 16 * 16 + kernels::vt_position_of(int(j)))] != beta_k * tau;
        else if (j % kernels::kFireqPrefillBlock == 0)
          scale_bad += host.beta_k_tile_tau[size_t(bkv * kv_tiles + tile)] != beta_k * tau;
        k_norm[size_t(bkv)] = std::max(k_norm[size_t(bkv)], scaled_norm(host.k.data() + (bkv * nkv + j) * d, d, beta_k));
      }
    // max|v̂·β_V| of the uploaded bytes: tile j's keys are Vᵀ positions [128j, 128j + 128) (permuted within 16s).
    const int64_t v_tiles = (nkv + kernels::kFireqPrefillBlock - 1) / kernels::kFireqPrefillBlock;
    for (int64_t bkv = 0; bkv < pairs; ++bkv)
      for (int64_t c = 0; c < d; ++c)
        for (int64_t pos = 0; pos < host.kv_pad; ++pos) {
          const int64_t j = pos / kernels::kFireqPrefillBlock;
          const double v = formats::fp8_value(host.vt[size_t((bkv * d + c) * host.kv_pad + pos)], formats::Fp8::e4m3);
          max_v = std::max(max_v, std::abs(v) * host.beta_v[size_t(bkv * v_tiles + j)]);
        }
  }
  CHECK(scale_bad == 0);

  // Item 1 per row: (d/32)·33·2⁻¹³·τ·β‖q̂‖·max‖k̂‖ (k̂ with its β_K in the FP8 mode).
  const int64_t rows = p.batch * p.q_heads * nq;
  std::vector<double> ds(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t bh = r / nq, b = bh / p.q_heads, h = bh % p.q_heads;
    ds[size_t(r)] = double(d / 32) * 33 * 0x1p-13 * p.scale() * scaled_norm(host.q.data() + r * d, d, host.beta_q[size_t(r)]) *
                    k_norm[size_t(b * p.kv_heads + p.kv_head_of(h))];
  }
  // Item 2 per row: the FP32 exponentials' 10⁻⁴, or the FP16 softmax's (the head comment's item 2'), with
  // |m₂| ≤ log₂e·(|L| + ln N) from the reference's logsumexp.
  const std::vector<double>& ref_lse = ref.probes.at("lse").values;
  REQUIRE(ref_lse.size() == out.lse.size());
  auto item2 = [&](size_t row) {
    if (!fp16) return 1e-4;
    const double n = double(nkv), m2 = std::isfinite(ref_lse[row]) ? 1.4426950408889634 * (std::abs(ref_lse[row]) + std::log(n)) : 0;
    return ds[row] + std::log(2.0) * 0x1p-10 * (2 * m2 + 2 * (std::log2(n) + 2)) + std::exp2(-9.9) + 0x1p-11 + 5 * 0x1p-11;
  };
  int64_t bad = 0;
  for (int64_t i = 0; i < out.o.size(); ++i) {
    const double r = ref.o.data()[i], k = out.o.data()[i];
    const double s = ds[size_t(i / d)];
    const double tol =
        (0x1p-4 + 4 * 33 * 0x1p-13 * (1 + 0x1p-4) + std::expm1(2 * (s + item2(size_t(i / d)))) + double(nkv) / 128 * 0x1p-22) * max_v + 0x1p-7 * std::abs(r) + 1e-6;
    if (!(std::abs(k - r) <= tol) && bad++ < 3) FAIL_CHECK(fmt::format("o[{}] = {} vs {} (bound {:.3g})", i, k, r, tol));
  }
  for (size_t i = 0; i < out.lse.size(); ++i) {
    const double tol = ds[i] + (fp16 ? item2(i) : 0) + 1e-4 * (1 + std::abs(ref_lse[i])) + double(nkv) * 0x1p-23;
    const bool both_empty = std::isinf(ref_lse[i]) && out.lse[i] == ref_lse[i];  // a row that sees no key: −∞
    if (!both_empty && !(std::abs(out.lse[i] - ref_lse[i]) <= tol) && bad++ < 6)
      FAIL_CHECK(fmt::format("lse[{}] = {} vs {} (bound {:.3g})", i, out.lse[i], ref_lse[i], tol));
  }
  CHECK(bad == 0);
  const double err_k = compare_to_truth(out.o, truth).rel_l2, err_r = compare_to_truth(ref.o, truth).rel_l2;
  INFO(fmt::format("rel_l2 kernel {:.4e} reference {:.4e}", err_k, err_r));
  CHECK(err_k <= 1.05 * err_r + 1e-5);

  // The loop orders and ping-pong only move MMA issues and waits, and the FP8 mode's TMA producer puts the same
  // bytes where the consumers' cp.async copies do: the same bits.
  CHECK(differing(out, kernels::fireq_prefill_once(p, dev_in, false, false)) == 0);
  if (!int4) {
    CHECK(differing(out, kernels::fireq_prefill_once(p, dev_in, false, true, false)) == 0);
    CHECK(differing(out, kernels::fireq_prefill_once(p, dev_in, false, false, false)) == 0);
  }
  if (kernels::fireq_prefill_supports(int(d), true, int4, fp16))  // Alg. 1's order, with the producer and without
    for (bool ping_pong : {true, false})
      for (bool producer : {true, false})
        CHECK(differing(out, kernels::fireq_prefill_once(p, dev_in, true, ping_pong, producer)) == 0);
}

// "" where the kernel (FP8 wgmma only) can run; else device_reason.h's words, e.g. "sm_90a needed (…)".
std::string wgmma_refusal() { return kernels::warpgroup_mma_refusal(kernels::probe_device()); }

// The shapes of either mode: d 64/128, MHA and GQA, causal or not, ragged N, early rows that see no key, G = 8.
void check_shapes(Mode mode, uint64_t seed) {
  for (int64_t d : {64, 128})
    for (int64_t n : {100, 1024, 4097})
      for (bool causal : {false, true}) {
        check_case(mode, d, n, n, causal, 4, 4, seed + n + d);      // MHA
        check_case(mode, d, n, n, causal, 8, 2, seed + n + d + 1);  // GQA 4:1
      }
  for (int64_t d : {64, 128}) {
    check_case(mode, d, 300, 1000, true, 4, 2, seed + 1);             // ragged: more keys than queries, bottom-right
    check_case(mode, d, 1000, 300, true, 4, 2, seed + 2);             // more queries than keys: early rows see none
    check_case(mode, d, 513, 513, false, 8, 1, seed + 3, "normal");  // G = 8, no outlier channels
  }
}

TEST_CASE("fireq prefill kernel (prefill_kv = fp8) equals the fireq reference up to rare E4M3 flips of P̂",
          "[gpu][kernels][fireq]") {
  if (const std::string why = wgmma_refusal(); !why.empty()) ATTNLAB_SKIP(why);
  check_shapes(Mode::fp8_token, 20261127);
}

TEST_CASE("fireq prefill kernel (prefill_kv = fp8, fp8_k_scale = tile) equals the fireq reference up to rare E4M3 "
          "flips of P̂",
          "[gpu][kernels][fireq]") {
  if (const std::string why = wgmma_refusal(); !why.empty()) ATTNLAB_SKIP(why);
  check_shapes(Mode::fp8_tile, 20261201);
}

TEST_CASE("fireq prefill kernel with FP16 softmax (softmax_precision = fp16, §3.2.2) equals the fireq reference within "
          "ex2.approx.f16x2's error and rare E4M3 flips of P̂",
          "[gpu][kernels][fireq]") {
  if (const std::string why = wgmma_refusal(); !why.empty()) ATTNLAB_SKIP(why);
  for (Mode mode : {Mode::fp8_tile, Mode::fp8_token, Mode::int4})
    for (int64_t d : {64, 128})
      for (int64_t n : {100, 1024, 4097})
        for (bool causal : {false, true}) {
          check_case(mode, d, n, n, causal, 4, 4, 20261202 + n + d, "llm_like", true);      // MHA
          check_case(mode, d, n, n, causal, 8, 2, 20261203 + n + d, "llm_like", true);      // GQA 4:1
        }
  for (int64_t d : {64, 128}) check_case(Mode::fp8_tile, d, 1000, 300, true, 4, 2, 20261204, "llm_like", true);  // rows see none
}

TEST_CASE("fireq prefill kernel (prefill_kv = int4: decode's cache through §3.1.1's LUT) equals the fireq reference "
          "up to rare E4M3 flips of P̂",
          "[gpu][kernels][fireq]") {
  if (const std::string why = wgmma_refusal(); !why.empty()) ATTNLAB_SKIP(why);
  check_shapes(Mode::int4, 20261128);
  // A cache of one 64-token tile (the kernel's 128-key tile half missing) and of 65 tokens (half a cache tile).
  for (int64_t d : {64, 128})
    for (int64_t n : {64, 65}) check_case(Mode::int4, d, n, n, true, 4, 2, 20261129 + n);
}

TEST_CASE("fireq prefill kernel: the parameters it refuses, and why", "[kernels][fireq]") {
  const VariantSpec& f = *find_variant("fireq");
  ParamValues v = kernel_params(f, Mode::int4);
  CHECK(kernels::fireq_prefill_refusal(v, 128) == "");
  CHECK(kernels::fireq_prefill_refusal(kernel_params(f, Mode::fp8_tile), 128) == "");
  CHECK(kernels::fireq_prefill_refusal(v, 96).find("head_dim 96") != std::string::npos);
  CHECK(kernels::fireq_prefill_refusal(v, 64, true).find("two-stage") != std::string::npos);
  CHECK(kernels::fireq_prefill_refusal(kernel_params(f, Mode::fp8_token), 64, true) == "");
  CHECK(kernels::fireq_prefill_refusal(kernel_params(f, Mode::fp8_token), 128, true).find("head_dim 64") != std::string::npos);
  v.set(f.params, "scale_format", "fp32", "test");
  CHECK(kernels::fireq_prefill_refusal(v, 128).find("scale_format") != std::string::npos);
  v = kernel_params(f, Mode::int4);
  v.set(f.params, "int4_to_fp8", "exact", "test");
  CHECK(kernels::fireq_prefill_refusal(v, 128).find("int4_to_fp8") != std::string::npos);
  v = kernel_params(f, Mode::int4);
  v.set(f.params, "block_c", int64_t(64), "test");
  CHECK(kernels::fireq_prefill_refusal(v, 128).find("block_c = 128") != std::string::npos);
  CHECK(kernels::fireq_prefill_refusal(kernel_params(f, Mode::fp8_tile, true), 128) == "");
  CHECK(kernels::fireq_prefill_refusal(kernel_params(f, Mode::fp8_token, true), 64, true).find("FP16 softmax") != std::string::npos);
}

TEST_CASE("fireq prefill host inputs (no GPU): β_K per key or per tile as the reference's, the softmax flag", "[kernels][fireq]") {
  const VariantSpec& f = *find_variant("fireq");
  Problem p;
  p.batch = 2, p.q_heads = 4, p.kv_heads = 2, p.head_dim = 64, p.q_len = p.kv_len = 300;
  p.causal = true;
  const QKV in = data::generate(p, "llm_like", ParamValues::defaults(data::find_generator("llm_like")->params), 3);
  const float tau = static_cast<float>(p.scale());
  const int64_t tiles = (p.kv_len + kernels::kFireqPrefillBlock - 1) / kernels::kFireqPrefillBlock;
  for (Mode mode : {Mode::fp8_token, Mode::fp8_tile})
    for (bool fp16 : {false, true}) {
      INFO(fmt::format("{} fp16 {}", mode == Mode::fp8_tile ? "tile" : "token", fp16));
      const ParamValues params = kernel_params(f, mode, fp16);
      const kernels::FireqPrefillHostInputs h = kernels::fireq_prefill_host_inputs(p, in, params);
      const ReferenceOutput ref = f.reference(p, in, params, {});
      const std::vector<double>& sk = ref.probes.at("scales.k").values;
      CHECK(h.fp16_softmax == fp16);
      CHECK(h.k_tile == (mode == Mode::fp8_tile));
      if (mode == Mode::fp8_tile) {
        CHECK(h.beta_k_tau.empty());
        REQUIRE(int64_t(h.beta_k_tile_tau.size()) == p.batch * p.kv_heads * tiles);
        REQUIRE(sk.size() == h.beta_k_tile_tau.size());
        for (size_t i = 0; i < sk.size(); ++i) CHECK(h.beta_k_tile_tau[i] == float(sk[i]) * tau);
      } else {
        CHECK(h.beta_k_tile_tau.empty());
        REQUIRE(int64_t(h.beta_k_tau.size()) == p.batch * p.kv_heads * h.kv_pad);
        REQUIRE(int64_t(sk.size()) == p.batch * p.kv_heads * p.kv_len);
        for (int64_t bkv = 0; bkv < p.batch * p.kv_heads; ++bkv)
          for (int64_t j = 0; j < p.kv_len; ++j)
            CHECK(h.beta_k_tau[size_t(bkv * h.kv_pad + j / 16 * 16 + kernels::vt_position_of(int(j)))] ==
                  float(sk[size_t(bkv * p.kv_len + j)]) * tau);
      }
    }
}

TEST_CASE("fireq prefill kernel: small shapes for the sanitizers", "[gpu][sanitize]") {
  if (const std::string why = wgmma_refusal(); !why.empty()) ATTNLAB_SKIP(why);
  for (Mode mode : {Mode::fp8_token, Mode::fp8_tile, Mode::int4})
    for (int64_t d : {64, 128}) check_case(mode, d, 200, 300, true, 4, 2, 7);
  // The FP16 softmax's kernels, two of them (racecheck is slow): the tile mode at d 64, the INT4 mode at d 128.
  check_case(Mode::fp8_tile, 64, 200, 300, true, 4, 2, 7, "llm_like", true);
  check_case(Mode::int4, 128, 200, 300, true, 4, 2, 7, "llm_like", true);
}

}  // namespace
}  // namespace attnlab
