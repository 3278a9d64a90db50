// fireq's softmax_precision = fp16 (FireQ §3.2.2, core/fireq/softmax_fp16.h) against the FP32 default, and
// fp8_k_scale = tile against token (fireq.cpp's head comment).
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
#include "core/formats/half.h"
#include "core/variants/variants.h"
#include "tests/catch.h"
#include "tests/support/variant_cases.h"

#include <fmt/format.h>

#include <cmath>
#include <random>
#include <vector>

namespace attnlab {
namespace {

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

// K whose tokens in each KV tile all share one max|k| (every row holds ±`peak` once, the rest smaller), so a
// β_K per token equals the tile's β_K; `uneven` takes token 5's peak to 0.3 of it, so tile 0's tokens then
// differ (not by a power of two, which E4M3 codes would absorb exactly).
QKV even_peaks(const Problem& p, bool uneven) {
  QKV in{Tensor(p.q_shape()), Tensor(p.kv_shape()), Tensor(p.kv_shape())};
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (int64_t i = 0; i < in.q.size(); ++i) in.q.data()[i] = u(rng);
  for (int64_t i = 0; i < in.v.size(); ++i) in.v.data()[i] = u(rng);
  for (int64_t i = 0; i < in.k.size(); ++i) in.k.data()[i] = 0.5f * u(rng);
  for (int64_t t = 0; t < p.kv_len; ++t) {
    const float peak = t < 16 ? 2.0f : 3.0f;  // tile 0, tile 1 (B_c = 16)
    in.k.at(0, 0, t, t % p.head_dim) = (t % 2 ? -1.0f : 1.0f) * (uneven && t == 5 ? 0.3f * peak : peak);
  }
  return in;
}

TEST_CASE("fireq fp8_k_scale = tile: one β_K per KV tile, the same as per token when a tile's tokens share it",
          "[variants][fireq]") {
  const VariantSpec v = variants::fireq();
  Problem p;
  p.batch = p.q_heads = p.kv_heads = 1;
  p.q_len = p.kv_len = 29;
  p.head_dim = 64;
  p.phase = Phase::prefill;
  const auto params = [&](const char* k_scale) {
    return test::params_of(v, {{"prefill_kv", "fp8"}, {"block_c", 16}, {"smoothing", "none"}, {"fp8_k_scale", k_scale}});
  };
  for (bool causal : {false, true}) {
    p.causal = causal;
    INFO(fmt::format("causal {}", causal));
    const ReferenceOutput tile = test::run_checked(v, p, even_peaks(p, false), params("tile"));
    const ReferenceOutput token = test::run_checked(v, p, even_peaks(p, false), params("token"));
    // β_K = bf16(max|k|/448): 2/448 = 1.142857·2⁻⁸ → (146/128)·2⁻⁸; 3/448 = 1.714286·2⁻⁸ → (219/128)·2⁻⁸.
    const ProbeArray& sk = tile.probes.at("scales.k");
    CHECK(sk.shape == std::vector<int64_t>{1, 1, 2});
    CHECK(sk.values == std::vector<double>{146.0 / 32768, 219.0 / 32768});
    CHECK(token.probes.at("scales.k").shape == std::vector<int64_t>{1, 1, 29});
    for (int64_t i = 0; i < tile.o.size(); ++i) REQUIRE(tile.o.data()[i] == token.o.data()[i]);
    // Token 5's own β shrinks: per token its codes keep their scale, per tile they take tile 0's.
    const ReferenceOutput tile_u = test::run_checked(v, p, even_peaks(p, true), params("tile"));
    const ReferenceOutput token_u = test::run_checked(v, p, even_peaks(p, true), params("token"));
    CHECK(tile_u.probes.at("scales.k").values == sk.values);
    int64_t differ = 0;
    for (int64_t i = 0; i < tile_u.o.size(); ++i) differ += tile_u.o.data()[i] != token_u.o.data()[i];
    CHECK(differ > 0);
    // HBM: one BF16 β_K per tile read instead of one per key: one row block (block_r 128 ≥ 29) reads both
    // tiles, 29 keys — 29·2 bytes of β_K per token against 2·2 per tile.
    const auto scales = [](const ReferenceOutput& o) { return o.probes.at("hbm_bytes").values[3]; };  // q k v scales o lse
    CHECK(scales(token) - scales(tile) == 29.0 * 2 - 2.0 * 2);
  }
}

}  // namespace
}  // namespace attnlab
