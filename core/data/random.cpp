#include "core/data/random.h"

#include <cmath>
#include <limits>

// No fused multiply-adds in this file (see random.h): GCC keeps contraction off under -std=c++20
// (no GNU extensions); Clang contracts by default, so say it explicitly.
#if defined(__clang__)
#pragma clang fp contract(off)
#endif

namespace attnlab::data {

namespace {

constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ull;  // 2^64 / φ, SplitMix64's increment

uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

// ln 2 split so that k · kLn2Hi is exact for |k| < 2^20 (fdlibm's constants: the high part has its
// low 32 bits zero).
constexpr double kLn2Hi = 6.93147180369123816490e-01;
constexpr double kLn2Lo = 1.90821492927058770002e-10;
constexpr double kInvLn2 = 1.44269504088896338700e+00;
constexpr double kSqrtHalf = 0.70710678118654752440;

// π/2 in three 33-bit parts and a tail (fdlibm's pio2_1, pio2_2, pio2_3, pio2_3t): n · part is exact
// for n < 2^20.
constexpr double kPio2_1 = 1.57079632673412561417e+00;
constexpr double kPio2_2 = 6.07710050630396597660e-11;
constexpr double kPio2_3 = 2.02226624871116645580e-21;
constexpr double kPio2_3t = 8.47842766036889956997e-32;
constexpr double kTwoOverPi = 6.36619772367581382433e-01;

// 1 / n! as a double (each step a correctly rounded division, folded at compile time).
constexpr double inv_factorial(int n) {
  double r = 1.0;
  for (int i = 2; i <= n; ++i) r = r / double(i);
  return r;
}

// sin and cos of r, |r| ≤ π/4 + a little: Taylor series to r^17 and r^16 (the next terms are below
// 1e-19), Horner form.
double sin_kernel(double r) {
  const double r2 = r * r;
  double p = inv_factorial(17);
  p = p * r2 - inv_factorial(15);
  p = p * r2 + inv_factorial(13);
  p = p * r2 - inv_factorial(11);
  p = p * r2 + inv_factorial(9);
  p = p * r2 - inv_factorial(7);
  p = p * r2 + inv_factorial(5);
  p = p * r2 - inv_factorial(3);
  return r + r * r2 * p;
}
double cos_kernel(double r) {
  const double r2 = r * r;
  double p = inv_factorial(16);
  p = p * r2 - inv_factorial(14);
  p = p * r2 + inv_factorial(12);
  p = p * r2 - inv_factorial(10);
  p = p * r2 + inv_factorial(8);
  p = p * r2 - inv_factorial(6);
  p = p * r2 + inv_factorial(4);
  // 1 − r²/2 + r⁴·p: the largest correction last, added to the exact 1.
  const double half_r2 = 0.5 * r2;
  return 1.0 - (half_r2 - r2 * r2 * p);
}

}  // namespace

uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t splitmix64(uint64_t& state) {
  state += kGolden;
  return mix64(state);
}

uint64_t stream_key(uint64_t seed, uint64_t tensor, uint64_t batch, uint64_t head) {
  // A chain of bijective mixes with a different salt per position, so (1, 2, ·) and (2, 1, ·) differ.
  uint64_t h = mix64(seed ^ 0x6A09E667F3BCC909ull);
  h = mix64(h ^ mix64(tensor + 1 * kGolden));
  h = mix64(h ^ mix64(batch + 2 * kGolden));
  h = mix64(h ^ mix64(head + 3 * kGolden));
  return h;
}

Rng::Rng(uint64_t key) {
  uint64_t state = key;
  for (uint64_t& s : s_) s = splitmix64(state);
  // SplitMix64 is a bijection of its counter, so four consecutive outputs are never all zero.
}

uint64_t Rng::next_u64() {
  const uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

uint64_t Rng::below(uint64_t n) {
  // Reject the lowest (2^64 mod n) values so every residue is equally likely.
  const uint64_t threshold = (0 - n) % n;
  for (;;) {
    const uint64_t x = next_u64();
    if (x >= threshold) return x % n;
  }
}

double Rng::uniform() { return double(next_u64() >> 11) * 0x1p-53; }

double Rng::uniform_open0() { return double((next_u64() >> 11) + 1) * 0x1p-53; }

double Rng::uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }

double Rng::normal() {
  if (has_spare_) {
    has_spare_ = false;
    return spare_;
  }
  for (;;) {
    const double u = 2.0 * uniform() - 1.0;  // [-1, 1), exact
    const double v = 2.0 * uniform() - 1.0;
    const double s = u * u + v * v;
    if (s >= 1.0 || s == 0.0) continue;
    const double f = std::sqrt(-2.0 * portable_log(s) / s);
    spare_ = v * f;
    has_spare_ = true;
    return u * f;
  }
}

double Rng::gamma(double shape) {
  if (shape < 1.0) {
    const double g = gamma(shape + 1.0);
    return g * portable_exp(portable_log(uniform_open0()) / shape);
  }
  const double d = shape - 1.0 / 3.0;
  const double c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    double x = 0.0, v = 0.0;
    do {
      x = normal();
      v = 1.0 + c * x;
    } while (v <= 0.0);
    v = v * v * v;
    const double u = uniform_open0();
    const double x2 = x * x;
    if (u < 1.0 - 0.0331 * (x2 * x2)) return d * v;  // the cheap squeeze
    if (portable_log(u) < 0.5 * x2 + d * (1.0 - v + portable_log(v))) return d * v;
  }
}

double Rng::student_t(double nu) {
  const double z = normal();
  for (;;) {
    const double chi2 = 2.0 * gamma(0.5 * nu);
    if (chi2 > 0.0) return z / std::sqrt(chi2 / nu);
  }
}

double portable_log(double x) {
  if (std::isnan(x) || x < 0.0) return std::numeric_limits<double>::quiet_NaN();
  if (x == 0.0) return -std::numeric_limits<double>::infinity();
  if (std::isinf(x)) return x;
  int e = 0;
  double m = std::frexp(x, &e);  // x = m · 2^e, m in [0.5, 1), exact (subnormals included)
  if (m < kSqrtHalf) {
    m = m * 2.0;  // m in [√½, √2)
    e -= 1;
  }
  const double f = m - 1.0;  // exact
  const double s = f / (2.0 + f);  // log m = 2·atanh(s), |s| ≤ 0.1716
  const double s2 = s * s;
  // 2·atanh(s) = 2s + 2s·(s²/3 + s⁴/5 + … + s²²/23); the next term is below 1e-18 relative.
  double p = 1.0 / 23.0;
  for (int k = 21; k >= 3; k -= 2) p = p * s2 + 1.0 / double(k);
  const double two_s = 2.0 * s;
  const double log_m = two_s + two_s * (s2 * p);
  const double de = double(e);
  return de * kLn2Hi + (de * kLn2Lo + log_m);
}

double portable_exp(double x) {
  if (std::isnan(x)) return x;
  if (x > 709.782712893384) return std::numeric_limits<double>::infinity();
  if (x < -745.2) return 0.0;
  const double kd = std::floor(x * kInvLn2 + 0.5);
  const double r = (x - kd * kLn2Hi) - kd * kLn2Lo;  // |r| ≤ ~0.347
  // e^r by its Taylor series to r^13 (the next term is below 4e-18).
  double p = inv_factorial(13);
  for (int n = 12; n >= 1; --n) p = p * r + inv_factorial(n);
  p = p * r + 1.0;
  return std::ldexp(p, int(kd));
}

void portable_sincos(double x, double& sin_x, double& cos_x) {
  if (!std::isfinite(x)) {
    sin_x = cos_x = std::numeric_limits<double>::quiet_NaN();
    return;
  }
  const double ax = std::fabs(x);
  const double n = std::floor(ax * kTwoOverPi + 0.5);  // nearest multiple of π/2
  double r = ax - n * kPio2_1;
  r = r - n * kPio2_2;
  r = r - n * kPio2_3;
  r = r - n * kPio2_3t;
  const double s = sin_kernel(r), c = cos_kernel(r);
  switch (int(std::fmod(n, 4.0))) {  // the quadrant; fmod is exact
    case 0: sin_x = s; cos_x = c; break;
    case 1: sin_x = c; cos_x = -s; break;
    case 2: sin_x = -s; cos_x = -c; break;
    default: sin_x = -c; cos_x = s; break;
  }
  if (x < 0.0) sin_x = -sin_x;
}

}  // namespace attnlab::data
