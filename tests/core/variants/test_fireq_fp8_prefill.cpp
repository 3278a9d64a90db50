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
namespace {

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

}  // namespace
}  // namespace attnlab
