// attnlab kernels: §3.1.1 Step 1 of FireQ — an INT4 code of a token with E4M3 scale σ becomes the FP8 operand
// LUT_σ[c] = FP8(c·σ) (the reference's fireq::int4_fp8_lut) by byte permutes through a 16-entry table — for
// the decode kernel (fireq_decode.cu) and the prefill kernel's INT4 mode (fireq_prefill_sm90.cu).
//
// σ is an E4M3 byte, so there are kFireqScales = 128 tables (σ ≥ 0; 0x7F, NaN, is never stored): a CTA builds
// them all once into 2 KB of shared memory (build_lut: one thread per scale, 16 entries by cvt.rn.satfinite
// from c·σ, exact in FP32), and a token's table is one 16-byte load indexed by its σ byte. lut_convert turns
// a word of 8 codes into 8 operand bytes: each nibble's low 3 bits index the positive half-table (c ∈ [0, 7])
// and the negative one (c ∈ [−8, −1]), and PRMT's sign-replicating mode turns each nibble's sign bit into a
// byte mask that picks between them — 11 instructions for 8 codes, no arithmetic on values. transpose4
// regroups 4 tokens' bytes when the operand's k runs along tokens (V), since σ differs per token.
#pragma once

#include "kernels/common/fp8_pack.cuh"

#include <cstdint>

namespace attnlab::kernels {

inline constexpr int kFireqScales = 128;  // E4M3 bytes of a scale σ ≥ 0

#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 890
__device__ __forceinline__ uint32_t prmt(uint32_t a, uint32_t b, uint32_t sel) {
  uint32_t d;
  asm("prmt.b32 %0, %1, %2, %3;\n" : "=r"(d) : "r"(a), "r"(b), "r"(sel));
  return d;
}

// E4M3 byte b < 0x7F as a float, exactly: (8 + m)·2^(e − 10), or m·2⁻⁹ for e = 0.
__device__ __forceinline__ float e4m3_value(uint32_t b) {
  const int e = int(b >> 3) & 0xF, m = int(b & 7);
  return e == 0 ? ldexpf(float(m), -9) : ldexpf(float(8 + m), e - 10);
}

// §3.1.1 Step 1's table of scale byte b: x = LUT[0..3], y = LUT[4..7] (c ≥ 0), z = LUT[−8..−5],
// w = LUT[−4..−1], the first entry of each in the lowest byte. c·σ is exact in FP32 (4 + 3 significant bits).
__device__ __forceinline__ uint4 build_lut(uint32_t b) {
  const float s = e4m3_value(b);
  auto quad = [&](int c) { return pack_e4m3x4(float(c) * s, float(c + 1) * s, float(c + 2) * s, float(c + 3) * s); };
  return make_uint4(quad(0), quad(4), quad(-8), quad(-4));
}

// The operand bytes of 8 codes (nibble k of w = code k) through table T: lo = codes 0–3, hi = codes 4–7.
// A nibble's low 3 bits index both half-tables (c and c + 8 for a negative c, its two's complement); PRMT
// with selector nibble 8 + i replicates bit 7 of byte i, so the mask of nibble k's sign bit comes from w
// (odd nibbles: bit 7 of their byte) and w << 4 (even nibbles: bit 3 moved to bit 7).
__device__ __forceinline__ void lut_convert(uint32_t w, const uint4& T, uint32_t& lo, uint32_t& hi) {
  const uint32_t idx = w & 0x77777777u, idx_hi = idx >> 16, w4 = w << 4;
  const uint32_t mask_lo = prmt(w4, w, 0xD9C8u);  // signs of nibbles 0, 1, 2, 3 (bytes 0, 4, 1, 5)
  const uint32_t mask_hi = prmt(w4, w, 0xFBEAu);  // nibbles 4, 5, 6, 7 (bytes 2, 6, 3, 7)
  const uint32_t pos_lo = prmt(T.x, T.y, idx), neg_lo = prmt(T.z, T.w, idx);
  const uint32_t pos_hi = prmt(T.x, T.y, idx_hi), neg_hi = prmt(T.z, T.w, idx_hi);
  lo = (pos_lo & ~mask_lo) | (neg_lo & mask_lo);
  hi = (pos_hi & ~mask_hi) | (neg_hi & mask_hi);
}

// r[i] holds 4 bytes of token i; afterwards r[m] holds byte m of tokens 0–3 (a 4×4 byte transpose).
__device__ __forceinline__ void transpose4(uint32_t (&r)[4]) {
  const uint32_t t0 = prmt(r[0], r[1], 0x5140u), t1 = prmt(r[0], r[1], 0x7362u);
  const uint32_t t2 = prmt(r[2], r[3], 0x5140u), t3 = prmt(r[2], r[3], 0x7362u);
  r[0] = prmt(t0, t2, 0x5410u), r[1] = prmt(t0, t2, 0x7632u);
  r[2] = prmt(t1, t3, 0x5410u), r[3] = prmt(t1, t3, 0x7632u);
}

#endif

}  // namespace attnlab::kernels
