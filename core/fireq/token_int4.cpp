// FireQ per-token INT4 with FP32 or FP8 E4M3 scales. See token_int4.h.
#include "core/fireq/token_int4.h"

#include "core/error.h"
#include "core/formats/fp8.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace attnlab::fireq {

namespace {

constexpr double kInt4Max = 7.0;  // Eq. 1, b = 4: 2^(b−1) − 1
constexpr int kQMin = -8, kQMax = 7;

// The smallest positive and the largest value of the scale's storage format.
float format_min(ScaleFormat f) {
  return f == ScaleFormat::fp8_e4m3 ? 0x1p-9f : std::numeric_limits<float>::denorm_min();
}
float format_max(ScaleFormat f) {
  return f == ScaleFormat::fp8_e4m3 ? formats::kE4M3Max : std::numeric_limits<float>::max();
}

float store_scale(double sigma, ScaleFormat f) {
  const float s = static_cast<float>(sigma);
  return f == ScaleFormat::fp8_e4m3 ? formats::round_fp8(s, formats::Fp8::e4m3, formats::Overflow::saturate) : s;
}

}  // namespace

TokenInt4 quantize_token_int4(const float* x, int64_t tokens, int64_t d, ScaleFormat f) {
  if (tokens <= 0 || d <= 0)
    fail_input("quantize_token_int4.x", "empty input (" + std::to_string(tokens) + " x " + std::to_string(d) + ")");
  if (x == nullptr) fail_input("quantize_token_int4.x", "null data pointer");
  for (int64_t i = 0; i < tokens * d; ++i)
    if (!std::isfinite(x[i])) fail_input("quantize_token_int4.x", "non-finite value at index " + std::to_string(i));

  TokenInt4 t;
  t.tokens = tokens, t.d = d;
  t.q.assign(static_cast<size_t>(tokens * d), 0);
  t.scale.assign(static_cast<size_t>(tokens), 0.0f);
  for (int64_t n = 0; n < tokens; ++n) {
    const float* row = x + n * d;
    double absmax = 0.0;
    for (int64_t c = 0; c < d; ++c) absmax = std::max(absmax, std::abs(double(row[c])));
    if (absmax == 0.0) continue;  // all-zero token: σ_s = 0, x̂ = 0

    const double sigma = absmax / kInt4Max;  // Eq. 1
    float s = store_scale(sigma, f);
    if (sigma < double(format_min(f))) {  // Lemma B.1 for E4M3: the scale would flush; keep the smallest
      s = format_min(f);
      ++t.underflow_tokens;
    } else if (sigma > double(format_max(f))) {
      ++t.saturated_tokens;
    }
    t.scale[n] = s;
    for (int64_t c = 0; c < d; ++c) {
      const double r = std::nearbyint(double(row[c]) / double(s));  // round half to even
      if (r < kQMin || r > kQMax) ++t.clamped;
      t.q[n * d + c] = static_cast<int8_t>(std::clamp(r, double(kQMin), double(kQMax)));
    }
  }
  return t;
}

void dequantize_token_int4(const TokenInt4& t, float* out) {
  if (t.tokens <= 0 || t.d <= 0) fail_input("dequantize_token_int4", "empty quantized tensor");
  if (static_cast<int64_t>(t.q.size()) != t.tokens * t.d || static_cast<int64_t>(t.scale.size()) != t.tokens)
    fail_input("dequantize_token_int4", "q must hold tokens·d values and scale tokens values");
  for (int64_t n = 0; n < t.tokens; ++n)
    for (int64_t c = 0; c < t.d; ++c) out[n * t.d + c] = t.scale[n] * float(t.q[n * t.d + c]);
}

}  // namespace attnlab::fireq
