// FireQ per-token FP8 E4M3 with a BF16 scale (Eq. 2). See token_fp8.h.
#include "core/fireq/token_fp8.h"

#include "core/formats/fp8.h"
#include "core/formats/half.h"

#include <Eigen/Core>

#include <cmath>
#include <limits>

namespace attnlab::fireq {

TokenFp8 quantize_token_fp8(float* x, int64_t tokens, int64_t d) {
  constexpr float kE4M3OverflowMid = 464.0f;  // |x| above it saturates to ±448 (fp8.h)
  TokenFp8 t;
  t.scale.resize(static_cast<size_t>(tokens));
  for (int64_t n = 0; n < tokens; ++n) {
    Eigen::Map<Eigen::ArrayXf> row(x + n * d, d);
    const float amax = row.abs().maxCoeff();
    float beta = formats::round_bf16(amax / formats::kE4M3Max);
    if (!(beta >= std::numeric_limits<float>::min()) || !std::isfinite(beta)) {
      t.fallback_tokens += amax != 0.0f;
      beta = 1.0f;
    }
    t.scale[n] = beta;
    row /= beta;  // FP32 division, elementwise
    t.saturated += (row.abs() > kE4M3OverflowMid).count();
    formats::round_fp8_inplace(row.data(), d, formats::Fp8::e4m3, formats::Overflow::saturate);
  }
  return t;
}

}  // namespace attnlab::fireq
