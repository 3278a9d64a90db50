// attnlab kernels: the packed-FP16 instructions of FireQ §3.2.2's FP16 softmax (core/fireq/softmax_fp16.h is the
// contract; fireq_prefill_sm90.cu runs it) on one thread's share of a warpgroup MMA accumulator — rows g and
// g + 8, columns 8n + 2t + {0, 1} (wgmma.cuh): a column pair of one row is one half2, low half the even column.
// Every operation rounds to nearest even, as the reference's FP16 steps do, except ex2.approx.f16x2 (the PTX
// ISA bounds its relative error by 2⁻⁹·⁹; the [gpu] test allows it).
#pragma once

#include <cstdint>

namespace attnlab::kernels {

// Two FP32 values rounded to FP16 (RNE), `lo` in the low half. cvt.rn.f16x2.f32 puts its first source high.
__device__ __forceinline__ uint32_t half2_rn(float lo, float hi) {
  uint32_t r;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

// Element-wise maximum of two half2 (HMNMX2).
__device__ __forceinline__ uint32_t half2_max(uint32_t a, uint32_t b) {
  uint32_t r;
  asm("max.f16x2 %0, %1, %2;\n" : "=r"(r) : "r"(a), "r"(b));
  return r;
}

// a − b per half, rounded once to FP16 (HADD2 with b negated; .rn keeps it from fusing into an FMA).
__device__ __forceinline__ uint32_t half2_sub(uint32_t a, uint32_t b) {
  uint32_t r;
  asm("sub.rn.f16x2 %0, %1, %2;\n" : "=r"(r) : "r"(a), "r"(b));
  return r;
}

// a + b per half, rounded once to FP16 (HADD2; subnormals kept).
__device__ __forceinline__ uint32_t half2_add(uint32_t a, uint32_t b) {
  uint32_t r;
  asm("add.rn.f16x2 %0, %1, %2;\n" : "=r"(r) : "r"(a), "r"(b));
  return r;
}

// 2^x per half on the SFU (subnormal results kept).
__device__ __forceinline__ uint32_t half2_ex2(uint32_t x) {
  uint32_t r;
  asm("ex2.approx.f16x2 %0, %1;\n" : "=r"(r) : "r"(x));
  return r;
}

// The two halves as FP32 (exact).
__device__ __forceinline__ float half_lo(uint32_t h) {
  float f;
  asm("{.reg .f16 lo, hi;\n mov.b32 {lo, hi}, %1;\n cvt.f32.f16 %0, lo;}\n" : "=f"(f) : "r"(h));
  return f;
}
__device__ __forceinline__ float half_hi(uint32_t h) {
  float f;
  asm("{.reg .f16 lo, hi;\n mov.b32 {lo, hi}, %1;\n cvt.f32.f16 %0, hi;}\n" : "=f"(f) : "r"(h));
  return f;
}

#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 890
// Two half2 rounded to E4M3 (RNE, saturating) and packed: a's halves in bytes 0–1, b's in bytes 2–3 (the low
// half first). cvt's e4m3x2.f16x2 keeps each half's position.
__device__ __forceinline__ uint32_t pack_e4m3x4_half2(uint32_t a, uint32_t b) {
  uint16_t lo, hi;
  asm("cvt.rn.satfinite.e4m3x2.f16x2 %0, %1;\n" : "=h"(lo) : "r"(a));
  asm("cvt.rn.satfinite.e4m3x2.f16x2 %0, %1;\n" : "=h"(hi) : "r"(b));
  return uint32_t(lo) | (uint32_t(hi) << 16);
}
#endif

}  // namespace attnlab::kernels
