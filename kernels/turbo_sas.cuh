// attnlab kernels: the exponential of TurboAttention's softmax on the GPU — SAS (§4, Eq. 13–15: LUT ×
// cubic, threshold n_r; core/sas.cpp's FP32 kernel, bit for bit for finite t and −∞) or 2^(t·log₂e) on the
// SFU — shared by the decode (turbo_decode.cu) and prefill (turbo_prefill_sm90.cu) kernels.
#pragma once

#include "kernels/mma.cuh"
#include "kernels/turbo_decode.h"

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

}  // namespace attnlab::kernels
