// attnlab core: IEEE binary16 (FP16) and bfloat16 (BF16), bit-exact, round-to-nearest-even.
//
// These are the rounding rules the GPU applies in __float2half_rn / __float2bfloat16_rn, written out so
// the reference can emulate a kernel's storage format bit for bit:
//   FP16: 1 sign, 5 exponent (bias 15), 10 mantissa bits; subnormals; overflow rounds to ±inf
//         (values ≥ 65520 after rounding); NaN stays NaN (quiet, payload not preserved).
//   BF16: the top 16 bits of an FP32, rounded to nearest even; NaN stays NaN.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace attnlab::formats {

inline uint16_t fp16_bits(float x) {
  const uint32_t f = std::bit_cast<uint32_t>(x);
  const uint32_t sign = (f >> 16) & 0x8000u;
  const uint32_t abs = f & 0x7fffffffu;
  if (abs >= 0x7f800000u) return static_cast<uint16_t>(sign | (abs > 0x7f800000u ? 0x7e00u : 0x7c00u));
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // ≥ 65520: rounds to inf
  if (abs < 0x38800000u) {
    // Result is subnormal (or zero): value = m · 2^-24 with m = round(|x| · 2^24).
    if (abs < 0x33000000u) return static_cast<uint16_t>(sign);  // < 2^-25: rounds to zero
    const uint32_t exp = abs >> 23;
    const uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126u - exp;  // bits dropped so that the result counts units of 2^-24
    const uint32_t half = 1u << (shift - 1);
    const uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t m = mant >> shift;
    if (rem > half || (rem == half && (m & 1u))) ++m;
    return static_cast<uint16_t>(sign | m);
  }
  // Normal: re-bias the exponent (127 → 15) and round the 23-bit mantissa to 10 bits.
  uint32_t h = ((abs - 0x38000000u) >> 13);
  const uint32_t rem = abs & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // may carry into the exponent: correct
  return static_cast<uint16_t>(sign | h);
}

inline float fp16_value(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    // ±0 or subnormal: mant · 2^-24, exact in FP32.
    const float v = static_cast<float>(mant) * 0x1p-24f;
    return sign ? -v : v;
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  return std::bit_cast<float>(sign | ((exp + 112u) << 23) | (mant << 13));
}

inline uint16_t bf16_bits(float x) {
  const uint32_t f = std::bit_cast<uint32_t>(x);
  if ((f & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((f >> 16) | 0x40u);  // quiet NaN
  const uint32_t lsb = (f >> 16) & 1u;
  return static_cast<uint16_t>((f + 0x7fffu + lsb) >> 16);
}

inline float bf16_value(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

// x rounded to the nearest representable FP16 / BF16 value, returned as FP32.
inline float round_fp16(float x) { return fp16_value(fp16_bits(x)); }
inline float round_bf16(float x) { return bf16_value(bf16_bits(x)); }

// d rounded ONCE to FP16 (nearest even), as a float. float(d) first could land on an FP16 tie and round
// twice; instead d is rounded to odd at float precision (truncate, then set the last bit if inexact) and
// only then to nearest-even FP16: rounding to odd at ≥ 11 + 2 bits first makes the final rounding exact
// (Boldo & Melquiond 2008). Mask arithmetic: the conditions are data-dependent coin flips.
inline float round_fp16_from_double(double d) {
  const float f = static_cast<float>(d);
  const uint32_t away = std::fabs(static_cast<double>(f)) > std::fabs(d);
  const uint32_t inexact = static_cast<double>(f) != d;
  return round_fp16(std::bit_cast<float>((std::bit_cast<uint32_t>(f) - away) | inexact));
}

}  // namespace attnlab::formats
