// The INT8 decode buffer (core/quant/decode_buffer.h): flush timing, pending values = rne(x / s),
// clamping of injected outliers, no re-quantization at flush, and every InputError.
#include "core/error.h"
#include "core/quant/decode_buffer.h"
#include "core/quant/progressive.h"
#include "core/quant/quantize.h"
#include "tests/catch.h"
#include "tests/support/input_error.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace attnlab::quant {
namespace ATTNLAB_FILE_LOCAL {

using test::input_error;

using test::starts;

// (tokens, channels) values in [−bound, bound].
std::vector<float> tokens_within(int64_t tokens, int64_t channels, float bound, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<float> u(-bound, bound);
  std::vector<float> x(tokens * channels);
  for (float& v : x) v = u(gen);
  return x;
}

TEST_CASE("the universal scale is max|prefill| / 119, or 1 for a zero prefill", "[quant]") {
  std::vector<float> prefill = tokens_within(100, 64, 3.0f, 1);
  prefill[777] = -4.5f;
  CHECK(universal_scale(prefill.data(), 100, 64) == 4.5f / 119.0f);
  CHECK(universal_scale(prefill.data(), 100, 64, 127) == 4.5f / 127.0f);
  const std::vector<float> zeros(64, 0.0f);
  CHECK(universal_scale(zeros.data(), 1, 64) == 1.0f);
}

TEST_CASE("n_b + 1 appends: one flush of the first n_b tokens as they were, one pending token", "[quant]") {
  for (int64_t n_b : {2, 4, 64})  // (n_b = 1 flushes at every append: the next test)
    for (int bits : {4, 2}) {
      const int64_t d = 96;
      const float s = 0.05f;
      const std::vector<float> x = tokens_within(n_b + 1, d, 110 * s, n_b);  // no clamping
      DecodeBuffer buf(d, n_b, s, bits);
      for (int64_t t = 0; t < n_b + 1; ++t) CHECK(buf.append(x.data() + t * d) == (t == n_b - 1));
      INFO(fmt::format("n_b {} bits {}", n_b, bits));
      CHECK(buf.flushes() == 1);
      CHECK(buf.size() == 1);
      CHECK(buf.clamped() == 0);
      // Pending values are rne(x / s) (true FP32 division, ties to even).
      REQUIRE(buf.pending().size() == size_t(d));
      for (int64_t c = 0; c < d; ++c) CHECK(buf.pending()[c] == std::nearbyint(x[n_b * d + c] / s));
      // The flushed block is step 2 of the buffered INT8 values with the universal scale as s_K.
      const ProgressiveBlock& b = buf.flushed()[0];
      CHECK(b.rows == n_b);
      CHECK(b.cols == d);
      CHECK(b.bits == bits);
      CHECK(b.scale8 == s);
      std::vector<int8_t> q8(n_b * d);
      for (int64_t i = 0; i < n_b * d; ++i) q8[i] = static_cast<int8_t>(std::nearbyint(x[i] / s));
      CHECK(b.q8 == q8);
      const ProgressiveBlock want = progressive_compress(q8.data(), n_b, d, s, bits);
      CHECK(b.codes == want.codes);
      CHECK(b.s_int == want.s_int);
      CHECK(b.z_int == want.z_int);
    }
}

TEST_CASE("tokens beyond 127·s are clamped to ±127 and counted, per buffer and per flushed block",
          "[quant]") {
  const int64_t d = 64, n_b = 8, tokens = 20;
  const float s = 0.01f;
  std::vector<float> x = tokens_within(tokens, d, 100 * s, 7);
  // Outliers at known places, all far beyond 127.5·s (rne(x/s) > 127); 126.4·s stays in range.
  const std::vector<int64_t> at = {3, 70, 71, 200, 513, 1000, 1279};
  for (size_t k = 0; k < at.size(); ++k) x[at[k]] = (k % 2 ? -1.0f : 1.0f) * s * (200.0f + 100.0f * k);
  x[5] = 126.4f * s;
  DecodeBuffer buf(d, n_b, s, 4);
  for (int64_t t = 0; t < tokens; ++t) buf.append(x.data() + t * d);
  CHECK(buf.clamped() == int64_t(at.size()));
  CHECK(buf.flushes() == 2);
  CHECK(buf.size() == 4);
  // Tokens 0–7 hold positions 3, 70, 71, 200, 5 (126.4·s is not clamped); tokens 8–15 hold 513, 1000.
  CHECK(buf.flushed()[0].clamped8 == 4);
  CHECK(buf.flushed()[1].clamped8 == 2);
  CHECK(buf.flushed()[0].q8[3] == 127);
  CHECK(buf.flushed()[0].q8[70] == -127);
  CHECK(buf.flushed()[0].q8[5] == 126);
  CHECK(buf.pending()[1279 - 16 * d] == 127);
}

TEST_CASE("appended tokens equal quantize_with_scale's codes and clamp counts (the rule it restates)", "[quant]") {
  const int64_t d = 128, tokens = 40;
  const float s = 0.031f;
  std::vector<float> x = tokens_within(tokens, d, 160 * s, 9);  // about a fifth beyond ±127·s
  x[5] = 127.5f * s;                                           // at and near the clamp edge
  x[6] = -126.5f * s;
  DecodeBuffer buf(d, 1000, s, 4);
  int64_t clamped = 0;
  for (int64_t t = 0; t < tokens; ++t) {
    buf.append(x.data() + t * d);
    const Quantized q = quantize_with_scale(x.data() + t * d, 1, d, 8, 127, s);
    clamped += q.stats.clamped;
    for (int64_t c = 0; c < d; ++c)
      if (buf.pending()[t * d + c] != q.q[c]) FAIL_CHECK(fmt::format("token {} channel {}", t, c));
  }
  CHECK(clamped > 0);
  CHECK(buf.clamped() == clamped);
}

TEST_CASE("flush count and pending size follow appends for every n_b", "[quant]") {
  for (int64_t n_b : {1, 3, 64}) {
    const int64_t d = 16, tokens = 200;
    const std::vector<float> x = tokens_within(tokens, d, 1.0f, 3);
    DecodeBuffer buf(d, n_b, 1.0f / 119, 2);
    for (int64_t t = 0; t < tokens; ++t) buf.append(x.data() + t * d);
    CHECK(buf.flushes() == tokens / n_b);
    CHECK(buf.size() == tokens % n_b);
    CHECK(int64_t(buf.pending().size()) == (tokens % n_b) * d);
  }
}

TEST_CASE("the decode buffer validates its parameters and tokens", "[quant]") {
  CHECK(starts(input_error([] { DecodeBuffer(64, 0, 1.0f, 4); }), "n_b"));
  CHECK(starts(input_error([] { DecodeBuffer(0, 64, 1.0f, 4); }), "decode_buffer.channels"));
  CHECK(starts(input_error([] { DecodeBuffer(64, 64, 0.0f, 4); }), "decode_buffer.universal_scale"));
  CHECK(starts(input_error([] { DecodeBuffer(64, 64, INFINITY, 4); }), "decode_buffer.universal_scale"));
  CHECK(starts(input_error([] { DecodeBuffer(64, 64, 1.0f, 8); }), "decode_buffer.cache_bits"));
  DecodeBuffer buf(4, 2, 1.0f, 4);
  const std::vector<float> bad = {1, 2, std::nanf(""), 4};
  CHECK(starts(input_error([&] { buf.append(bad.data()); }), "decode_buffer.token"));
  CHECK(buf.size() == 0);
  CHECK(starts(input_error([&] { universal_scale(bad.data(), 1, 4); }), "decode_buffer.prefill"));
}

}  // namespace
}  // namespace attnlab::quant
