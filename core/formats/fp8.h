// attnlab core: OCP 8-bit floating point (FP8 E4M3 and E5M2), bit-exact, round-to-nearest-even.
//
// The formats (OCP "8-bit Floating Point Specification" v1.0):
//   E4M3: 1 sign, 4 exponent (bias 7), 3 mantissa bits; subnormals (k·2⁻⁹); NO infinities; NaN is
//         S.1111.111 only; max ±448 = S.1111.110; smallest normal 2⁻⁶.
//   E5M2: 1 sign, 5 exponent (bias 15), 2 mantissa bits; IEEE-like: subnormals (k·2⁻¹⁶), ±inf =
//         S.11111.00, NaN = S.11111.{01,10,11}; max ±57344 = S.11110.11; smallest normal 2⁻¹⁴.
//
// Encoding (fp8_bits) is the rule of CUDA's __nv_cvt_float_to_fp8 (cuda_fp8.hpp) — on sm_89+ with
// __NV_SATFINITE that is the instruction cvt.rn.satfinite.{e4m3,e5m2}x2.f32 — case by case:
//   NaN                          → 0x7F, sign dropped (the host path canonicalizes every NaN to
//                                  0x7FFFFFFF first; satfinite maps NaN to NaN, never to max). For E4M3
//                                  0x7F is the NaN, for E5M2 it is a quiet NaN (S.11111.11).
//   |x| ≤ half the smallest      → ±0 (the tie at exactly half rounds to even, i.e. to 0); the sign of
//     subnormal (2⁻¹⁰ / 2⁻¹⁷)      zero is kept, so −0 → 0x80.
//   subnormal and normal range   → round to nearest, ties to even, on the exact value.
//   overflow                     → Overflow::saturate (satfinite): ±max; Overflow::special (CUDA's
//                                  __NV_NOSAT): E5M2 ±inf, E4M3 S.1111.111 (NaN, sign kept).
// The overflow boundary is the midpoint between max and the value one ulp above it, i.e. the point
// where round-to-nearest-even with an unbounded exponent would first leave the finite range:
//   E4M3: max 448 = 1.110₂·2⁸, next would-be value 480 = 1.111₂·2⁸ (the NaN code), midpoint 464.
//         The tie goes to the even mantissa 110 (448), so |x| ≤ 464 stays finite and |x| > 464
//         overflows.
//   E5M2: max 57344 = 1.11₂·2¹⁵, next would-be value 65536 = 1.00₂·2¹⁶ (the inf code), midpoint 61440.
//         The tie goes to the even mantissa 00 (65536), so |x| < 61440 stays finite and |x| ≥ 61440
//         overflows — the same rule as FP16's 65520.
// ±inf input counts as an overflow: ±max under saturate, ±inf (E5M2) / NaN (E4M3) under special.
//
// Decoding (fp8_value) is exact; NaN codes give a quiet NaN.
//
// Checked once against the hardware on an H100 (CUDA 13): fp8_bits(x, f, saturate) equals
// __nv_cvt_float_to_fp8(x, __NV_SATFINITE, f) — i.e. cvt.rn.satfinite — for all 2³² FP32 bit patterns
// in both formats (NaN of either sign → 0x7F there too), and fp8_value equals the hardware decode
// (cvt.rn.f16x2.e4m3x2 / e5m2x2) for all 256 codes.
#pragma once

#include <cstdint>

namespace attnlab::formats {

enum class Fp8 { e4m3, e5m2 };
enum class Overflow { saturate, special };  // special: E5M2 → ±inf, E4M3 → NaN (OCP: E4M3 has no inf)

inline constexpr float kE4M3Max = 448.0f, kE5M2Max = 57344.0f;

uint8_t fp8_bits(float x, Fp8 f, Overflow o = Overflow::saturate);  // round-to-nearest-even
float fp8_value(uint8_t bits, Fp8 f);
float round_fp8(float x, Fp8 f, Overflow o = Overflow::saturate);  // = fp8_value(fp8_bits(x, f, o), f)

// x (n) ← round_fp8(x, f, o) elementwise (NaN stays a NaN). A branch-free loop in the value domain
// that the compiler vectorizes; tested equal to round_fp8 on every code, midpoint and random patterns.
void round_fp8_inplace(float* x, int64_t n, Fp8 f, Overflow o = Overflow::saturate);

}  // namespace attnlab::formats
