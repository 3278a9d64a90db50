// The KIVI baseline (core/quant/kivi.h): the token split, the per-element error bound at 2/4/8 bits,
// the FP16 residual kept exactly, the byte count by hand, and every InputError.
//
// Per-element bound for a quantized value whose code was not clamped: the FP16 input rounding
// (≤ 2⁻¹¹·|x|), the quantizer's s/2 with its FP32 slack (test_quantize.cpp: 4u·(|x| + |z| + (L + 1)·s)),
// and the FP16 rounding of x̂ on output (≤ 2⁻¹¹·|x̂|); s and z are the stored FP16 values.
#include "core/error.h"
#include "core/formats/half.h"
#include "core/quant/kivi.h"
#include "tests/catch.h"
#include "tests/support/input_error.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace attnlab::quant {
namespace ATTNLAB_FILE_LOCAL {

constexpr double kU32 = 0x1p-24, kU16 = 0x1p-11;

using test::input_error;

using test::starts;

// Keys with a few large channels (KIVI quantizes them per channel for this reason), values without.
std::vector<float> kv_data(int64_t tokens, int64_t channels, bool keys, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(tokens * channels);
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t c = 0; c < channels; ++c)
      x[t * channels + c] =
          normal(gen) * (keys && c % 16 == 1 ? 12.0f : 1.0f) + (keys && c % 16 == 1 ? 6.0f : 0.0f);
  return x;
}

// Checks one quantized tensor (rows < quantized_tokens) against the bound above; returns the count of
// violations and describes the first.
int64_t check_quantized(const std::vector<float>& x, const std::vector<float>& out, const Quantized& q,
                        std::string& first) {
  int64_t bad = 0;
  const double L = q_top(q.spec);
  for (int64_t r = 0; r < q.rows; ++r)
    for (int64_t c = 0; c < q.cols; ++c) {
      const int64_t i = r * q.cols + c, g = q.group_of(r, c);
      const float x16 = formats::round_fp16(x[i]), s = q.scale[g], z = q.zero[g];
      const float raw = std::nearbyint((x16 - z) / s);
      if (raw < 0 || raw > L) continue;  // clamped (counted in q.stats.clamped)
      const double err = std::fabs(double(x[i]) - out[i]);
      const double bound = s / 2.0 + kU16 * (std::fabs(x[i]) + std::fabs(out[i])) +
                           4 * kU32 * (std::fabs(x16) + std::fabs(z) + (L + 1) * s);
      if (err > bound && bad++ == 0)
        first = fmt::format("({}, {}): x {} x̂ {} err {} bound {} (s {}, z {})", r, c, x[i], out[i], err,
                            bound, s, z);
    }
  return bad;
}

TEST_CASE("KIVI splits tokens into whole key groups and an FP16 residual of at least R tokens", "[quant]") {
  struct Case {
    int64_t tokens, group, residual, quantized;
  };
  for (const Case cs : {Case{100, 32, 10, 64}, Case{5, 32, 10, 0}, Case{64, 32, 0, 64}, Case{65, 32, 0, 64},
                        Case{42, 32, 10, 32}, Case{41, 32, 10, 0}}) {
    const std::vector<float> k = kv_data(cs.tokens, 8, true, 1), v = kv_data(cs.tokens, 8, false, 2);
    const KiviCache c = kivi_quantize(k.data(), v.data(), cs.tokens, 8, 4, cs.group, cs.residual);
    INFO(fmt::format("tokens {} g {} R {}", cs.tokens, cs.group, cs.residual));
    CHECK(c.quantized_tokens == cs.quantized);
    CHECK(c.residual_tokens() == cs.tokens - cs.quantized);
    CHECK(c.keys.rows == cs.quantized);
    CHECK(c.values.rows == cs.quantized);
    CHECK(int64_t(c.k_residual.size()) == (cs.tokens - cs.quantized) * 8);
  }
}

TEST_CASE("KIVI dequantizes within s/2 (plus FP16 roundings), residual tokens exactly FP16", "[quant]") {
  for (int bits : {8, 4, 2})
    for (int64_t channels : {64, 96, 100}) {  // 100: value groups of 32 channels with a tail of 4
      const int64_t tokens = 300, group = 32, residual = 64;
      const std::vector<float> k = kv_data(tokens, channels, true, bits),
                               v = kv_data(tokens, channels, false, 5);
      const KiviCache c = kivi_quantize(k.data(), v.data(), tokens, channels, bits, group, residual);
      std::vector<float> ko(k.size()), vo(v.size());
      kivi_dequantize(c, ko.data(), vo.data());
      INFO(fmt::format("bits {} channels {}", bits, channels));
      REQUIRE(c.quantized_tokens == 224);  // ⌊(300 − 64)/32⌋·32
      CHECK(c.keys.spec.granularity == Granularity::group_tokens);
      CHECK(c.values.spec.granularity == Granularity::group_channels);
      CHECK(c.values.groups() == 224 * ((channels + group - 1) / group));
      std::string first;
      const int64_t bad_k = check_quantized(k, ko, c.keys, first);
      INFO(first);
      CHECK(bad_k == 0);
      const int64_t bad_v = check_quantized(v, vo, c.values, first);
      INFO(first);
      CHECK(bad_v == 0);
      if (bits == 8) {  // KIVI-8 ≈ original: no code clamps at all
        CHECK(c.keys.stats.clamped == 0);
        CHECK(c.values.stats.clamped == 0);
      }
      // Residual: the FP16 values of the last tokens, bit for bit; everything returned is FP16.
      bool residual_exact = true, all_fp16 = true;
      for (int64_t i = 0; i < tokens * channels; ++i) {
        if (i >= c.quantized_tokens * channels)
          residual_exact =
              residual_exact && ko[i] == formats::round_fp16(k[i]) && vo[i] == formats::round_fp16(v[i]);
        all_fp16 = all_fp16 && ko[i] == formats::round_fp16(ko[i]) && vo[i] == formats::round_fp16(vo[i]);
      }
      CHECK(residual_exact);
      CHECK(all_fp16);
      // Scales and zero points are FP16 values (the format the byte count assumes).
      for (float s : c.keys.scale) CHECK(s == formats::round_fp16(s));
      for (float z : c.values.zero) CHECK(z == formats::round_fp16(z));
    }
}

TEST_CASE("KIVI cache bytes by hand", "[quant]") {
  // tokens 10, channels 5, 2 bits, g 3, R 2: quantized ⌊8/3⌋·3 = 6 tokens, residual 4 tokens.
  //   codes: 6·5 = 30 values · 2 bits = 60 bits → 8 bytes per tensor, K and V: 16
  //   key groups (6/3)·5 = 10, value groups 6·⌈5/3⌉ = 12: 22 groups · (2 + 2) bytes = 88
  //   residual: 4 tokens · 5 channels · 2 bytes · (K, V) = 80                         total 184
  const std::vector<float> k = kv_data(10, 5, true, 1), v = kv_data(10, 5, false, 2);
  const KiviCache c = kivi_quantize(k.data(), v.data(), 10, 5, 2, 3, 2);
  CHECK(c.keys.groups() == 10);
  CHECK(c.values.groups() == 12);
  CHECK(kivi_cache_bytes(c) == 184);
  // All residual (tokens ≤ R): 2 tokens · 5 · 2 · 2 = 40 bytes, FP16 only.
  const KiviCache r = kivi_quantize(k.data(), v.data(), 2, 5, 2, 3, 2);
  CHECK(kivi_cache_bytes(r) == 40);
  // tokens 70, channels 6, 4 bits, g 4, R 8: quantized 60; codes 2·⌈360·4/8⌉ = 360; groups
  // (15·6 + 60·2)·4 = 840; residual 10·6·2·2 = 240: 1440.
  const std::vector<float> k2 = kv_data(70, 6, true, 3), v2 = kv_data(70, 6, false, 4);
  CHECK(kivi_cache_bytes(kivi_quantize(k2.data(), v2.data(), 70, 6, 4, 4, 8)) == 1440);
}

TEST_CASE("KIVI validates its parameters and data", "[quant]") {
  const std::vector<float> k = kv_data(8, 4, true, 1), v = kv_data(8, 4, false, 2);
  CHECK(starts(input_error([&] { kivi_quantize(k.data(), v.data(), 8, 4, 3, 2, 2); }), "kivi.bits"));
  CHECK(starts(input_error([&] { kivi_quantize(k.data(), v.data(), 8, 4, 2, 0, 2); }), "kivi.group"));
  CHECK(starts(input_error([&] { kivi_quantize(k.data(), v.data(), 8, 4, 2, 2, -1); }), "kivi.residual"));
  CHECK(starts(input_error([&] { kivi_quantize(k.data(), v.data(), 0, 4, 2, 2, 2); }), "kivi.x"));
  std::vector<float> bad = v;
  bad[6] = std::nanf("");
  const std::string msg = input_error([&] { kivi_quantize(k.data(), bad.data(), 8, 4, 2, 2, 2); });
  CHECK(starts(msg, "kivi.v"));
  CHECK(msg.find("element 6") != std::string::npos);
  std::vector<float> big = k;
  big[3] = 1e5f;  // finite in FP32, inf in FP16
  CHECK(starts(input_error([&] { kivi_quantize(big.data(), v.data(), 8, 4, 2, 2, 2); }),
               "kivi.k (rounded to FP16, max 65504)"));
}

// A slice of the cache (a context-parallel shard) dequantizes to exactly the rows it covers: inside the quantized
// rows (on group boundaries), across the split into the FP16 residual, and inside the residual; the split rule holds
// for the slice (its residual field is its FP16 count); a cut key group or an empty span is refused.
TEST_CASE("KIVI: a slice of the cache dequantizes to its rows of the whole", "[quant]") {
  const int64_t tokens = 700, channels = 12, group = 32, residual = 100;
  const std::vector<float> k = kv_data(tokens, channels, true, 7), v = kv_data(tokens, channels, false, 8);
  for (int bits : {2, 4}) {
    const KiviCache c = kivi_quantize(k.data(), v.data(), tokens, channels, bits, group, residual);
    REQUIRE(c.quantized_tokens == 576);
    std::vector<float> k_all(size_t(tokens * channels)), v_all(k_all.size());
    kivi_dequantize(c, k_all.data(), v_all.data());
    for (auto [begin, end] : {std::pair<int64_t, int64_t>{0, 128}, {128, 384}, {512, 700}, {576, 700}, {600, 650}, {0, 700}}) {
      const KiviCache s = kivi_slice(c, begin, end);
      INFO(fmt::format("bits {} [{}, {})", bits, begin, end));
      CHECK(s.tokens == end - begin);
      CHECK(s.quantized_tokens == std::max<int64_t>(0, std::min(end, c.quantized_tokens) - begin));
      CHECK(s.quantized_tokens ==
            (s.tokens > s.residual ? (s.tokens - s.residual) / group * group : 0));  // the split rule, for the slice
      std::vector<float> ks(size_t(s.tokens * channels)), vs(ks.size());
      kivi_dequantize(s, ks.data(), vs.data());
      CHECK(std::equal(ks.begin(), ks.end(), k_all.begin() + begin * channels));
      CHECK(std::equal(vs.begin(), vs.end(), v_all.begin() + begin * channels));
    }
    CHECK_THROWS_AS(kivi_slice(c, 16, 128), std::invalid_argument);   // cuts a key group
    CHECK_THROWS_AS(kivi_slice(c, 0, 300), std::invalid_argument);    // ends inside one
    CHECK_NOTHROW(kivi_slice(c, 0, 610));                             // ends in the residual: any token
    CHECK_THROWS_AS(kivi_slice(c, 128, 128), std::invalid_argument);  // empty
    CHECK_THROWS_AS(kivi_slice(c, 600, 701), std::invalid_argument);  // past the end
  }
}

}  // namespace
}  // namespace attnlab::quant
