// The kivi decode kernel (kernels/kivi/kivi_decode.cu) against the `kivi` reference (core/variants/kivi.cpp), on
// the GPU. Skipped, with the reason printed, where there is no usable GPU. Seeds are fixed and printed.
//
// What is equal, exactly: the inputs of the attention. The kernel reads the reference's own cache (built
// by quant::kivi_quantize, uploaded in kivi_layout.h's layout) and dequantizes it as kivi_dequantize does
// — tests/core/variants/test_kivi_layout.cpp checks, on the host, that the kernel's reads and its
// fp16(fmaf(q, s, z)) give K̂ and V̂ bit for bit — and Q is rounded to FP16 (RNE) on both sides.
// What differs, and by how much. Both then compute flash2's function of (Q, K̂, V̂); let p_j = e^{S_j·scale −
// M} (M the row's true max) and O* = Σ p_j v̂_j / Σ p_j. On each side:
//   - P̃_j is rounded to FP16 against that side's running max at j's tile (the kernel's tiles and chains
//     are not the reference's), so each side's weight carries its own relative error ≤ 2⁻¹¹ (normal FP16),
//     or an absolute one ≤ 2⁻²⁵ in units where the row's largest term is 1 (subnormal P̃; ℓ ≥ 1 in those
//     units): |O_side − O*| gains ≤ 2⁻¹¹·max|v̂| + N·2⁻²⁵·max|v̂|;
//   - FP32: S from FP16 products summed in another order (|ΔS| ≤ d·2⁻²³·A with A = max_j Σ_c |q_c·k̂_jc|,
//     so p_j moves by ≤ scale·d·2⁻²³·A relative); exp: ex2.approx (≤ 2 ulp = 2⁻²²) of an argument whose
//     roundings (S·scale·log₂e, the max, the FMA; the reference's S·scale and its exp likewise) are a few
//     ulps of |S·scale| ≤ scale·A, ≤ 4·2⁻²⁴·(1 + scale·A) relative; ℓ and G = Σ P̃v̂ summed in other
//     orders (≤ (N + d)·2⁻²³ relative to Σ p|v̂|): together η·max|v̂| with
//     η = scale·d·2⁻²³·A + 2⁻²² + 4·2⁻²⁴·(1 + scale·A) + (N + d)·2⁻²³.
// So before O's FP16 store |o_k − o_r| ≤ Δ = 2·(2⁻¹¹ + N·2⁻²⁵ + η)·max|v̂|, and both stores round to
// nearest: |fp16(a) − fp16(b)| ≤ |a − b| + one FP16 ulp at max(|a|, |b|) ≤ Δ + 2⁻¹⁰·(|o_r| + Δ) + 2⁻²⁴.
// That is the per-element bound (≈ 2–3·10⁻³·max|v̂| at N = 4097, ≈ 1.2·10⁻³ at N = 100; flash2's test
// allows 2⁻¹⁰·(max|v| + |o|) for the same effects without the FP32 terms).
// The logsumexp L = m + log ℓ: m moves with S (≤ scale·d·2⁻²³·A per side), log ℓ with ℓ's relative error
// (≤ 2⁻²² + N·2⁻²³ + scale·d·2⁻²³·A per side), and the max's scaling, log2f/logf, the change of base and
// the sum add a few FP32 ulps of the terms, |m| ≤ scale·A and log ℓ ≤ ln N:
// |ΔL| ≤ 2·(2·scale·d·2⁻²³·A + 2⁻²² + N·2⁻²³) + 2⁻²⁰·(1 + |L| + scale·A + 2·ln N).
// Against the FP64 truth the cache's error dominates wherever anything is quantized, so the kernel's
// rel_l2 stays within 1.25× the reference's (flash2's rule; the FP16-level differences above are ≤ 10⁻³
// relative, the cache's error ≥ 10⁻² at 4 bits).
#include "core/ground_truth.h"
#include "core/metrics.h"
#include "core/data/generators.h"
#include "core/formats/half.h"
#include "core/gpu_names.h"
#include "core/quant/kivi.h"
#include "core/registry.h"
#include "kernels/common/device.h"
#include "kernels/common/cuda_check.h"
#include "kernels/kivi/kivi_decode.h"
#include "kernels/kivi/kivi_decode_host.h"
#include "sim/cost_model.h"
#include "sim/schedule.h"
#include "tests/catch.h"
#include "tests/support/kivi_inexact_keys.h"
#include "tests/support/model_cases.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <string>

namespace attnlab {
namespace ATTNLAB_FILE_LOCAL {

#define DEVICE_OR_SKIP(dev)                                       \
  const kernels::DeviceInfo dev = kernels::probe_device();        \
  do {                                                            \
    if (!dev.usable) ATTNLAB_SKIP(dev.reason); \
  } while (0)

const VariantSpec& kivi() { return *find_variant("kivi"); }

ParamValues kivi_params(int bits, int64_t group, int64_t residual) {
  ParamValues pv = ParamValues::defaults(kivi().params);
  pv.set(kivi().params, "bits", bits, "test");
  pv.set(kivi().params, "group", group, "test");
  pv.set(kivi().params, "residual", residual, "test");
  return pv;
}

// max|v̂| and A = max over query heads and tokens of Σ_c |fp16(q_c)·k̂_c| (the header's bound).
struct Magnitudes {
  double max_v = 0, a = 0;
};
Magnitudes magnitudes(const Problem& p, const QKV& in, const std::vector<quant::KiviCache>& caches) {
  Magnitudes m;
  const int64_t d = p.head_dim, n = p.kv_len;
  std::vector<float> k_hat(size_t(n * d)), v_hat(size_t(n * d));
  for (int64_t pair = 0; pair < p.batch * p.kv_heads; ++pair) {
    quant::kivi_dequantize(caches[size_t(pair)], k_hat.data(), v_hat.data());
    for (float x : v_hat) m.max_v = std::max(m.max_v, double(std::abs(x)));
    const int64_t b = pair / p.kv_heads, kvh = pair % p.kv_heads;
    for (int64_t h = kvh * p.group(); h < (kvh + 1) * p.group(); ++h) {
      const float* q = in.q.head(b, h).data();
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t c = 0; c < d; ++c) s += std::abs(double(formats::round_fp16(q[c])) * k_hat[size_t(j * d + c)]);
        m.a = std::max(m.a, s);
      }
    }
  }
  return m;
}

struct Case {
  int64_t d, q_heads, kv_heads, kv_len;
  int bits;
  int64_t group = 32, residual = 128;
  const char* gen = "normal";
  bool inexact_keys = false;  // test::make_inexact_key_groups: slots the kernel dequantizes on its FP32 path
};

// One decode problem through the reference and the kernel at the given chain counts (0 = the device's rule,
// −1 = one chain per tile).
void check_case(const kernels::DeviceInfo& dev, const Case& c, uint64_t seed, std::initializer_list<int> chain_counts) {
  Problem p;
  p.batch = 2, p.q_heads = c.q_heads, p.kv_heads = c.kv_heads, p.head_dim = c.d, p.kv_len = c.kv_len, p.q_len = 1;
  p.phase = Phase::decode;
  QKV in = data::generate(p, c.gen, ParamValues::defaults(data::find_generator(c.gen)->params), seed);
  if (c.inexact_keys)
    for (int64_t bh = 0; bh < p.batch * p.kv_heads; ++bh)
      test::make_inexact_key_groups(in.k.data() + bh * p.kv_len * p.head_dim, p.kv_len, p.head_dim);
  const ParamValues pv = kivi_params(c.bits, c.group, c.residual);
  const ReferenceOutput ref = kivi().reference(p, in, pv, {});
  const std::vector<quant::KiviCache> caches = kernels::kivi_host_caches(p, in, pv);
  const kernels::KiviDeviceCache cache = kernels::upload_kivi_cache(caches);
  const kernels::DeviceBuffer q = kernels::upload_query_fp16(in.q);
  const Magnitudes mag = magnitudes(p, in, caches);
  const TensorF64 truth = attention_fp64(p, in);
  const double err_r = compare_to_truth(ref.o, truth).rel_l2;
  const double N = double(c.kv_len), d = double(c.d), fp32_s = p.scale() * d * 0x1p-23 * mag.a;
  const double s_max = p.scale() * mag.a;  // ≥ |S·scale|
  const double eta = fp32_s + 0x1p-22 + 4 * 0x1p-24 * (1 + s_max) + (N + d) * 0x1p-23;
  const double delta = 2 * (0x1p-11 + N * 0x1p-25 + eta) * mag.max_v;
  const int tiles = kernels::kivi_decode_tiles(cache.args);
  if (c.inexact_keys) REQUIRE(cache.inexact_slots > 0);  // the FP32 path runs
  for (int asked : chain_counts) {
    const int chains = asked == 0 ? kernels::kivi_chains_here(p, cache, dev.sm_count) : asked < 0 ? tiles : std::min(asked, tiles);
    const std::string what =
        fmt::format("{} d={} Hq={} Hkv={} N={} bits={} group={} residual={} (Q={}) chains={} of {} tiles seed={}", c.gen,
                    c.d, c.q_heads, c.kv_heads, c.kv_len, c.bits, c.group, c.residual, caches[0].quantized_tokens,
                    chains, tiles, seed);
    INFO(what);
    const kernels::KiviDecodeOutput out = kernels::kivi_decode_once(p, cache, q.as<__half>(), chains);
    int64_t bad = 0;
    for (int64_t i = 0; i < out.o.size(); ++i) {
      const double r = ref.o.data()[i], k = out.o.data()[i];
      const double tol = delta + 0x1p-10 * (std::abs(r) + delta) + 0x1p-24;
      if (!(std::abs(k - r) <= tol) && bad++ < 4) FAIL_CHECK(fmt::format("o[{}] = {} vs reference {} (bound {:.3g})", i, k, r, tol));
    }
    CHECK(bad == 0);
    const std::vector<double>& ref_lse = ref.probes.at("lse").values;
    REQUIRE(ref_lse.size() == out.lse.size());
    for (size_t i = 0; i < out.lse.size(); ++i) {
      const double tol = 2 * (2 * fp32_s + 0x1p-22 + N * 0x1p-23) + 0x1p-20 * (1 + std::abs(ref_lse[i]) + s_max + 2 * std::log(N));
      if (!(std::abs(out.lse[i] - ref_lse[i]) <= tol) && bad++ < 4)
        FAIL_CHECK(fmt::format("lse[{}] = {} vs reference {} (bound {:.3g})", i, out.lse[i], ref_lse[i], tol));
    }
    CHECK(bad == 0);
    const double err_k = compare_to_truth(out.o, truth).rel_l2;
    INFO(fmt::format("rel_l2 kernel {:.4e} reference {:.4e}", err_k, err_r));
    CHECK(err_k <= 1.25 * err_r + 1e-6);
  }
}

TEST_CASE("kivi decode kernel equals the kivi reference within FP16 P̃ rounding and FP32 order", "[gpu][kernels][kivi]") {
  DEVICE_OR_SKIP(dev);
  uint64_t seed = 20250601;
  for (int64_t d : {64, 128})
    for (int bits : {2, 4})
      for (auto [hq, hkv] : {std::pair<int64_t, int64_t>{8, 2}, {8, 1}, {4, 4}})  // GQA 4:1, 8:1, MHA
        // N = 100: all residual; 1000: Q = 864 (13½ slots) and 136 residual tokens; 4097: 62 slots + 2.
        for (int64_t n : {100, 1000, 4097}) check_case(dev, Case{d, hq, hkv, n, bits}, seed++, {0, 1, 3, -1});
}

TEST_CASE("kivi decode kernel: other groups, no residual, outlier channels", "[gpu][kernels][kivi]") {
  DEVICE_OR_SKIP(dev);
  uint64_t seed = 9100;
  for (int64_t d : {64, 128})
    for (int bits : {2, 4}) {
      check_case(dev, Case{d, 8, 2, 2000, bits, 16, 128, "llm_like"}, seed++, {0, 5});   // four key groups per tile
      check_case(dev, Case{d, 8, 1, 2000, bits, 128, 64, "llm_like"}, seed++, {0, 5});   // a key group spans two tiles
      check_case(dev, Case{d, 16, 2, 1024, bits, 32, 0, "student_t"}, seed++, {0, 1});  // every token quantized
    }
}

// The slots whose flag is cleared take the FP32 path; every kernel above also crosses exact slots.
TEST_CASE("kivi decode kernel: slots on the FP32 path", "[gpu][kernels][kivi]") {
  DEVICE_OR_SKIP(dev);
  uint64_t seed = 4400;
  for (int64_t d : {64, 128})
    for (int bits : {2, 4}) {
      Case c{d, 8, 2, 3000, bits};
      c.inexact_keys = true;
      check_case(dev, c, seed++, {0, 1});
    }
}

// The kernel's K̂ and V̂ themselves, on both dequantization paths, bit for bit against kivi_dequantize (the
// end-to-end bound above would not see a one-ulp difference in a few values).
TEST_CASE("kivi decode kernel: its dequantization is the reference's bit for bit", "[gpu][kernels][kivi]") {
  DEVICE_OR_SKIP(dev);
  for (int64_t d : {64, 128})
    for (int bits : {2, 4})
      for (int64_t group : {16, 32, 128}) {
        Problem p;
        p.batch = 1, p.q_heads = 1, p.kv_heads = 1, p.head_dim = d, p.kv_len = 1500, p.q_len = 1;
        p.phase = Phase::decode;
        QKV in = data::generate(p, "llm_like", ParamValues::defaults(data::find_generator("llm_like")->params), 5 + bits);
        test::make_inexact_key_groups(in.k.data(), p.kv_len, d);
        const std::vector<quant::KiviCache> caches = kernels::kivi_host_caches(p, in, kivi_params(bits, group, 64));
        const kernels::KiviDeviceCache cache = kernels::upload_kivi_cache(caches);
        const quant::KiviCache& c = caches[0];
        INFO(fmt::format("d {} bits {} group {}: {} of {} slots on the FP32 path", d, bits, group, cache.inexact_slots,
                         kernels::kivi_decode_tiles(cache.args)));
        CHECK(cache.inexact_slots > 0);
        const int64_t slots = (c.quantized_tokens + 63) / 64, n = slots * 64 * d;
        CHECK(cache.inexact_slots < slots);  // and the FP16 path too
        kernels::DeviceBuffer k_hat(static_cast<size_t>(n) * 2), v_hat(static_cast<size_t>(n) * 2);
        REQUIRE(kernels::kivi_dequant_probe(cache.args, k_hat.as<__half>(), v_hat.as<__half>()) == cudaSuccess);
        std::vector<uint16_t> kk(static_cast<size_t>(n)), vv(static_cast<size_t>(n));
        REQUIRE(cudaMemcpy(kk.data(), k_hat.as<void>(), size_t(n) * 2, cudaMemcpyDeviceToHost) == cudaSuccess);
        REQUIRE(cudaMemcpy(vv.data(), v_hat.as<void>(), size_t(n) * 2, cudaMemcpyDeviceToHost) == cudaSuccess);
        std::vector<float> kr(size_t(c.tokens * d)), vr(size_t(c.tokens * d));
        quant::kivi_dequantize(c, kr.data(), vr.data());
        int64_t bad = 0;
        for (int64_t i = 0; i < c.quantized_tokens * d; ++i) {
          if (kk[size_t(i)] != formats::fp16_bits(kr[size_t(i)]) && bad++ < 4)
            FAIL_CHECK(fmt::format("K̂ token {} channel {}: {} vs {}", i / d, i % d, formats::fp16_value(kk[size_t(i)]), kr[size_t(i)]));
          if (vv[size_t(i)] != formats::fp16_bits(vr[size_t(i)]) && bad++ < 4)
            FAIL_CHECK(fmt::format("V̂ token {} channel {}: {} vs {}", i / d, i % d, formats::fp16_value(vv[size_t(i)]), vr[size_t(i)]));
        }
        CHECK(bad == 0);
      }
}

// v4: the FP32 path called out of line leaves the loop the FP16 path's registers, so the kernel holds more warps per SM
// where registers were the bound. The counts are ptxas's on sm_90a (kivi_decode.cu's kMinBlocks): d 128 2 bits 166
// registers → three CTAs of four warps (v3: two); d 128 4 bits two (its 80 KB of rings); d 64 128 → four (v3: three).
// A cache with slots on the FP32 path runs the same kernel ("slots on the FP32 path" checks its output). The cost
// model's kivi row (core/kernel_traits.h) must give the kernel's CTAs per SM, on the spec of the GPU that runs.
TEST_CASE("kivi decode kernel: its warps per SM, and the model's", "[gpu][kernels][kivi]") {
  DEVICE_OR_SKIP(dev);
  const std::string spec = spec_id_for_device(dev.name);
  const bool sm90 = dev.sm_major == 9 && dev.sm_minor == 0;
  struct Expect {
    int64_t d;
    int bits, warps;
  };
  for (const Expect& e : {Expect{128, 2, 12}, Expect{128, 4, 8}, Expect{64, 2, 16}, Expect{64, 4, 16}}) {
    Problem p;
    p.batch = 1, p.q_heads = 8, p.kv_heads = 2, p.head_dim = e.d, p.kv_len = 1500, p.q_len = 1;
    p.phase = Phase::decode;
    const ParamValues pv = kivi_params(e.bits, 32, 128);
    const QKV in = data::generate(p, "llm_like", ParamValues::defaults(data::find_generator("llm_like")->params), 77);
    const kernels::KiviDeviceCache cache = kernels::upload_kivi_cache(kernels::kivi_host_caches(p, in, pv));
    INFO(fmt::format("{} ({}): d {} bits {}", dev.name, spec.empty() ? "no spec" : spec, e.d, e.bits));
    int warps = 0;
    REQUIRE(kernels::kivi_decode_warps_per_sm(cache.args, warps) == cudaSuccess);
    if (sm90) CHECK(warps == e.warps);
    if (!spec.empty()) {
      const sim::GpuSpec gpu = sim::load_gpu_spec(spec);
      const VariantRequest v = test::request("kivi", {{"bits", e.bits}, {"group", 32}, {"residual", 128}});
      const sim::Schedule s = sim::make_schedule(p, v, gpu);
      CHECK(sim::ctas_per_sm(s, gpu) * s.warps == warps);
    }
  }
}

// Small shapes for compute-sanitizer (memcheck, racecheck, synccheck): both head dims and widths, a
// partial last quantized tile (Q = 160) and a partial residual tile (140 tokens), one chain and three (the
// merge kernel; a chain that crosses from quantized to residual tiles).
TEST_CASE("kivi decode kernel: small shapes for the sanitizers", "[gpu][sanitize]") {
  DEVICE_OR_SKIP(dev);
  uint64_t seed = 31;
  for (int64_t d : {64, 128})
    for (int bits : {2, 4}) check_case(dev, Case{d, 8, 2, 300, bits}, seed++, {1, 3});
}

// Host-side rules, no GPU needed: what the kernel refuses and the chain counts at the benchmark shapes.
TEST_CASE("kivi decode kernel: refused shapes and the chain rule", "[kernels][kivi]") {
  CHECK(kernels::kivi_decode_supports(128, 2, 32, 8));
  CHECK(kernels::kivi_decode_supports(64, 4, 16, 1));
  CHECK(!kernels::kivi_decode_supports(96, 2, 32, 1));
  CHECK(!kernels::kivi_decode_supports(128, 8, 32, 1));
  CHECK(!kernels::kivi_decode_supports(128, 2, 48, 1));
  CHECK(!kernels::kivi_decode_supports(128, 2, 32, 16));
  kernels::KiviDecodeArgs a;
  a.cache.pairs = 2, a.cache.head_dim = 128, a.cache.bits = 2, a.cache.group = 32;
  a.cache.quantized_tokens = 128, a.cache.residual_tokens = 130;  // 2 + 3 tiles
  a.batch = 1, a.q_heads = 8, a.kv_heads = 2;
  CHECK(kernels::kivi_decode_tiles(a.cache) == 5);
  a.chains = 6;  // more chains than tiles
  CHECK(kernels::kivi_decode(a, nullptr) == cudaErrorInvalidValue);
  a.chains = 2;  // no workspace for the merge
  CHECK(kernels::kivi_decode(a, nullptr) == cudaErrorInvalidValue);
  // balanced_warp_chains on an H100 (132 SMs), B = 16, N = 32768 (512 tiles). d = 128, 4 bits: 8 warps per SM
  // (two CTAs of four).
  CHECK(kernels::kivi_decode_chains(16 * 32, 512, 132, 8) == 2);  // H = 32: 256 CTAs of 264, one wave
  CHECK(kernels::kivi_decode_chains(16 * 8, 512, 132, 8) == 8);   // GQA 32/8: likewise
  CHECK(kernels::kivi_decode_chains(4096, 512, 132, 8) == 1);     // the pairs alone fill the GPU more than once
  CHECK(kernels::kivi_decode_chains(1, 3, 132, 8) == 3);          // never more than the tiles
  // d = 128, 2 bits (v4): 12 warps per SM. H = 32: 384 CTAs of 396. GQA 32/8: 12 chains of 43 tiles (384 CTAs, at
  // most 3 an SM) where decode_splits' first wave fill within 85% of the best took 11 of 47 (352 CTAs: 3 on 88 SMs,
  // 2 on 44 — the busiest SMs ran 12 chains of 47 tiles).
  CHECK(kernels::kivi_decode_chains(16 * 32, 512, 132, 12) == 3);
  CHECK(kernels::kivi_decode_chains(16 * 8, 512, 132, 12) == 12);
  // The fewest chains among equally short ones: 40 tiles in 12 chains are 4 long, as in 10.
  CHECK(kernels::kivi_decode_chains(16 * 8, 40, 132, 12) == 10);
}

}  // namespace
}  // namespace attnlab
