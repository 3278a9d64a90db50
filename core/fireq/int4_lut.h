// attnlab core, FireQ §3.1.1 Step 1: the 16-entry lookup table that turns one token's INT4 codes into the
// FP8 E4M3 operands the tensor core multiplies (fireq's int4_to_fp8 = lut; used by fireq_cache.cpp). The
// GPU kernel's INT4 → E4M3 conversions are tested against int4_fp8_lut. Readable ground truth.
//
// For one token's stored scale σ (token_int4.h: an E4M3 value, or an FP32 value under scale_format =
// fp32), entry [c + 8] for each code c ∈ [−8, 7] is
//   LUT[c] = formats::round_fp8(float(c) · σ, Fp8::e4m3, Overflow::saturate)
// that is:
//   1. the product float(c) · σ in FP32 (exact for an E4M3 σ: 4 + 4 significant bits; rounded once to
//      nearest even for an FP32 σ, so an FP32 σ's entry is rounded twice: FP32, then E4M3);
//   2. that float to E4M3 by round-to-nearest-even with saturation (fp8.h; the rule of CUDA's
//      cvt.rn.satfinite.e4m3x2.f32): |c·σ| > 464 gives ±448 (464 itself rounds to 448, the even
//      neighbour); |c·σ| ≤ 2⁻¹⁰ gives ±0 with the product's sign (so c < 0 with σ = 0 gives −0.0);
//      subnormals k·2⁻⁹ between.
// Rounding is sign-symmetric, so LUT[−c] = −LUT[c] for c ∈ [1, 7]; LUT[0] = +0 for σ ≥ 0; LUT[−8] has no
// positive partner.
//
// A "LUT event" is an entry that lost its code's information beyond rounding: |float(c)·σ| > 464
// (saturated to ±448), or c ≠ 0 with LUT[c] = ±0 (flushed to zero). The fireq reference counts the
// elements whose entry is an event (probe `clamped`'s k_lut, v_lut).
#pragma once

#include <array>

namespace attnlab::fireq {

// [c + 8] = LUT[c] for c ∈ [−8, 7] (E4M3 values held in floats).
std::array<float, 16> int4_fp8_lut(float sigma);

// [c + 8] = whether LUT[c] of int4_fp8_lut(sigma) is a LUT event.
std::array<bool, 16> int4_fp8_lut_events(float sigma);

}  // namespace attnlab::fireq
