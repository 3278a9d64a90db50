// flash3_fp8 (FlashAttention-3 FP8 forward with per-block E4M3 scales) against FP64 and against an
// exact recomputation.
//
// Yardstick "simple_fp8": FP64 attention (attention_fp64) of Q, K, V quantized exactly as flash3_fp8
// quantizes them — E4M3 per block (Q: B_r rows, K and V: B_c rows), s = max|block|/448 — and dequantized
// (x̂ = round_fp8(x/s)·s), everything after that exact. What flash3_fp8 adds:
//   - P̃ ∈ [0, 1] rounded to E4M3 without a scale: the same relative rounding (3 mantissa bits, ≤ 2⁻⁴)
//     that V's E4M3 rounding puts on each vⱼ, now on each weight pⱼ, independently per key. The output
//     error it causes, Σⱼ pⱼεⱼ(vⱼ − o)/Σⱼ pⱼ, has the size of V's share of simple_fp8's error,
//     Σⱼ pⱼηⱼvⱼ/Σⱼ pⱼ (|vⱼ − o| ≈ |vⱼ| when o is an average of many values). Adding in quadrature, with V's
//     share at most all of simple_fp8's error: rel_l2 ≤ √2·rel_l2(simple_fp8) ≈ 1.41×. Weights below
//     2⁻⁶ are E4M3 subnormals (coarser) and below 2⁻¹⁰ flush to 0, which adds a little on long flat
//     rows. ℓ sums the unrounded P̃ (FA3), so the rounding does not cancel in O = ΣP̃₈V/ℓ either.
//     Assertion: kFp8 = 1.5 (measured worst over the sweep: 1.13, normal, N = 1024; 1.34 on uniform
//     data, not in the sweep). Q and K's E4M3 errors dominate simple_fp8 on these data, so this bound
//     alone is loose about P; the sharp check is the next one. On llm_like's long rows it does not hold: its
//     sink heads put half of a row's weight on the first key, so the running max is the sink's and most other
//     weights e^{S−m} fall below 2⁻¹⁰ and flush to 0 (measured ratio up to 2.11, N = 1024). There the sharp
//     check, which rounds the weights the same way, is the yardstick alone.
//   Sharper yardstick for the long rows (N ≥ 257), simple_fp8p: simple_fp8 with the weights rounded as
//     flash3_fp8 rounds them, round_fp8(e^{S−m}) against the row's final max m, normalized by the sum of
//     the unrounded e^{S−m}. E4M3's relative rounding does not depend on the scale outside the subnormal
//     range, so rounding against a running max instead changes the error statistically little:
//     rel_l2 ≤ 1.15·rel_l2(simple_fp8p) + 2⁻¹¹ (measured worst: 1.02, decode). A P in E5M2 (2 mantissa
//     bits) would double P's share (2.3% → 4.7% on normal data at N = 1024), ≈ 1.26 there, and fail.
//   - p_format = fp16: P̃ rounded to FP16 (≤ 2⁻¹¹ relative) plus the FP16 store of O (≤ 2⁻¹¹ per
//     element, so ≤ 2⁻¹¹ in rel_l2): rel_l2 ≤ 1.05·rel_l2(simple_fp8) + 2⁻¹¹ (measured ratio ≤ 1.001).
//   - FP32 accumulation of the FP8 products (Eigen's order, not wgmma's): ≈ d·2⁻²⁴ relative, negligible.
#include "core/ground_truth.h"
#include "core/metrics.h"
#include "core/parallel.h"
#include "core/data/generators.h"
#include "core/formats/fp8.h"
#include "core/formats/half.h"
#include "core/quant/quantize.h"
#include "core/variants/variants.h"
#include "tests/catch.h"
#include "tests/support/variant_cases.h"
#include "tests/support/input_error.h"
#include "tests/support/sweep.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>
#include <string>

namespace attnlab {
namespace ATTNLAB_FILE_LOCAL {

constexpr double kU16 = 0x1p-11;
constexpr double kFp8 = 1.5, kP16 = 1.05, kOnline = 1.15;

Problem problem_for(int64_t d, int64_t n, bool causal, bool gqa, Phase phase) {
  return test::sweep_problem(d, n, causal, gqa, phase);
}

QKV inputs(const Problem& p, const std::string& gen, uint64_t seed) { return test::generated(p, gen, seed); }

ParamValues params(test::ParamSettings set) { return test::params_of(variants::flash3_fp8(), set); }

ReferenceOutput run(const Problem& p, const QKV& in, const ParamValues& pv, ProbeRequest req = {}) {
  return variants::flash3_fp8().reference(p, in, pv, req);
}

// The E4M3 block scale of rows [r0, r0 + n) of one head: max|x|/448 by the generic quantizer's rule.
float block_scale(const Tensor::ConstMap& x, int64_t r0, int64_t n) {
  return quant::scale_for_span(x.middleRows(r0, n).cwiseAbs().maxCoeff(), formats::kE4M3Max);
}

// x (B, H, N, d) quantized to E4M3 per block of `block` rows of each head, dequantized: x̂ = round_fp8(x/s)·s.
Tensor fp8_blocks(const Tensor& x, int64_t block) {
  Tensor out = x;
  const Shape4 s = x.shape();
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t h = 0; h < s.heads; ++h) {
      const Tensor::ConstMap src = x.head(b, h);
      auto dst = out.head(b, h);
      for (int64_t r0 = 0; r0 < s.len; r0 += block) {
        const int64_t n = std::min(block, s.len - r0);
        const float sc = block_scale(src, r0, n);
        for (int64_t r = r0; r < r0 + n; ++r)
          for (int64_t c = 0; c < s.dim; ++c) dst(r, c) = formats::round_fp8(src(r, c) / sc, formats::Fp8::e4m3) * sc;
      }
    }
  return out;
}

Tensor to_float(const TensorF64& t) {
  Tensor r(t.shape());
  for (int64_t i = 0; i < t.size(); ++i) r.data()[i] = float(t.data()[i]);
  return r;
}

// FP64 attention with flash3_fp8's weights: round_fp8(e^{S−m}) with m the row's final max, over Σe^{S−m}.
Tensor simple_fp8p(const Problem& p, const QKV& s8) {
  Tensor out(p.q_shape());
  parallel_for(p.batch * p.q_heads, [&](int64_t bh) {
    const int64_t b = bh / p.q_heads, h = bh % p.q_heads;
    const RowMatrix<double> K = s8.k.head(b, p.kv_head_of(h)).cast<double>();
    const RowMatrix<double> V = s8.v.head(b, p.kv_head_of(h)).cast<double>();
    RowMatrix<double> A = s8.q.head(b, h).cast<double>() * K.transpose() * p.scale();
    for (int64_t i = 0; i < p.q_len; ++i) {
      const int64_t vis = p.visible_keys(i);
      const double m = vis > 0 ? A.row(i).head(vis).maxCoeff() : 0.0;
      double l = 0;
      for (int64_t j = 0; j < vis; ++j) {
        const double w = std::exp(A(i, j) - m);
        l += w;
        A(i, j) = formats::round_fp8(float(w), formats::Fp8::e4m3);
      }
      if (vis > 0) A.row(i).head(vis) /= l;
      A.row(i).tail(p.kv_len - vis).setZero();
    }
    const RowMatrix<double> O = A * V;
    out.head(b, h) = O.cast<float>();
  });
  return out;
}

void check_sweep(Phase phase, const std::string& gen, double& e4m3_sum, double& fp16_sum) {
  double worst = 0, worst16 = 0, worst_online = 0;
  for (int64_t d : {64, 96, 128})
    for (int64_t n : test::sweep_lengths({1, 7, 100, 257, 1024}))
      for (bool causal : {false, true})
        for (bool gqa : {false, true}) {
          const Problem p = problem_for(d, n, causal, gqa, phase);
          const QKV in = inputs(p, gen, 500 + n + d);
          const TensorF64 truth = attention_fp64(p, in);
          const QKV s8{fp8_blocks(in.q, 128), fp8_blocks(in.k, 128), fp8_blocks(in.v, 128)};  // default tiles
          const double simple = compare_to_truth(to_float(attention_fp64(p, s8)), truth).rel_l2;
          const double e4m3 = compare_to_truth(run(p, in, params({})).o, truth).rel_l2;
          const double p16 = compare_to_truth(run(p, in, params({{"p_format", "fp16"}})).o, truth).rel_l2;
          INFO(fmt::format("{} {} d={} N={} causal={} gqa={}: rel_l2 e4m3 {:.3e} p_fp16 {:.3e} simple_fp8 {:.3e}", gen,
                           to_string(phase), d, n, causal, gqa, e4m3, p16, simple));
          if (gen == "normal" || n < 257) CHECK(e4m3 <= kFp8 * simple);
          CHECK(p16 <= kP16 * simple + kU16);
          if (n >= 257) {
            const double sharp = compare_to_truth(simple_fp8p(p, s8), truth).rel_l2;
            INFO(fmt::format("simple_fp8p {:.3e}", sharp));
            CHECK(e4m3 <= kOnline * sharp + kU16);
            worst_online = std::max(worst_online, e4m3 / sharp);
          }
          worst = std::max(worst, e4m3 / simple);
          worst16 = std::max(worst16, p16 / simple);
          e4m3_sum += e4m3, fp16_sum += p16;
        }
  WARN(fmt::format("flash3_fp8 {} {}: worst rel_l2 ratio e4m3/simple_fp8 {:.2f}, e4m3/simple_fp8p {:.2f}, "
                   "p_fp16/simple_fp8 {:.3f}",
                   gen, to_string(phase), worst, worst_online, worst16));
}

TEST_CASE("flash3_fp8 within stated factors of E4M3 quantize-then-FP64, prefill and decode sweeps",
          "[variants][flash3_fp8]") {
  for (Phase phase : {Phase::prefill, Phase::decode}) {
    double e4m3 = 0, p16 = 0;
    check_sweep(phase, "normal", e4m3, p16);
    check_sweep(phase, "llm_like", e4m3, p16);
    // P̃ in FP16 removes exactly one error source (P's E4M3 rounding, ≈ V's share of the error) and
    // adds nothing comparable, so on average over a sweep it must be more accurate. Decode with
    // N = 1 … 1024 keys included: one row sees up to 1024 keys.
    INFO(fmt::format("{}: mean rel_l2 e4m3 {:.3e} p_fp16 {:.3e}", to_string(phase), e4m3 / 120, p16 / 120));
    CHECK(p16 < e4m3);
  }
}

// ---------------------------------------------------------------------------------------------------
// Bit-exactness of the V path, the tile loop and the masking. Every key row is the same vector, so every
// visible score of a row is the same FP32 number: m is that score from the first tile on, P̃ = e⁰ = 1
// exactly (E4M3 and FP16 keep 1), the rescale factor is e⁰ = 1, and ℓ counts the visible keys. The values
// have |v| ∈ [1, 2) with the block max just under 2, so every |v/s_V| lies in [224, 448]: E4M3 numbers
// that are multiples of 16, whose sums over ≤ 256 keys are integers below 2²⁴ — exact in any order.
// So the output is, bit for bit,
//   O = FP16( (…((Σ₀ᵥ·s_V₀) + Σ₁ᵥ·s_V₁) + …) / ℓ )   with Σⱼᵥ = Σ over tile j's visible keys of round_fp8(v/s_Vⱼ).
struct Exact {
  Problem p;
  QKV in;
};

Exact same_keys(Phase phase, bool causal) {
  Exact e;
  Problem& p = e.p;
  p.batch = 1, p.q_heads = 2, p.kv_heads = 1, p.head_dim = 32, p.kv_len = 300, p.causal = causal, p.phase = phase;
  p.q_len = phase == Phase::decode ? 1 : 5;
  e.in = inputs(p, "normal", 13);
  // One nonzero channel of Q: each score is one exact product of two E4M3 numbers, the same FP32 value
  // in every summation order (so every key of a row gets the identical score, whatever the GEMM does).
  for (int64_t h = 0; h < p.q_heads; ++h) e.in.q.head(0, h).rightCols(p.head_dim - 1).setZero();
  auto K = e.in.k.head(0, 0);
  for (int64_t r = 1; r < p.kv_len; ++r) K.row(r) = K.row(0);
  auto V = e.in.v.head(0, 0);
  for (int64_t i = 0; i < V.size(); ++i) {
    float& v = V.data()[i];
    v = std::copysign(1.0f + std::min(std::abs(v), 0.99f), v);
  }
  return e;
}

TEST_CASE("flash3_fp8: uniform attention is the exact block-scaled E4M3 mean of V", "[variants][flash3_fp8]") {
  for (Phase phase : {Phase::prefill, Phase::decode})
    for (bool causal : {false, true})
      for (const char* pf : {"e4m3", "fp16"}) {
        const Exact e = same_keys(phase, causal);
        const Problem& p = e.p;
        const int64_t Bc = 128, d = p.head_dim;
        const Tensor::ConstMap V = e.in.v.head(0, 0);
        const Tensor o = run(p, e.in, params({{"p_format", pf}})).o;
        int64_t differ = 0;
        for (int64_t r = 0; r < p.q_len; ++r) {
          const int64_t vis = p.visible_keys(r);
          for (int64_t c = 0; c < d; ++c) {
            float G = 0;
            for (int64_t col0 = 0; col0 < vis; col0 += Bc) {
              const float s_v = block_scale(V, col0, std::min(Bc, p.kv_len - col0));
              float sum = 0;
              for (int64_t j = col0; j < std::min(col0 + Bc, vis); ++j)
                sum += formats::round_fp8(V(j, c) / s_v, formats::Fp8::e4m3);
              G = G + sum * s_v;
            }
            const float expected = formats::round_fp16(G / float(vis));
            for (int64_t h = 0; h < 2; ++h) differ += o.at(0, h, r, c) != expected;
          }
        }
        INFO(fmt::format("{} causal={} p_format={}", to_string(phase), causal, pf));
        CHECK(differ == 0);
      }
}

TEST_CASE("flash3_fp8 rejects out-of-range parameters and non-finite input", "[variants][flash3_fp8]") {
  const VariantSpec v = variants::flash3_fp8();
  const auto err = [&](const nlohmann::json& given) {
    return test::input_error([&] { ParamValues::parse(v.params, given, "variants[1]"); });
  };
  CHECK(test::starts(err({{"block_c", 512}}), "variants[1].block_c"));
  CHECK(test::starts(err({{"block_c", 257}}), "variants[1].block_c"));
  CHECK(test::starts(err({{"block_r", 0}}), "variants[1].block_r"));
  CHECK(test::starts(err({{"p_format", "e5m2"}}), "variants[1].p_format"));
  CHECK(test::starts(err({{"p_format", 8}}), "variants[1].p_format"));
  CHECK(err({{"block_c", 224}, {"p_format", "fp16"}}).empty());  // FA3's tuned FP8 tile at d ≤ 128
  CHECK(v.supports(Phase::prefill));
  CHECK(v.supports(Phase::decode));
  Problem p = problem_for(64, 20, false, false, Phase::prefill);
  QKV in = inputs(p, "normal", 3);
  in.v.at(0, 1, 2, 3) = std::numeric_limits<float>::infinity();
  CHECK(test::starts(test::input_error([&] { run(p, in, params({})); }), "flash3_fp8.v"));
}

TEST_CASE("flash3_fp8 probes: documented names, shapes and values", "[variants][flash3_fp8]") {
  Problem p = problem_for(64, 300, true, true, Phase::prefill);  // B 2, H_q 4, H_kv 1
  p.q_len = 200;                                                  // ragged: a chunk after 100 cached keys
  const QKV in = inputs(p, "llm_like", 23);
  const ReferenceOutput out = run(p, in, params({}), ProbeRequest{0, 2, 1});
  const Probes& pr = out.probes;
  CHECK(pr.at("scales.q").shape == std::vector<int64_t>{2, 4, 2});  // ⌈200/128⌉
  CHECK(pr.at("scales.k").shape == std::vector<int64_t>{2, 1, 3});  // ⌈300/128⌉
  CHECK(pr.at("scales.v").shape == std::vector<int64_t>{2, 1, 3});
  for (const char* name : {"channels.k.min", "channels.k.max", "channels.v.min", "channels.v.max"})
    CHECK(pr.at(name).shape == std::vector<int64_t>{2, 1, 64});
  CHECK(pr.at("clamped").labels == std::vector<std::string>{"q", "k", "v", "p"});
  CHECK(pr.at("hbm_bytes").labels == std::vector<std::string>{"q", "k", "v", "o", "lse", "scales"});
  CHECK(pr.at("lse").shape == std::vector<int64_t>{2, 4, 200});
  // Scale values: max|block|/448 of the block (the last one short: rows 256–299).
  CHECK(pr.at("scales.q").values[(1 * 4 + 3) * 2 + 1] == double(block_scale(in.q.head(1, 3), 128, 72)));
  CHECK(pr.at("scales.k").values[3 + 2] == double(block_scale(in.k.head(1, 0), 256, 44)));
  CHECK(pr.at("scales.v").values[0] == double(block_scale(in.v.head(0, 0), 0, 128)));
  for (double c : pr.at("clamped").values) CHECK(c == 0.0);  // absmax scales never saturate
  // Trace of row block 1 (rows 128–199, whose last row sees all 300 keys): 3 tiles.
  CHECK(pr.at("trace.kv_tile").shape == std::vector<int64_t>{3});
  CHECK(pr.at("trace.m").shape == std::vector<int64_t>{3, 72});
  // HBM: FP8 Q once, O in FP16; K and V as often as flash2 reads them with the same tiles, 1 byte instead
  // of 2; scales: s_Q per row block and head, s_K and s_V per tile loaded.
  const VariantSpec f2 = variants::flash2();
  ParamValues f2p = ParamValues::defaults(f2.params);
  f2p.set(f2.params, "block_c", 128, "flash2");
  const ReferenceOutput o2 = f2.reference(p, in, f2p, {});
  const std::vector<double>& hb = pr.at("hbm_bytes").values;
  const std::vector<double>& hb2 = o2.probes.at("hbm_bytes").values;
  CHECK(hb[0] == 2.0 * 4 * 200 * 64);
  CHECK(hb[1] == hb2[1] / 2);
  CHECK(hb[2] == hb2[2] / 2);
  CHECK(hb[3] == hb2[3]);
  const double tiles = pr.at("kv_tiles_loaded").values[0];
  CHECK(tiles == o2.probes.at("kv_tiles_loaded").values[0]);
  CHECK(hb[5] == 4.0 * (2 * 4 * 2 + 2 * tiles));
  // The cache: E4M3 K and V, FP32 s_K and s_V per block of 128 keys.
  CHECK(out.kv_cache_bytes == 2 * (2 * 300 * 64) + 2 * 2 * 3 * 4);
  // P's E4M3 underflow (visible P̃ ≤ 2⁻¹⁰ → 0) is counted among the visible weights.
  const std::vector<double>& uf = pr.at("underflow").values;
  CHECK(uf[3] > 0);
  CHECK(uf[3] < uf[4]);
}

TEST_CASE("flash3_fp8 against int_flash on the paper's normal data (N = 1024, d = 128)", "[variants][flash3_fp8]") {
  // INT-FlashAttention (Table 1) reports FlashAttention-FP8 with tensor-level scales at 7.5% MRE and
  // full INT8 at 4.05% on N(0, 1) data. With per-block FP8 scales the FP8 path is still the less
  // accurate one: E4M3 keeps 3 mantissa bits (≤ 2⁻⁴ relative per element) where INT8 with per-token
  // scales keeps ≈ 7 bits for the large entries of each token. Asserted: flash3_fp8's rel_l2 exceeds
  // int_flash's (full INT8).
  Problem p = problem_for(128, 1024, false, false, Phase::prefill);
  p.batch = 1;
  const QKV in = inputs(p, "normal", 77);
  const TensorF64 truth = attention_fp64(p, in);
  const Metrics f8 = compare_to_truth(run(p, in, params({})).o, truth);
  const VariantSpec vi = variants::int_flash();
  const Metrics i8 = compare_to_truth(vi.reference(p, in, ParamValues::defaults(vi.params), {}).o, truth);
  WARN(fmt::format("normal N=1024 d=128: flash3_fp8 rel_l2 {:.2f}% MRE {:.2f}%; int_flash rel_l2 {:.2f}% MRE {:.2f}%",
                   100 * f8.rel_l2, 100 * f8.mre, 100 * i8.rel_l2, 100 * i8.mre));
  CHECK(f8.rel_l2 > i8.rel_l2);
  CHECK(f8.mre > i8.mre);
}

}  // namespace
}  // namespace attnlab
