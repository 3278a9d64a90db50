#include "core/quant/fp8_blocks.h"

#include "core/formats/fp8.h"
#include "core/quant/quantize.h"

#include <algorithm>
#include <cmath>

namespace attnlab::quant {

namespace {
constexpr float kOverflow = 464.0f;  // E4M3: |x| above it overflows (saturates to 448), fp8.h
}

Fp8BlockCodes fp8_block_codes(const float* x, int64_t rows, int64_t cols, int64_t block, const char* where) {
  require_finite(x, rows, cols, where);
  Fp8BlockCodes out;
  out.bits.resize(size_t(rows * cols));
  for (int64_t r0 = 0; r0 < rows; r0 += block) {
    const int64_t end = std::min(rows, r0 + block) * cols;
    float top = 0;
    for (int64_t i = r0 * cols; i < end; ++i) top = std::max(top, std::abs(x[i]));
    const float s = scale_for_span(top, formats::kE4M3Max);
    for (int64_t i = r0 * cols; i < end; ++i) {
      const float q = x[i] / s;  // a true FP32 division per element
      out.saturated += std::abs(q) > kOverflow;
      out.bits[size_t(i)] = formats::fp8_bits(q, formats::Fp8::e4m3);
      out.zeroed += x[i] != 0.0f && (out.bits[size_t(i)] & 0x7f) == 0;
    }
    out.scale.push_back(s);
  }
  return out;
}

}  // namespace attnlab::quant
