// FireQ §3.1.1 Step 1's INT4 → E4M3 lookup table. See int4_lut.h.
#include "core/fireq/int4_lut.h"

#include "core/formats/fp8.h"

#include <cmath>

namespace attnlab::fireq {

namespace {

constexpr float kE4M3OverflowMid = 464.0f;  // |x| above it saturates to ±448 (fp8.h)

}  // namespace

std::array<float, 16> int4_fp8_lut(float sigma) {
  std::array<float, 16> lut{};
  for (int c = -8; c < 8; ++c)
    lut[c + 8] = formats::round_fp8(float(c) * sigma, formats::Fp8::e4m3, formats::Overflow::saturate);
  return lut;
}

std::array<bool, 16> int4_fp8_lut_events(float sigma) {
  const std::array<float, 16> lut = int4_fp8_lut(sigma);
  std::array<bool, 16> event{};
  for (int c = -8; c < 8; ++c)
    event[c + 8] = std::abs(float(c) * sigma) > kE4M3OverflowMid || (c != 0 && lut[c + 8] == 0.0f);
  return event;
}

}  // namespace attnlab::fireq
