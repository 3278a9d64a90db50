// FireQ §3.2.2's FP16 softmax step (core/fireq/softmax_fp16.h) on scores chosen so that every value is known
// exactly: powers of two, FP16's subnormals, −∞ and +∞, and the roundings the header names (S₂'s factor order,
// S₂ − m₂ and P̃ each rounded once to FP16).
#include "core/fireq/softmax_fp16.h"
#include "core/formats/half.h"
#include "tests/catch.h"

#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace attnlab {
namespace ATTNLAB_FILE_LOCAL {

constexpr float kInf = std::numeric_limits<float>::infinity();

RowMatrix<float> row_of(std::initializer_list<float> v) {
  RowMatrix<float> s(1, static_cast<int64_t>(v.size()));
  int64_t j = 0;
  for (float x : v) s(0, j++) = x;
  return s;
}

TEST_CASE("FP16 softmax: one tile of exact scores — m₂, P̃ = 2^(S₂ − m₂) and ℓ, masked columns 0", "[fireq]") {
  OnlineSoftmax st;
  st.reset(1, 2);
  st.G.setConstant(3.0f);
  RowMatrix<float> s = row_of({-1.0f, 0.0f, -2.0f, -20.0f, 5.0f});
  const int64_t vis[] = {4};  // the last column is masked: its 5 must neither set m₂ nor reach ℓ
  fireq::softmax_step_fp16(st, s, vis);
  CHECK(st.m[0] == 0.0f);
  // 2⁻²⁰ is an FP16 subnormal (16·2⁻²⁴): kept, and summed into ℓ.
  CHECK(s(0, 0) == 0.5f);
  CHECK(s(0, 1) == 1.0f);
  CHECK(s(0, 2) == 0.25f);
  CHECK(s(0, 3) == std::ldexp(1.0f, -20));
  CHECK(s(0, 4) == 0.0f);
  CHECK(st.l[0] == 1.75f + std::ldexp(1.0f, -20));
  CHECK(st.G(0, 0) == 0.0f);  // the first tile: s = 0 clears whatever G held (m₂_old = −∞)
}

TEST_CASE("FP16 softmax: a second tile rescales ℓ and G by s = 2^(m₂_old − m₂) in FP32", "[fireq]") {
  OnlineSoftmax st;
  st.reset(2, 1);
  RowMatrix<float> s(2, 2);
  s << 0.0f, -1.0f,  // row 0
      1.0f, 1.0f;    // row 1
  const int64_t all[] = {2, 2};
  fireq::softmax_step_fp16(st, s, all);
  CHECK(st.l[0] == 1.5f);
  CHECK(st.l[1] == 2.0f);
  st.G(0, 0) = 8.0f, st.G(1, 0) = 8.0f;
  s << 3.0f, 2.0f,  // row 0: m₂ 0 → 3, s = 2⁻³
      0.0f, 1.0f;   // row 1: m₂ stays 1, s = 1
  fireq::softmax_step_fp16(st, s, all);
  CHECK(st.m[0] == 3.0f);
  CHECK(st.l[0] == 1.5f / 8 + 1.5f);
  CHECK(st.G(0, 0) == 1.0f);
  CHECK(st.m[1] == 1.0f);
  CHECK(st.l[1] == 2.0f + 1.5f);
  CHECK(st.G(1, 0) == 8.0f);
  CHECK(s(1, 0) == 0.5f);
}

TEST_CASE("FP16 softmax: S₂ − m₂ and 2^(S₂ − m₂) are each rounded once to FP16", "[fireq]") {
  // 2^−½ = 0.70710678… lies between the FP16 values 1448/2048 = 0.70703125 and 1449/2048 = 0.70751953; the
  // nearer is 1448/2048. −1.75 is an exact difference: P̃ = fp16(2^−1.75).
  {
    OnlineSoftmax st;
    st.reset(1, 1);
    RowMatrix<float> s = row_of({-0.5f, 0.0f, 0.25f - 2.0f});
    const int64_t vis[] = {3};
    fireq::softmax_step_fp16(st, s, vis);
    CHECK(s(0, 0) == 1448.0f / 2048.0f);
    CHECK(s(0, 2) == formats::round_fp16_from_double(std::exp2(-1.75)));
  }
  // A difference FP16 must round: m₂ = 8 + 2⁻⁷ and S₂ = 2⁻⁸ − 2⁻¹⁹ (both FP16 values). S₂ − m₂ =
  // −8.00390816… lies just past the midpoint −8.00390625 of FP16's neighbours −8 and −8.0078125 (spacing 2⁻⁷
  // in [8, 16)), so it rounds to −8.0078125, and P̃ = fp16(2^−8.0078125) = 2037·2⁻¹⁹; the unrounded difference
  // would give fp16(2^−8.00390816…) = 2042·2⁻¹⁹ — 0.27% apart, five FP16 steps.
  {
    const float m2 = 8.0f + std::ldexp(1.0f, -7), s2 = std::ldexp(1.0f, -8) - std::ldexp(1.0f, -19);
    REQUIRE(formats::round_fp16(m2) == m2);
    REQUIRE(formats::round_fp16(s2) == s2);
    OnlineSoftmax st;
    st.reset(1, 1);
    RowMatrix<float> s = row_of({s2, m2});
    const int64_t vis[] = {2};
    fireq::softmax_step_fp16(st, s, vis);
    CHECK(s(0, 0) == 2037.0f * std::ldexp(1.0f, -19));
    CHECK(formats::round_fp16_from_double(std::exp2(double(s2) - double(m2))) == 2042.0f * std::ldexp(1.0f, -19));
  }
}

TEST_CASE("FP16 softmax: −∞ rows keep m₂ = −∞ and P̃ = 0; +∞ gives NaN; a row with nothing visible is untouched",
          "[fireq]") {
  OnlineSoftmax st;
  st.reset(3, 1);
  RowMatrix<float> s(3, 2);
  s << -kInf, -kInf,  // every visible score −∞ (overflowed below −65 504)
      kInf, 0.0f,     // an overflowed +∞
      1.0f, 2.0f;     // sees nothing in this tile
  const int64_t vis[] = {2, 2, 0};
  fireq::softmax_step_fp16(st, s, vis);
  CHECK(st.m[0] == -kInf);
  CHECK(s(0, 0) == 0.0f);
  CHECK(s(0, 1) == 0.0f);
  CHECK(st.l[0] == 0.0f);
  CHECK(std::isnan(st.l[1]));
  CHECK(st.m[2] == -kInf);
  CHECK(st.l[2] == 0.0f);
  CHECK(s(2, 0) == 0.0f);
  CHECK(s(2, 1) == 0.0f);
}

TEST_CASE("FP16 softmax: S₂ = fp16(fl(S·fl(g·c))) — the factors' order, then one rounding", "[fireq]") {
  // Random FP32 scores and factors: every output is the header's order of products rounded to FP16.
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> score(-3000.0f, 3000.0f), factor(1e-4f, 1e-2f);
  constexpr int64_t kRows = 64, kCols = 128;
  RowMatrix<float> s(kRows, kCols), raw;
  std::vector<float> g(kCols), c(kRows);
  for (float& x : g) x = factor(rng);
  for (float& x : c) x = fireq::fp16_row_factor(factor(rng) * 100, 0.125f, true);
  for (int64_t i = 0; i < s.size(); ++i) s.data()[i] = score(rng);
  raw = s;
  fireq::scores_to_fp16_log2(s, g.data(), c.data());
  for (int64_t r = 0; r < kRows; ++r)
    for (int64_t j = 0; j < kCols; ++j) REQUIRE(s(r, j) == formats::round_fp16(raw(r, j) * (g[j] * c[r])));
  // The other order, fl(fl(S·g)·c), differs from it in the FP32 product often but in the FP16 value only
  // about once in 10⁴ draws: find such a score and check the function takes the header's order there.
  float s0 = 0, g0 = 0, c0 = 0;
  for (int i = 0; i < 2000000 && s0 == 0; ++i) {
    const float a = score(rng), b = factor(rng), e = factor(rng) * 100;
    if (formats::round_fp16(a * (b * e)) != formats::round_fp16((a * b) * e)) s0 = a, g0 = b, c0 = e;
  }
  REQUIRE(s0 != 0);
  RowMatrix<float> one(1, 1);
  one(0, 0) = s0;
  fireq::scores_to_fp16_log2(one, &g0, &c0);
  CHECK(one(0, 0) == formats::round_fp16(s0 * (g0 * c0)));
  CHECK(one(0, 0) != formats::round_fp16((s0 * g0) * c0));
  // No per-column factor: fp16(fl(S·c)), c = fl(fl(β·τ)·log₂e).
  RowMatrix<float> t = raw;
  fireq::scores_to_fp16_log2(t, nullptr, c.data());
  CHECK(t(3, 5) == formats::round_fp16(raw(3, 5) * c[3]));
  CHECK(fireq::fp16_row_factor(0.5f, 0.125f, false) == (0.5f * 0.125f) * fireq::kLog2e);
  CHECK(fireq::fp16_row_factor(0.5f, 0.125f, true) == 0.5f * fireq::kLog2e);
}

TEST_CASE("FP16 softmax: the maxima back in natural units, m = fl(m₂·ln 2)", "[fireq]") {
  OnlineSoftmax st;
  st.reset(3, 1);
  st.m << 3.0f, -kInf, 0.0f;
  fireq::maxima_to_natural(st);
  CHECK(st.m[0] == 3.0f * fireq::kLn2);
  CHECK(st.m[1] == -kInf);
  CHECK(st.m[2] == 0.0f);
}

}  // namespace
}  // namespace attnlab
