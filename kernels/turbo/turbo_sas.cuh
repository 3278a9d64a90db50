// attnlab kernels: the exponential of TurboAttention's softmax on the GPU — SAS (§4, Eq. 13–15: LUT ×
// cubic, threshold n_r; core/sas.cpp's FP32 kernel, bit for bit for finite t and −∞) or 2^(t·log₂e) on the
// SFU — shared by the decode (turbo_decode.cu) and prefill (turbo_prefill_sm90.cu) kernels.
#pragma once

#include "kernels/common/mma.cuh"
#include "kernels/turbo/turbo_decode.h"

#include <cuda_fp16.h>

namespace attnlab::kernels {

// The exponential of the softmax: SAS (core/sas.cpp's Fp32Kernel, bit for bit for finite t and −∞) or
// 2^(t·log₂e) on the SFU.
// EXACT is a template parameter: as a run-time flag the compiler evaluated both exponentials per score and
// selected (v1: one MUFU.EX2, a select and a branch per score beside SAS).
template <bool EXACT>
struct Exp {
  const float* lut;  // shared memory, 31 entries
  int x_max_bits;    // FP32 bits of −n_r
  float c0, c1, c2, c3;

  __device__ __forceinline__ float operator()(float t) const {
    if constexpr (EXACT) return ex2(__fmul_rn(t, 1.4426950408889634f));
    const int x_bits = __float_as_int(-t);
    const float x = __int_as_float(min(max(x_bits, 0), x_max_bits));  // clamp(−t, 0, −n_r) on the bits
    // ⌊x⌋ for 0 ≤ x ≤ 30: round to nearest through 1.5·2²³, step back where that rounded up.
    const float big = __fadd_rn(x, kMagic);
    const float near = __fsub_rn(big, kMagic);
    const int up = near > x ? 1 : 0;
    const float x_int = __fsub_rn(near, float(up));
    const int idx = (__float_as_int(big) - kMagicBits) - up;
    const float x_dec = __fsub_rn(x, x_int);                                  // exact
    const float poly = __fmaf_rn(__fmaf_rn(__fmaf_rn(c3, x_dec, c2), x_dec, c1), x_dec, c0);  // Eq. 15
    const float v = __fmul_rn(lut[idx], poly);                                // Eq. 13
    return x_bits <= x_max_bits ? v : 0.0f;                                   // Eq. 14
  }
};

template <bool EXACT>
__device__ __forceinline__ Exp<EXACT> make_exp(const TurboExpArgs& e, const float* lut) {
  return Exp<EXACT>{lut, __float_as_int(float(-e.n_r)), e.c[0], e.c[1], e.c[2], e.c[3]};
}

// The shared-memory LUT the non-positive forms below read: core/sas.cpp's 31 entries and lut[31] = 0, where
// a score below the threshold n_r lands (Eq. 14 by the table, no select on the result).
inline constexpr int kSasLutEntries = 32;
inline constexpr float kSasZeroSlot = 31.0f;  // x for t < n_r: ⌊x⌋ = 31 → 0, x_dec = 0

// lut's shared-memory address at index ⌊x⌋, taken from the bits of ⌊x⌋ + 1.5·2²³ (one LEA, no conversion):
// `base` is lut's address minus kMagicBits·size (mod 2³²).
__device__ __forceinline__ uint32_t sas_lut_addr(float x_int, uint32_t base, uint32_t size) {
  return uint32_t(__float_as_int(__fadd_rn(x_int, kMagic))) * size + base;
}
__device__ __forceinline__ uint32_t sas_lut_base(const void* lut, uint32_t size) {
  return smem_addr(lut) - uint32_t(kMagicBits) * size;
}

// SAS in FP32 on the prefill's domain t ≤ 0 (t = S − m with m the running maximum of the same scores, so
// fl(S − m) ≤ 0 exactly, and α's m_old − m_new ≤ 0) and t = −∞: Exp<false>'s value — core/sas.cpp's
// Fp32Kernel, bit for bit — in 11 instructions where the general form takes about 20 (turbo prefill v2):
//   x = −t for t ≥ n_r, which on this domain is the reference's clamp(−t, 0, −n_r) itself (−0 → +0 below:
//   ⌊−0⌋ = −0, x_dec = −0 − (−0) = +0, the LUT index 0 — the same value as x = +0); t < n_r and −∞ take
//   x = 31, whose LUT entry is 0 and whose x_dec is 0, so the result is +0 as Eq. 14's select gives it;
//   ⌊x⌋ by FRND.FLOOR (x ≥ 0: the reference's truncation), x_dec = x − ⌊x⌋ exact, POLY (Eq. 15, Horner),
//   the product with the LUT entry (Eq. 13). tests/kernels/turbo/test_turbo_prefill_kernel.cpp holds it to the
//   reference over every score of its cases; NaN never reaches it (masked scores are −∞).
struct SasNonPositive {
  uint32_t lut_base;  // sas_lut_base(lut, 4)
  float n_r;
  float c0, c1, c2, c3;

  __device__ __forceinline__ float operator()(float t) const {
    const float x = t >= n_r ? -t : kSasZeroSlot;
    const float x_int = floorf(x);
    const float x_dec = __fsub_rn(x, x_int);                                                   // exact
    const float poly = __fmaf_rn(__fmaf_rn(__fmaf_rn(c3, x_dec, c2), x_dec, c1), x_dec, c0);  // Eq. 15
    float lut;
    asm("ld.shared.f32 %0, [%1];" : "=f"(lut) : "r"(sas_lut_addr(x_int, lut_base, 4)));
    return __fmul_rn(lut, poly);  // Eq. 13 (Eq. 14 by lut[31] = 0)
  }
};

// `lut` in shared memory with kSasLutEntries entries, lut[31] = 0.
__device__ __forceinline__ SasNonPositive make_sas_non_positive(const TurboExpArgs& e, const float* lut) {
  return SasNonPositive{sas_lut_base(lut, 4), float(e.n_r), e.c[0], e.c[1], e.c[2], e.c[3]};
}

// SAS in FP16 (sas_precision fp16; core/sas.cpp's Fp16Kernel, bit for bit) on the prefill's domain t ≤ 0 and
// −∞ (SasNonPositive's argument): x = −t and ⌊x⌋ in FP32, x_dec rounded once to FP16, POLY by three FP16 FMAs,
// the product with the FP16 LUT entry rounded once to FP16 — two scores at a time, as FP16x2 (HFMA2: the
// paper's "FP16 FMA units"). t < n_r takes x = 31, whose FP16 LUT entry is 0 (0 × POLY = +0, the reference's
// 0); the two LUT addresses come from ⌊x⌋'s bits (no F2I, no select on the result).
struct Sas16NonPositive {
  uint32_t lut_base;  // sas_lut_base(lut16, 2)
  float n_r;
  __half2 c0, c1, c2, c3;

  __device__ __forceinline__ float2 operator()(float t0, float t1) const {
    const float x0 = t0 >= n_r ? -t0 : kSasZeroSlot, x1 = t1 >= n_r ? -t1 : kSasZeroSlot;
    const float i0 = floorf(x0), i1 = floorf(x1);
    const __half2 xd = __floats2half2_rn(__fsub_rn(x0, i0), __fsub_rn(x1, i1));
    const __half2 poly = __hfma2(__hfma2(__hfma2(c3, xd, c2), xd, c1), xd, c0);  // Eq. 15
    unsigned short l0, l1;
    asm("ld.shared.u16 %0, [%1];" : "=h"(l0) : "r"(sas_lut_addr(i0, lut_base, 2)));
    asm("ld.shared.u16 %0, [%1];" : "=h"(l1) : "r"(sas_lut_addr(i1, lut_base, 2)));
    const __half2 lut = __halves2half2(__ushort_as_half(l0), __ushort_as_half(l1));
    return __half22float2(__hmul2(lut, poly));  // Eq. 13, rounded once to FP16 (Eq. 14 by lut16[31] = 0)
  }
  __device__ __forceinline__ float operator()(float t) const { return (*this)(t, t).x; }
};

// `lut16` in shared memory with kSasLutEntries entries, lut16[31] = 0.
__device__ __forceinline__ Sas16NonPositive make_sas16_non_positive(const TurboExpArgs& e, const __half* lut16) {
  return Sas16NonPositive{sas_lut_base(lut16, 2), float(e.n_r), __float2half2_rn(e.c16[0]), __float2half2_rn(e.c16[1]),
                          __float2half2_rn(e.c16[2]), __float2half2_rn(e.c16[3])};
}

}  // namespace attnlab::kernels
