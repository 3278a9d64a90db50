// FireQ per-token INT4 (Eq. 1, b = 4) with FP32 and FP8 E4M3 scales: the round-trip bound per element,
// ties to even, and the edge cases (zero, tiny and huge tokens) the header defines.
#include "core/error.h"
#include "core/fireq/token_int4.h"
#include "core/formats/fp8.h"
#include "tests/catch.h"
#include "tests/support/compare.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace attnlab::fireq {
namespace ATTNLAB_FILE_LOCAL {

constexpr double kU = 0x1p-24;  // FP32 unit roundoff

// (tokens, d) of N(0, 1) with a per-token magnitude 10^U(lo, hi).
std::vector<float> tokens_with_magnitudes(int64_t tokens, int64_t d, double lo, double hi, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z(0.0, 1.0);
  std::uniform_real_distribution<double> e(lo, hi);
  std::vector<float> x(static_cast<size_t>(tokens * d));
  for (int64_t n = 0; n < tokens; ++n) {
    const double m = std::pow(10.0, e(rng));
    for (int64_t c = 0; c < d; ++c) x[n * d + c] = static_cast<float>(m * z(rng));
  }
  return x;
}

double row_absmax(const std::vector<float>& x, int64_t n, int64_t d) {
  double m = 0.0;
  for (int64_t c = 0; c < d; ++c) m = std::max(m, std::abs(double(x[n * d + c])));
  return m;
}

// Round trip through quantize/dequantize, checked against x with a per-element bound from bound(n, c, out).
template <class Bound>
void check_round_trip(const std::vector<float>& x, int64_t tokens, int64_t d, const TokenInt4& t, Bound bound) {
  Tensor out(Shape4{1, 1, tokens, d});
  dequantize_token_int4(t, out.data());
  TensorF64 ref(Shape4{1, 1, tokens, d});
  std::vector<double> atol(static_cast<size_t>(tokens * d));
  for (int64_t i = 0; i < tokens * d; ++i) {
    ref.data()[i] = x[i];
    atol[i] = bound(i / d, i, double(out.data()[i]));
  }
  CHECK_CLOSE(ref, out, atol, 0.0);
}

TEST_CASE("per-token INT4 with FP32 scales: |x − σ·x̂| ≤ σ/2 per element", "[fireq]") {
  for (int64_t d : {64, 96, 128})
    for (int64_t tokens : {1, 37, 200}) {
      INFO("tokens " << tokens << ", d " << d);
      const std::vector<float> x = tokens_with_magnitudes(tokens, d, -3.0, 3.0, uint64_t(tokens * 131 + d));
      const TokenInt4 t = quantize_token_int4(x.data(), tokens, d, ScaleFormat::fp32);
      CHECK(t.clamped == 0);
      CHECK(t.underflow_tokens == 0);
      for (int64_t n = 0; n < tokens; ++n) CHECK(t.scale[n] == static_cast<float>(row_absmax(x, n, d) / 7.0));
      for (int8_t q : t.q) CHECK((q >= -7 && q <= 7));
      // σ/2 from rounding x/σ to an integer; the quotient is formed in double (a tie can flip only within
      // 2⁻⁵³ relative, ≤ 2⁻⁵⁰·|x|), and σ·x̂ is rounded to float once (≤ u·|out|).
      check_round_trip(x, tokens, d, t, [&](int64_t n, int64_t i, double out) {
        return double(t.scale[n]) / 2 + kU * std::abs(out) + 0x1p-50 * std::abs(double(x[i]));
      });
    }
}

TEST_CASE("per-token INT4 with FP8 E4M3 scales: error bound through the scale's rounding", "[fireq]") {
  // Token magnitudes keep σ = max|x|/7 among the normal E4M3 values [2⁻⁶, 448], where rounding errs by at
  // most 2⁻⁴ relative: σ_s ≤ (1 + 2⁻⁴)·σ, so |x − σ_s·x̂| ≤ σ_s/2 ≤ (17/32)·σ, and |x|/σ_s < 7.5 never clamps.
  for (int64_t d : {64, 96, 128})
    for (int64_t tokens : {1, 37, 200}) {
      INFO("tokens " << tokens << ", d " << d);
      const std::vector<float> x = tokens_with_magnitudes(tokens, d, -0.5, 2.5, uint64_t(tokens * 17 + d));
      const TokenInt4 t = quantize_token_int4(x.data(), tokens, d, ScaleFormat::fp8_e4m3);
      CHECK(t.clamped == 0);
      CHECK(t.underflow_tokens == 0);
      CHECK(t.saturated_tokens == 0);
      std::vector<double> sigma(static_cast<size_t>(tokens));
      for (int64_t n = 0; n < tokens; ++n) {
        sigma[n] = row_absmax(x, n, d) / 7.0;
        REQUIRE(sigma[n] >= 0x1p-6);
        REQUIRE(sigma[n] <= 448.0);
        const float s = t.scale[n];
        CHECK(formats::fp8_value(formats::fp8_bits(s, formats::Fp8::e4m3, formats::Overflow::saturate),
                                 formats::Fp8::e4m3) == s);  // an E4M3 value
        CHECK(std::abs(double(s) - sigma[n]) <= 0x1p-4 * sigma[n]);
      }
      // σ_s·x̂ is exact in float (4 + 4 significant bits): only the integer rounding and the quotient's tie.
      check_round_trip(x, tokens, d, t, [&](int64_t n, int64_t i, double) {
        return double(t.scale[n]) / 2 + 0x1p-50 * std::abs(double(x[i]));
      });
      check_round_trip(x, tokens, d, t, [&](int64_t n, int64_t i, double) {
        return 17.0 / 32.0 * sigma[n] + 0x1p-50 * std::abs(double(x[i]));
      });
    }
}

TEST_CASE("per-token INT4 rounds half to even", "[fireq]") {
  // max |x| = 7 gives σ = 1 exactly in both formats, so x/σ = x.
  const std::vector<float> x = {7.0f, 0.5f, 1.5f, 2.5f, -0.5f, -2.5f, 3.5f, -6.5f};
  for (ScaleFormat f : {ScaleFormat::fp32, ScaleFormat::fp8_e4m3}) {
    const TokenInt4 t = quantize_token_int4(x.data(), 1, 8, f);
    CHECK(t.scale[0] == 1.0f);
    CHECK(t.q == std::vector<int8_t>{7, 0, 2, 2, 0, -2, 4, -6});
  }
}

TEST_CASE("zero, tiny and huge tokens give no NaN and are counted", "[fireq]") {
  const int64_t d = 4;
  const float tiny_fp8 = 7 * 0x1p-10f;  // σ = 2⁻¹⁰: half the smallest E4M3 subnormal, rounds to 0 (even)
  const float sub_fp8 = 7 * 1.4f * 0x1p-9f;  // σ = 1.4·2⁻⁹ rounds to 2⁻⁹: max/σ_s = 9.8 clamps to 7
  const std::vector<float> x = {
      0.0f, 0.0f, 0.0f, 0.0f,               // all zero
      1e-30f, -1e-31f, 0.0f, 5e-31f,        // far below 7·2⁻⁹ (Lemma B.1)
      tiny_fp8, -tiny_fp8 / 3, 0.0f, 0.0f,  // σ exactly half of 2⁻⁹
      sub_fp8, -sub_fp8 / 2, 0.0f, 0.0f,    // a subnormal E4M3 scale
      7000.0f, -1.0f, 3136.0f, 0.0f,        // σ = 1000 > 448: saturates, 7000/448 = 15.6 clamps
  };
  const int64_t tokens = 5;
  const TokenInt4 t = quantize_token_int4(x.data(), tokens, d, ScaleFormat::fp8_e4m3);
  std::vector<float> out(x.size());
  dequantize_token_int4(t, out.data());
  for (float v : out) CHECK(std::isfinite(v));
  CHECK(t.scale[0] == 0.0f);
  for (int64_t c = 0; c < d; ++c) CHECK(out[c] == 0.0f);
  CHECK(t.scale[1] == 0x1p-9f);  // raised to the smallest subnormal, not flushed
  CHECK(t.scale[2] == 0x1p-9f);
  CHECK(t.q[2 * d] == 4);        // 7·2⁻¹⁰ / 2⁻⁹ = 3.5 → 4 (even)
  CHECK(t.scale[3] == 0x1p-9f);
  CHECK(t.q[3 * d] == 7);
  CHECK(t.scale[4] == 448.0f);
  CHECK(t.q[4 * d] == 7);
  CHECK(t.q[4 * d + 2] == 7);    // 3136/448 = 7 exactly
  CHECK(t.underflow_tokens == 2);
  CHECK(t.saturated_tokens == 1);
  CHECK(t.clamped == 2);         // 9.8 → 7 in token 3, 15.6 → 7 in token 4

  // FP32 scales: a token of the smallest float subnormal has σ below 2⁻¹⁴⁹ and keeps 2⁻¹⁴⁹.
  const float dm = std::numeric_limits<float>::denorm_min();
  const std::vector<float> y = {dm, -dm, 0.0f, 0.0f};
  const TokenInt4 u = quantize_token_int4(y.data(), 1, 4, ScaleFormat::fp32);
  CHECK(u.scale[0] == dm);
  CHECK(u.q == std::vector<int8_t>{1, -1, 0, 0});
  CHECK(u.underflow_tokens == 1);
  std::vector<float> back(4);
  dequantize_token_int4(u, back.data());
  CHECK(back == y);
}

TEST_CASE("per-token INT4 rejects bad input with InputError", "[fireq]") {
  const std::vector<float> ok(8, 1.0f);
  std::vector<float> bad = ok;
  CHECK_THROWS_AS(quantize_token_int4(ok.data(), 0, 8, ScaleFormat::fp32), InputError);
  CHECK_THROWS_AS(quantize_token_int4(ok.data(), 1, 0, ScaleFormat::fp8_e4m3), InputError);
  bad[3] = std::numeric_limits<float>::quiet_NaN();
  CHECK_THROWS_AS(quantize_token_int4(bad.data(), 1, 8, ScaleFormat::fp32), InputError);
  bad[3] = -std::numeric_limits<float>::infinity();
  CHECK_THROWS_AS(quantize_token_int4(bad.data(), 2, 4, ScaleFormat::fp8_e4m3), InputError);
  TokenInt4 t = quantize_token_int4(ok.data(), 2, 4, ScaleFormat::fp32);
  t.scale.pop_back();
  std::vector<float> out(8);
  CHECK_THROWS_AS(dequantize_token_int4(t, out.data()), InputError);
}

}  // namespace
}  // namespace attnlab::fireq
