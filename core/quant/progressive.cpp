// attnlab core: blockwise progressive quantization (progressive.h states the rules and the range
// analysis). Step 1 is the generic quantizer; step 2 and the dequantization are integer arithmetic only.
#include "core/quant/progressive.h"

#include "core/error.h"
#include "core/formats/pack.h"
#include "core/quant/quantize.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace attnlab::quant {

namespace {

constexpr int kInt8Max = 127;  // the dequantized values saturate to [−127, 127]

void require_cache_bits(int bits) {
  if (bits != 2 && bits != 4) fail_input("progressive.bits", fmt::format("must be 4 or 2 (got {})", bits));
}

}  // namespace

int64_t div_rne(int64_t a, int64_t b) {
  int64_t q = a / b, r = a % b;  // C++ truncates towards zero: make it floor division, 0 ≤ r < b
  if (r < 0) {
    r += b;
    --q;
  }
  if (2 * r > b || (2 * r == b && (q & 1))) ++q;  // round half to even
  return q;
}

ProgressiveBlock progressive_compress(const int8_t* q8, int64_t rows, int64_t cols, float scale8, int bits,
                                      IntScale rule) {
  require_cache_bits(bits);
  if (rows < 1 || cols < 1)
    fail_input("progressive.x", fmt::format("must not be empty (got rows = {}, cols = {})", rows, cols));
  if (!(scale8 > 0) || std::isinf(scale8))
    fail_input("progressive.scale8", fmt::format("must be finite and > 0 (got {})", scale8));
  for (int64_t i = 0; i < rows * cols; ++i)
    if (q8[i] < -kInt8Max)
      fail_input("progressive.q8",
                 fmt::format("element {} is {}: INT8 values must lie in [−127, 127]", i, q8[i]));

  ProgressiveBlock b;
  b.rows = rows;
  b.cols = cols;
  b.bits = bits;
  b.rule = rule;
  b.scale8 = scale8;
  b.q8.assign(q8, q8 + rows * cols);
  b.codes.resize(rows * cols);
  b.q8_min.assign(q8, q8 + cols);
  b.q8_max.assign(q8, q8 + cols);
  for (int64_t r = 1; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      b.q8_min[c] = std::min<int16_t>(b.q8_min[c], q8[r * cols + c]);
      b.q8_max[c] = std::max<int16_t>(b.q8_max[c], q8[r * cols + c]);
    }

  const int64_t L = (int64_t{1} << bits) - 1;
  b.s_int.resize(cols);
  b.z_int.resize(cols);
  for (int64_t c = 0; c < cols; ++c) {
    const int64_t range = b.q8_max[c] - b.q8_min[c];
    const int64_t s = std::max<int64_t>(1, rule == IntScale::up ? (range + L - 1) / L  // ⌈range / L⌉
                                                                : div_rne(range, L));  // Alg. 1: s^int
    b.s_int[c] = static_cast<int16_t>(s);
    b.z_int[c] = static_cast<int16_t>(div_rne(b.q8_min[c], s));  // Alg. 1: z^int
  }
  // The code loop in int32 and FP32 (see div_rne_small) so that it vectorizes: the per-channel s and z
  // are widened once, and the counts are sums of comparisons.
  const std::vector<int32_t> s32(b.s_int.begin(), b.s_int.end()), z32(b.z_int.begin(), b.z_int.end());
  const auto L32 = static_cast<int32_t>(L);
  int64_t clamped = 0, saturated = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const int8_t* __restrict in = q8 + r * cols;
    uint8_t* __restrict out = b.codes.data() + r * cols;
    int32_t row_clamped = 0, row_saturated = 0;
    for (int64_t c = 0; c < cols; ++c) {
      const int32_t s = s32[c], z = z32[c];
      const int32_t code = div_rne_small(in[c] - z * s, s);  // Alg. 1: ⌈K^q1/s^int − z^int⌋
      row_clamped += (code < 0) | (code > L32);
      const int32_t kept = std::clamp(code, 0, L32);
      out[c] = static_cast<uint8_t>(kept);
      const int32_t back = (kept + z) * s;  // Alg. 2, before saturation
      row_saturated += (back < -kInt8Max) | (back > kInt8Max);
    }
    clamped += row_clamped;
    saturated += row_saturated;
  }
  b.clamped = clamped;
  b.saturated = saturated;
  return b;
}

ProgressiveBlock progressive_quantize(const float* x, int64_t rows, int64_t cols, int bits, double q_max8,
                                      IntScale rule) {
  require_cache_bits(bits);
  if (!(q_max8 >= 1 && q_max8 <= kInt8Max) || q_max8 != std::floor(q_max8))
    fail_input("progressive.q_max8", fmt::format("must be an integer in [1, 127] (got {})", q_max8));
  if (rows < 1 || cols < 1)
    fail_input("progressive.x", fmt::format("must not be empty (got rows = {}, cols = {})", rows, cols));
  require_finite(x, rows, cols, "progressive.x");
  // Eq. 9 / Alg. 1: s_K = max|K_j| / 119, K_j^q1 = ⌈K_j / s_K⌋ — the generic symmetric quantizer.
  const Quantized step1 = quantize(
      x, rows, cols,
      Spec{.bits = 8, .scheme = Scheme::symmetric, .granularity = Granularity::tensor, .q_max = q_max8});
  std::vector<int8_t> q8(step1.q.begin(), step1.q.end());
  ProgressiveBlock b = progressive_compress(q8.data(), rows, cols, step1.scale[0], bits, rule);
  b.clamped8 = step1.stats.clamped;
  return b;
}

std::vector<int8_t> progressive_dequantize(const ProgressiveBlock& b) {
  std::vector<int8_t> out(b.rows * b.cols);
  for (int64_t r = 0; r < b.rows; ++r)
    for (int64_t c = 0; c < b.cols; ++c) {
      const int32_t s = b.s_int[c], z = b.z_int[c];
      const int32_t v = (int32_t(b.codes[r * b.cols + c]) + z) * s;  // Eq. 7–8 / Alg. 2, see progressive.h
      out[r * b.cols + c] = static_cast<int8_t>(std::clamp(v, -kInt8Max, kInt8Max));
    }
  return out;
}

int64_t progressive_bytes(const ProgressiveBlock& b) {
  return formats::packed_bytes(b.rows * b.cols, b.bits) + 2 * b.cols + int64_t(sizeof(float));
}

}  // namespace attnlab::quant
