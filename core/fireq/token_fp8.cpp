// FireQ FP8 E4M3 with a BF16 scale per token or per block of tokens (Eq. 2). See token_fp8.h.
#include "core/fireq/token_fp8.h"

#include "core/formats/fp8.h"
#include "core/formats/half.h"

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace attnlab::fireq {

TokenFp8 quantize_block_fp8(float* x, int64_t tokens, int64_t d, int64_t block) {
  if (block < 1) throw std::logic_error("quantize_block_fp8: block must be at least 1");
  constexpr float kE4M3OverflowMid = 464.0f;  // |x| above it saturates to ±448 (fp8.h)
  TokenFp8 t;
  t.scale.resize(static_cast<size_t>(tokens > 0 ? (tokens + block - 1) / block : 0));
  for (int64_t b = 0; b < static_cast<int64_t>(t.scale.size()); ++b) {
    const int64_t rows = std::min(block, tokens - b * block);
    Eigen::Map<Eigen::ArrayXf> span(x + b * block * d, rows * d);  // the block's rows, contiguous
    const float amax = span.abs().maxCoeff();
    float beta = formats::round_bf16(amax / formats::kE4M3Max);
    if (!(beta >= std::numeric_limits<float>::min()) || !std::isfinite(beta)) {
      t.fallback_scales += amax != 0.0f;
      beta = 1.0f;
    }
    t.scale[b] = beta;
    span /= beta;  // FP32 division, elementwise
    t.saturated += (span.abs() > kE4M3OverflowMid).count();
    formats::round_fp8_inplace(span.data(), span.size(), formats::Fp8::e4m3, formats::Overflow::saturate);
  }
  return t;
}

TokenFp8 quantize_token_fp8(float* x, int64_t tokens, int64_t d) { return quantize_block_fp8(x, tokens, d, 1); }

}  // namespace attnlab::fireq
