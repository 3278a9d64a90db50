// attnlab kernels: TurboAttention's INT8 quantization steps as every turbo kernel computes them — the scale
// max/119 (Alg. 1 l. 7, 8, 10; §3.3) and P̃'s codes (Alg. 1 l. 10, Alg. 2 l. 7) — the reference's numbers
// (core/quant/quantize.cpp), for the decode (turbo_decode.cu), the pre-pass (turbo_cache_write.cu) and the
// prefill attention (turbo_prefill_sm90.cu).
#pragma once

#include "kernels/mma.cuh"

#include <cfloat>
#include <cstdint>

namespace attnlab::kernels::turbo_quant {

inline constexpr float kQMax8 = 119.0f;  // Alg. 1 / Alg. 2: INT8 values quantized with max/119

// quant::scale_for_span(span, 119): fl(span / 119), or 1 below the smallest normal float.
__device__ __forceinline__ float scale_for_span(float span) {
  const float s = __fdiv_rn(span, kQMax8);
  return s >= FLT_MIN ? s : 1.0f;
}

// Q(P̃) = ⌈fl(P̃ / s_P)⌋ ∈ [0, 119] for the N values p (each ≤ max P̃, s_P = scale_for_span(max P̃)), as the
// reference divides — through a reciprocal r̃ of s_P: y = fl(P̃·r̃) against q = P̃ / s_P < 120. r̃ is the SFU's
// rcp.approx, within 1 ulp, a relative 2⁻²³, of 1/s_P (PTX ISA; s_P ≥ FLT_MIN, so no input or result is
// subnormal); y's own rounding adds 2⁻²⁴ and fl(q)'s 2⁻²⁴, so |y − fl(q)| ≤ q·2⁻²² < 120·2⁻²² = 2.86·10⁻⁵.
// Where y lies farther than 2⁻¹⁵ = 3.05·10⁻⁵ from every half-integer, y and fl(q) round to the same integer;
// the few that lie closer (about 2⁻¹⁴ of them) take the exact division, the warp together (the test is a
// ballot). rne(y) by 1.5·2²³. N ≤ 32.
template <int N>
__device__ __forceinline__ void p_codes(const float* p, float sp, int* codes) {
  static_assert(N <= 32, "one bit per value");
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(sp));
  uint32_t near_half = 0;
#pragma unroll
  for (int e = 0; e < N; ++e) {
    const float y = __fmul_rn(p[e], r);
    const float big = __fadd_rn(y, kMagic);
    codes[e] = __float_as_int(big) - kMagicBits;
    const float off = fabsf(__fsub_rn(y, __fsub_rn(big, kMagic)));  // |y − rne(y)| ≤ ½, exact
    if (__fsub_rn(0.5f, off) < 3.0517578125e-05f) near_half |= 1u << e;
  }
  if (__any_sync(0xffffffffu, near_half != 0)) {
#pragma unroll
    for (int e = 0; e < N; ++e)
      if ((near_half >> e) & 1u) codes[e] = __float2int_rn(__fdiv_rn(p[e], sp));
  }
}

}  // namespace attnlab::kernels::turbo_quant
