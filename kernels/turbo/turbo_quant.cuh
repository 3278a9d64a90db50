// attnlab kernels: TurboAttention's INT8 quantization steps as every turbo kernel computes them — the scale
// max/119 (Alg. 1 l. 7, 8, 10; §3.3) and P̃'s codes (Alg. 1 l. 10, Alg. 2 l. 7) — the reference's numbers
// (core/quant/quantize.cpp), for the decode (turbo_decode.cu), the pre-pass (turbo_cache_write.cu) and the
// prefill attention (turbo_prefill_sm90.cu).
#pragma once

#include "kernels/common/mma.cuh"

#include <cuda_fp16.h>

#include <cfloat>
#include <cstdint>

namespace attnlab::kernels::turbo_quant {

inline constexpr float kQMax8 = 119.0f;  // Alg. 1 / Alg. 2: INT8 values quantized with max/119

// An input element's value in FP32 — the prefill's Q/K/V arrive in FP32 or FP16 (the pre-pass and the head ranking
// read either; FP16 → FP32 is exact).
__device__ __forceinline__ float input_value(float x) { return x; }
__device__ __forceinline__ float input_value(__half x) { return __half2float(x); }

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
// ballot). rne(y) by 1.5·2²³: p_code_bits gives each code as the bits of code + 1.5·2²³, whose low byte is
// the code (what the MMA's A fragment packs, turbo_prefill_sm90.cu), p_codes the code. N ≤ 32.
template <int N>
__device__ __forceinline__ void p_code_bits(const float* p, float sp, int* bits) {
  static_assert(N <= 32, "one bit per value");
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(sp));
  bool near_half = false;
#pragma unroll
  for (int e = 0; e < N; ++e) {
    const float y = __fmul_rn(p[e], r);
    const float big = __fadd_rn(y, kMagic);
    bits[e] = __float_as_int(big);
    // "Within 2⁻¹⁵ of a half-integer": |y − rne(y)| > ½ − 2⁻¹⁵ (|y − rne(y)| is exact; the set is the
    // one fl(½ − |y − rne(y)|) < 2⁻¹⁵ gives, that subtraction being exact for |·| ≥ ¼ by Sterbenz), one
    // compare folded into the running predicate.
    near_half |= fabsf(__fsub_rn(y, __fsub_rn(big, kMagic))) > 0.499969482421875f;
  }
  if (__any_sync(0xffffffffu, near_half)) {
#pragma unroll
    for (int e = 0; e < N; ++e) {
      const float y = __fmul_rn(p[e], r);
      if (fabsf(__fsub_rn(y, __fsub_rn(__fadd_rn(y, kMagic), kMagic))) > 0.499969482421875f)
        bits[e] = __float2int_rn(__fdiv_rn(p[e], sp)) + kMagicBits;
    }
  }
}

// The codes themselves, for the kernels that add or compare them (turbo_decode.cu).
template <int N>
__device__ __forceinline__ void p_codes(const float* p, float sp, int* codes) {
  p_code_bits<N>(p, sp, codes);
#pragma unroll
  for (int e = 0; e < N; ++e) codes[e] -= kMagicBits;
}

}  // namespace attnlab::kernels::turbo_quant
