// RoPE (core/rope.h), pairs (i, i + d/2): inverse, norm preservation, the relative-position property,
// agreement with a direct std::cos / std::sin evaluation of the formula, and argument checks.
#include "core/data/random.h"
#include "core/rope.h"
#include "tests/catch.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <vector>

namespace attnlab {
namespace ATTNLAB_FILE_LOCAL {

constexpr double kBase = 10000.0;

// (1, heads, tokens, d) filled with N(0, 1) from the project's own generator.
Tensor random_tensor(int64_t heads, int64_t tokens, int64_t d, uint64_t seed) {
  Tensor t(Shape4{1, heads, tokens, d});
  data::Rng rng(seed);
  for (float& x : t.values()) x = static_cast<float>(rng.normal());
  return t;
}

std::vector<int64_t> spread_positions(int64_t tokens, uint64_t seed) {
  // Positions up to 10^5 (long contexts: angles up to 10^5 rad in the fastest pair) and a few negative.
  data::Rng rng(seed);
  std::vector<int64_t> pos(static_cast<size_t>(tokens));
  for (auto& p : pos) p = static_cast<int64_t>(rng.below(100001)) - 50;
  return pos;
}

double pair_norm(const Tensor& t, int64_t h, int64_t n, int64_t i) {
  const int64_t half = t.shape().dim / 2;
  return std::hypot(double(t.at(0, h, n, i)), double(t.at(0, h, n, i + half)));
}

// One token's vector rotated to position `pos` and dotted, all in double from the float results.
double rotated_dot(const std::vector<float>& q, int64_t m, const std::vector<float>& k, int64_t n,
                   double base) {
  const int64_t d = static_cast<int64_t>(q.size());
  Tensor tq(Shape4{1, 1, 1, d}), tk(Shape4{1, 1, 1, d});
  std::copy(q.begin(), q.end(), tq.data());
  std::copy(k.begin(), k.end(), tk.data());
  apply_rope(tq, {m}, base);
  apply_rope(tk, {n}, base);
  double dot = 0.0;
  for (int64_t c = 0; c < d; ++c) dot += double(tq.data()[c]) * double(tk.data()[c]);
  return dot;
}

double norm(const std::vector<float>& x) {
  double s = 0.0;
  for (float v : x) s += double(v) * double(v);
  return std::sqrt(s);
}

TEST_CASE("rope: apply then inverse returns the input", "[data][rope]") {
  for (int64_t d : {8, 64, 128}) {
    const int64_t tokens = 97, heads = 3;
    const Tensor x = random_tensor(heads, tokens, d, 11 + uint64_t(d));
    const auto pos = spread_positions(tokens, 5);
    for (double base : {kBase, 500000.0}) {
      Tensor y = x;
      apply_rope(y, pos, base);
      apply_rope_inverse(y, pos, base);
      // Two float roundings of a rotated pair: each element is off by at most ~2·2^-24 of its pair's
      // norm; 1e-6 relative to the pair norm leaves room for the cos/sin rounding as well.
      double worst = 0.0;
      for (int64_t h = 0; h < heads; ++h)
        for (int64_t n = 0; n < tokens; ++n)
          for (int64_t c = 0; c < d; ++c) {
            const double scale = pair_norm(x, h, n, c % (d / 2));
            worst = std::max(worst, std::fabs(double(y.at(0, h, n, c)) - double(x.at(0, h, n, c))) / scale);
          }
      INFO("d = " << d << ", base = " << base);
      CHECK(worst <= 1e-6);
    }
  }
}

TEST_CASE("rope: position 0 is the identity and each pair's norm is preserved", "[data][rope]") {
  const int64_t d = 64, tokens = 50;
  const Tensor x = random_tensor(2, tokens, d, 3);
  Tensor zero = x;
  apply_rope(zero, std::vector<int64_t>(tokens, 0), kBase);
  CHECK(zero.values() == x.values());  // cos 0 = 1, sin 0 = 0 exactly

  Tensor y = x;
  apply_rope(y, spread_positions(tokens, 9), kBase);
  double worst = 0.0;
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t n = 0; n < tokens; ++n)
      for (int64_t i = 0; i < d / 2; ++i) {
        const double before = pair_norm(x, h, n, i), after = pair_norm(y, h, n, i);
        worst = std::max(worst, std::fabs(after - before) / before);
      }
  CHECK(worst <= 1e-6);  // one float rounding per element: ≤ ~1e-7 relative
}

TEST_CASE("rope: q·k after RoPE depends only on the position difference", "[data][rope]") {
  const int64_t d = 128;
  const Tensor t = random_tensor(1, 2, d, 21);
  const std::vector<float> q(t.data(), t.data() + d), k(t.data() + d, t.data() + 2 * d);
  const double qk_norm = norm(q) * norm(k);
  double plain = 0.0;
  for (int64_t c = 0; c < d; ++c) plain += double(q[c]) * double(k[c]);
  // Each rotated element carries one float rounding (≤ 2^-24 of its pair's norm), so a dot product is
  // off by ≤ ~2·√2·2^-24·|q||k| ≈ 1.7e-7·|q||k|; two of them differ by ≤ 3.4e-7·|q||k|. Tolerance:
  // 1e-6·|q||k|.
  const double tol = 1e-6 * qk_norm;
  for (double base : {kBase, 500000.0}) {
    for (int64_t gap : {0, 1, 17, 900}) {
      const double at0 = rotated_dot(q, gap, k, 0, base);
      for (int64_t shift : {1, 1000, 54321}) {
        INFO("base " << base << ", m − n = " << gap << ", shift " << shift);
        CHECK(std::fabs(rotated_dot(q, gap + shift, k, shift, base) - at0) <= tol);
      }
      if (gap == 0) CHECK(std::fabs(at0 - plain) <= tol);  // equal positions: the unrotated product
    }
  }
}

TEST_CASE("rope: matches the formula evaluated with std::cos and std::sin", "[data][rope]") {
  const int64_t d = 32, tokens = 40, half = d / 2;
  const Tensor x = random_tensor(1, tokens, d, 4);
  const auto pos = spread_positions(tokens, 8);
  Tensor y = x;
  apply_rope(y, pos, kBase);
  for (int64_t i = 0; i < half; ++i)
    CHECK(std::fabs(rope_frequency(i, d, kBase) - std::pow(kBase, -2.0 * double(i) / double(d))) <=
          1e-14 * std::pow(kBase, -2.0 * double(i) / double(d)));
  double worst = 0.0;
  for (int64_t n = 0; n < tokens; ++n)
    for (int64_t i = 0; i < half; ++i) {
      const double th = std::pow(kBase, -2.0 * double(i) / double(d)) * double(pos[n]);
      const double a = x.at(0, 0, n, i), b = x.at(0, 0, n, i + half);
      const double ri = a * std::cos(th) - b * std::sin(th), rj = b * std::cos(th) + a * std::sin(th);
      const double scale = std::hypot(a, b);
      worst = std::max(worst, std::fabs(ri - y.at(0, 0, n, i)) / scale);
      worst = std::max(worst, std::fabs(rj - y.at(0, 0, n, i + half)) / scale);
    }
  // Float storage (≤ 2^-24 ≈ 6e-8 of the pair norm) dominates; θ·p for p ≤ 1e5 adds < 1e-10.
  CHECK(worst <= 2e-7);
}

TEST_CASE("rope: bad arguments are rejected", "[data][rope]") {
  Tensor odd(Shape4{1, 1, 2, 7});
  CHECK_THROWS_AS(apply_rope(odd, {0, 1}, kBase), std::invalid_argument);
  Tensor t(Shape4{1, 1, 3, 8});
  CHECK_THROWS_AS(apply_rope(t, {0, 1}, kBase), std::invalid_argument);
  CHECK_THROWS_AS(apply_rope_inverse(t, {0, 1, 2}, 0.0), std::invalid_argument);
  CHECK_THROWS_AS(apply_rope(t, {0, 1, 2}, std::nan("")), std::invalid_argument);
  CHECK(rope_positions(3, 5) == std::vector<int64_t>{5, 6, 7});
}

}  // namespace
}  // namespace attnlab
