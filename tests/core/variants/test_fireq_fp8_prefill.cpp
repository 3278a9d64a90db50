// fireq's prefill_kv = fp8 on a problem small enough to recompute by hand: V's scale is one BF16 β_V,ⱼ per
// KV tile of B_c tokens, and O's tile term is fl32(P̂·V̂ⱼ)·β_V,ⱼ (fireq.cpp's head comment).
//
// N = 29 keys, B_c = 16: tile 0 holds tokens 0–15, tile 1 tokens 16–28 (a short one). Q = 0 makes every
// score 0, so P̃ = e⁰ = 1 for every visible key, P̂ = FP8(1) = 1 and ℓ = the visible count, all exact; the
// output then depends on V's quantization and the FP32 steps alone, which this test repeats in the same
// order: per tile, the exact sum Σₙ v̂ₙ (E4M3 values: exact in double) rounded to float, times β_V,ⱼ in FP32,
// added to the FP32 accumulator (which starts at 0 and is rescaled by e⁰ = 1), divided by ℓ in FP32, stored
// in BF16. So the output must match bit for bit. V is U(−1, 1) with one hand-placed maximum per tile:
//   tile 0: v[3][7] = 2    β_V,0 = bf16(2/448) = bf16(1.142857·2⁻⁸) = (146/128)·2⁻⁸ = 146/32768
//                          (1.142857·128 = 146.29 rounds to 146)
//   tile 1: v[20][5] = 300 β_V,1 = bf16(300/448) = bf16(1.339286·2⁻¹) = (171/128)·2⁻¹ = 171/256
//                          (1.339286·128 = 171.43 rounds to 171)
// Raising tile 0's maximum to 4 doubles β_V,0 (146/16384) and leaves β_V,1 and tile 1's term alone.
// A per-token β_V would give other outputs (asserted, so that the check can tell the two apart).
// And fp8_k_scale = tile (one β_K per KV tile, as β_V): equal to per token where a tile's tokens share their
// max|k|, different where they do not, with hand-checked β_K values and bytes.
#include "core/formats/fp8.h"
#include "core/formats/half.h"
#include "core/variants/variants.h"
#include "tests/catch.h"
#include "tests/support/variant_cases.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace attnlab {
namespace ATTNLAB_FILE_LOCAL {

constexpr int64_t kN = 29, kD = 64, kBc = 16;

Problem tiny_problem(bool causal) {
  Problem p;
  p.batch = p.q_heads = p.kv_heads = 1;
  p.q_len = p.kv_len = kN;
  p.head_dim = kD;
  p.causal = causal;
  p.phase = Phase::prefill;
  return p;
}

float e4m3(float x) { return formats::round_fp8(x, formats::Fp8::e4m3, formats::Overflow::saturate); }

// O recomputed as the header says, with one scale per `block` tokens (B_c: the variant's rule; 1: per token).
Tensor recompute(const Problem& p, const Tensor& v, int64_t block) {
  const auto V = v.head(0, 0);
  std::vector<float> beta;
  for (int64_t t0 = 0; t0 < kN; t0 += block)
    beta.push_back(formats::round_bf16(V.middleRows(t0, std::min(block, kN - t0)).cwiseAbs().maxCoeff() / 448.0f));
  Tensor o(p.q_shape());
  for (int64_t r = 0; r < kN; ++r) {
    const int64_t vis = p.causal ? r + 1 : kN;
    for (int64_t c = 0; c < kD; ++c) {
      float g = 0.0f;  // the FP32 accumulator
      for (int64_t j = 0; j * kBc < vis; ++j) {  // the variant's KV tiles (B_c keys each)
        double sum = 0.0;
        float scale = 1.0f;
        for (int64_t n = j * kBc; n < std::min(vis, (j + 1) * kBc); ++n) {
          const float b = beta[size_t(n / block)];
          if (block == kBc) {
            sum += double(e4m3(V(n, c) / b));  // Σ v̂ₙ, scaled after: fl32(P̂·V̂ⱼ)·β_V,ⱼ
            scale = b;
          } else {
            sum += double(e4m3(V(n, c) / b)) * double(b);  // per token: β folded into each row
          }
        }
        g = g + float(sum) * scale;
      }
      o.at(0, 0, r, c) = formats::round_bf16(g / float(vis));
    }
  }
  return o;
}

int64_t differing(const Tensor& a, const Tensor& b) {
  int64_t n = 0;
  for (int64_t i = 0; i < a.size(); ++i) n += a.data()[i] != b.data()[i];
  return n;
}

TEST_CASE("fireq prefill_kv = fp8: one BF16 β_V per KV tile, O's tile term fl32(P̂·V̂ⱼ)·β_V,ⱼ, bit for bit",
          "[variants][fireq]") {
  const VariantSpec v = variants::fireq();
  const ParamValues pv = test::params_of(v, {{"prefill_kv", "fp8"}, {"block_c", kBc}});
  for (bool causal : {false, true}) {
    const Problem p = tiny_problem(causal);
    QKV in{Tensor(p.q_shape(), 0.0f), Tensor(p.kv_shape()), Tensor(p.kv_shape())};
    std::mt19937_64 rng(29);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    for (int64_t i = 0; i < in.k.size(); ++i) in.k.data()[i] = normal(rng), in.v.data()[i] = uniform(rng);
    in.v.at(0, 0, 3, 7) = 2.0f;
    in.v.at(0, 0, 20, 5) = 300.0f;
    for (float tile0_max : {2.0f, 4.0f}) {
      in.v.at(0, 0, 3, 7) = tile0_max;
      INFO(fmt::format("causal={} tile 0 max {}", causal, tile0_max));
      const ReferenceOutput out = test::run_checked(v, p, in, pv);
      const ProbeArray& sv = out.probes.at("scales.v");
      CHECK(sv.shape == std::vector<int64_t>{1, 1, 2});
      CHECK(sv.values == std::vector<double>{tile0_max == 2.0f ? 146.0 / 32768 : 146.0 / 16384, 171.0 / 256});
      const Tensor want = recompute(p, in.v, kBc);
      CHECK(differing(out.o, want) == 0);
      CHECK(differing(out.o, recompute(p, in.v, 1)) > 0);  // per-token scales would differ
    }
  }
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
