// FireQ §3.1.2: CAS (Def. 3.1) and PTS (Def. 3.2) on weight matrices whose answers are known, the
// equivalence of Eq. 7, and the underflow-risk fraction of App. E.3 before and after CAS + PTS.
#include "core/error.h"
#include "core/fireq/linear_scaling.h"
#include "tests/catch.h"
#include "tests/support/compare.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <vector>

namespace attnlab::fireq {
namespace ATTNLAB_FILE_LOCAL {

constexpr double kU = 0x1p-24;                // FP32 unit roundoff
constexpr double kT = kUnderflowThreshold;    // 7·2⁻⁹

// (rows, cols) of N(0, 1) scaled per column by col_scale[c].
std::vector<float> gaussian(int64_t rows, int64_t cols, const std::vector<double>& col_scale, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z(0.0, 1.0);
  std::vector<float> w(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) w[r * cols + c] = static_cast<float>(z(rng) * col_scale[c]);
  return w;
}

std::vector<double> log_uniform(int64_t n, double lo_exp10, double hi_exp10, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> e(lo_exp10, hi_exp10);
  std::vector<double> v(static_cast<size_t>(n));
  for (double& x : v) x = std::pow(10.0, e(rng));
  return v;
}

TEST_CASE("CAS moves every input channel of W to the target absmean (Def. 3.1)", "[fireq]") {
  for (auto [out, in] : {std::pair<int64_t, int64_t>{7, 64}, {33, 200}, {128, 96}}) {
    INFO("out " << out << ", in " << in);
    std::vector<double> col = log_uniform(in, -3.0, 1.0, uint64_t(out * 1000 + in));
    col[3] = 0.0;  // an all-zero input channel
    std::vector<float> w = gaussian(out, in, col, 7);
    const double target = cas_default_target(w.data(), out, in);
    const std::vector<float> lambda = cas_factors(w.data(), out, in, target);
    CHECK(lambda[3] == 1.0f);  // zero column: λ = 1 (header's choice)
    cas_scale_weights(w.data(), out, in, lambda);
    for (int64_t i = 0; i < in; ++i) {
      if (i == 3) continue;
      double absmean = 0.0;
      for (int64_t o = 0; o < out; ++o) absmean += std::abs(double(w[o * in + i])) / double(out);
      // λ is rounded to float once (u) and each product ω·λ once (u): ≤ 2u + O(u²); 4u leaves margin.
      INFO("channel " << i);
      CHECK(std::abs(absmean - target) <= 4 * kU * target);
    }
  }
}

TEST_CASE("CAS keeps X·Wᵀ: (X·Λ⁻¹)·(W·Λ)ᵀ = X·Wᵀ (Eq. 7)", "[fireq]") {
  const int64_t tokens = 19, out = 40, in = 96;
  const std::vector<float> x = gaussian(tokens, in, log_uniform(in, -1.0, 1.0, 3), 11);
  const std::vector<float> w = gaussian(out, in, log_uniform(in, -3.0, 0.0, 4), 12);
  const std::vector<float> lambda = cas_factors(w.data(), out, in, 0.02);
  std::vector<float> xs = x, ws = w;
  cas_scale_activations(xs.data(), tokens, in, lambda);
  cas_scale_weights(ws.data(), out, in, lambda);

  TensorF64 ref(Shape4{1, 1, tokens, out});
  Tensor got(Shape4{1, 1, tokens, out});
  std::vector<double> atol(static_cast<size_t>(tokens * out));
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t o = 0; o < out; ++o) {
      double y = 0.0, ys = 0.0, mag = 0.0;
      for (int64_t i = 0; i < in; ++i) {
        y += double(x[t * in + i]) * w[o * in + i];
        ys += double(xs[t * in + i]) * ws[o * in + i];
        mag += std::abs(double(x[t * in + i]) * w[o * in + i]);
      }
      ref.at(0, 0, t, o) = y;
      got.at(0, 0, t, o) = static_cast<float>(ys);
      // Each term carries two float roundings (x/λ and ω·λ; the same λ cancels exactly): ≤ (2u + u²)·|x·ω|.
      // The sums run in double (d·2⁻⁵³, negligible); the result's final float rounding is rtol = u.
      atol[t * out + o] = 2.5 * kU * mag;
    }
  CHECK_CLOSE(ref, got, atol, kU);
}

TEST_CASE("the underflow score is Eq. 8: Σ max(0, 7·2⁻⁹ − 2ⁿ|ω|)", "[fireq]") {
  const std::vector<float> w = {0.0f, float(kT / 2), float(-kT), float(2 * kT), float(-kT / 4), 1.0f};
  CHECK(underflow_score(w.data(), 2, 3) == kT + kT / 2 + 0.75 * kT);
  CHECK(underflow_score(w.data(), 2, 3, 1) == kT + 0.5 * kT);
  CHECK(underflow_score(w.data(), 2, 3, 2) == kT);  // only the zero is left: it never moves
  CHECK(underflow_score(w.data(), 2, 3, 30) == kT);
  CHECK(underflow_score(w.data(), 2, 3, -1) == kT + 0.75 * kT + 0.5 * kT + 0.875 * kT);
}

TEST_CASE("PTS: weights below the threshold by a known factor get the smallest n that lifts them", "[fireq]") {
  // Every |ω| in [2⁻ᵏ·t, 1.9·2⁻ᵏ·t] with the minimum exactly 2⁻ᵏ·t, plus zeros: condition 1 first holds at
  // n = k, far below the overflow band (2ᵏ·max|ω| < 2t ≪ 224).
  const int64_t out = 16, in = 256, group = 128;
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> u(1.0, 1.9);
  for (int k : {0, 1, 3, 7, 12, 20}) {
    INFO("k = " << k);
    std::vector<float> w(static_cast<size_t>(out * in));
    for (size_t i = 0; i < w.size(); ++i)
      w[i] = static_cast<float>((i % 2 ? -1.0 : 1.0) * std::ldexp(u(rng) * kT, -k));
    w[17] = static_cast<float>(std::ldexp(kT, -k));  // the smallest non-zero |ω|, exactly 2⁻ᵏ·t
    w[40] = 0.0f;
    const int n = pts_exponent(w.data(), out, in);
    CHECK(n == k);
    for (int i = 1; i <= 20; ++i) CHECK(underflow_score(w.data(), out, in, n + i) == underflow_score(w.data(), out, in, n));
    if (n > 0) CHECK(underflow_score(w.data(), out, in, n - 1) > underflow_score(w.data(), out, in, n));
    double max_abs = 0.0;
    for (float v : w) max_abs = std::max(max_abs, std::abs(double(v)));
    CHECK(std::ldexp(max_abs, n) < kOverflowThreshold);
    const double before = underflow_fraction(w.data(), out, in, group);
    pts_scale(w.data(), out * in, n);
    const double after = underflow_fraction(w.data(), out, in, group);
    CHECK(before == (k == 0 ? 0.0 : 1.0));
    CHECK(after == 0.0);
  }
}

TEST_CASE("PTS stops where the largest element enters [224, 448) (Eq. 9, overflow)", "[fireq]") {
  // Tiny elements (10⁻⁷) would need n = 18 for condition 1; the large one reaches the band earlier.
  for (double m : {0.9, 100.0, 223.9, 224.0, 300.0, 447.9}) {
    INFO("max |ω| = " << m);
    std::vector<float> w(64 * 128, 1e-7f);
    for (size_t i = 0; i < w.size(); i += 3) w[i] = -1e-7f;
    w[77] = static_cast<float>(-m);
    const double mf = std::abs(double(w[77]));
    const int n = pts_exponent(w.data(), 64, 128);
    CHECK(std::ldexp(mf, n) >= 224.0);
    CHECK(std::ldexp(mf, n) < 448.0);
    CHECK(std::ldexp(mf, n + 1) >= 448.0);  // one more doubling would overflow E4M3
    CHECK(n < 18);
  }
  // Condition 1 first: the smallest element 10⁻³ is lifted at n = 4 (2⁴·10⁻³ ≥ 7·2⁻⁹ > 2³·10⁻³) while the
  // largest, 10⁻², would reach the band only at n = 15.
  std::vector<float> w(8 * 32, 5e-3f);
  w[0] = 1e-3f, w[1] = 1e-2f;
  CHECK(pts_exponent(w.data(), 8, 32) == 4);
}

TEST_CASE("PTS edge cases: zeros, the threshold itself, weights beyond E4M3", "[fireq]") {
  std::vector<float> zeros(4 * 8, 0.0f);
  CHECK(pts_exponent(zeros.data(), 4, 8) == 0);  // S(W·2ⁿ) is constant
  std::vector<float> at(4 * 8, static_cast<float>(kT));
  CHECK(pts_exponent(at.data(), 4, 8) == 0);  // 7·2⁻⁹ itself is not below the threshold
  at[5] = std::nextafter(at[5], 0.0f);
  CHECK(pts_exponent(at.data(), 4, 8) == 1);
  std::vector<float> big(4 * 8, 1e-6f);
  big[3] = 448.0f;
  CHECK(pts_exponent(big.data(), 4, 8) == 0);  // already at the E4M3 maximum: never scale up
  big[3] = 1000.0f;
  CHECK(pts_exponent(big.data(), 4, 8) == 0);
}

TEST_CASE("underflow fraction counts groups of g along `in` whose max is below 7·2⁻⁹ (Lemma B.1)", "[fireq]") {
  const float lo = static_cast<float>(kT / 2), at = static_cast<float>(kT);
  // Row 0: group 0 at risk, group 1 not (its max equals the threshold). Row 1: both at risk.
  const std::vector<float> w = {lo, -lo, 0, lo, lo, -at, 0, 0, /**/ 0, 0, lo, 0, -lo, lo, lo, lo};
  CHECK(underflow_fraction(w.data(), 2, 8, 4) == 0.75);
  CHECK(underflow_fraction(w.data(), 2, 8, 8) == 0.5);
  CHECK(underflow_fraction(w.data(), 2, 8, 1) == 15.0 / 16.0);
}

TEST_CASE("CAS and PTS lower the fraction of underflow-risk groups (App. E.3)", "[fireq]") {
  // A weight shaped like an LLM projection: N(0, 0.02) columns, output rows whose magnitude varies over a
  // decade, two groups' worth of nearly dead input channels [256, 512) (std 10⁻⁵), and one outlier weight
  // of 40 that stops PTS early through condition 2 (n = 3: 40·2³ = 320 ∈ [224, 448)).
  //   PTS alone lifts the small rows (×8) but not the dead channels;
  //   CAS equalizes the columns (the dead ones up, the outlier's column down), so PTS can then go further.
  const int64_t out = 256, in = 1024, group = 128;
  std::vector<double> col(static_cast<size_t>(in), 0.02);
  for (int64_t i = 256; i < 512; ++i) col[i] = 1e-5;
  std::vector<float> w = gaussian(out, in, col, 21);
  const std::vector<double> row = log_uniform(out, -1.0, 0.0, 22);
  for (int64_t o = 0; o < out; ++o)
    for (int64_t i = 0; i < in; ++i) w[o * in + i] = static_cast<float>(w[o * in + i] * row[o]);
  w[5 * in + 7] = 40.0f;

  const double before = underflow_fraction(w.data(), out, in, group);
  std::vector<float> pts_only = w;
  const int n_pts = pts_exponent(pts_only.data(), out, in);
  pts_scale(pts_only.data(), out * in, n_pts);
  const double after_pts = underflow_fraction(pts_only.data(), out, in, group);
  std::vector<float> both = w;
  cas_scale_weights(both.data(), out, in, cas_factors(w.data(), out, in, cas_default_target(w.data(), out, in)));
  const double after_cas = underflow_fraction(both.data(), out, in, group);
  const int n_both = pts_exponent(both.data(), out, in);
  pts_scale(both.data(), out * in, n_both);
  const double after_both = underflow_fraction(both.data(), out, in, group);
  std::printf("[fireq] underflow-risk groups (g = %lld): before %.4f, CAS %.4f, PTS (n = %d) %.4f, "
              "CAS+PTS (n = %d) %.4f\n",
              static_cast<long long>(group), before, after_cas, n_pts, after_pts, n_both, after_both);
  CHECK(n_pts == 3);
  CHECK(after_pts < before);
  CHECK(after_pts >= 0.25);  // the dead channels: 2 of 8 groups per row, out of PTS's reach
  CHECK(after_both < after_pts);
}

TEST_CASE("linear scaling rejects bad input with InputError", "[fireq]") {
  const std::vector<float> w(4 * 8, 0.5f);
  const std::vector<float> nan_w = {1, 2, std::numeric_limits<float>::quiet_NaN(), 4};
  const std::vector<float> inf_w = {1, 2, std::numeric_limits<float>::infinity(), 4};
  CHECK_THROWS_AS(cas_factors(w.data(), 4, 8, 0.0), InputError);
  CHECK_THROWS_AS(cas_factors(w.data(), 4, 8, -1.0), InputError);
  CHECK_THROWS_AS(cas_factors(w.data(), 4, 8, std::nan("")), InputError);
  CHECK_THROWS_AS(cas_factors(w.data(), 0, 8, 1.0), InputError);
  CHECK_THROWS_AS(cas_factors(nan_w.data(), 2, 2, 1.0), InputError);
  CHECK_THROWS_AS(pts_exponent(inf_w.data(), 2, 2), InputError);
  CHECK_THROWS_AS(pts_exponent(w.data(), 4, 0), InputError);
  CHECK_THROWS_AS(underflow_score(nan_w.data(), 1, 4), InputError);
  CHECK_THROWS_AS(underflow_fraction(w.data(), 4, 8, 3), InputError);  // 3 does not divide 8
  CHECK_THROWS_AS(underflow_fraction(w.data(), 4, 8, 0), InputError);
  CHECK_THROWS_AS(underflow_fraction(inf_w.data(), 1, 4, 2), InputError);
  std::vector<float> m = w;
  CHECK_THROWS_AS(cas_scale_weights(m.data(), 4, 8, std::vector<float>(7, 1.0f)), InputError);
  CHECK_THROWS_AS(cas_scale_weights(m.data(), 4, 8, std::vector<float>(8, 0.0f)), InputError);
  CHECK_THROWS_AS(cas_scale_activations(m.data(), 4, 8, std::vector<float>(8, -1.0f)), InputError);
}

}  // namespace
}  // namespace attnlab::fireq
