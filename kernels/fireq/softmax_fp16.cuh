// attnlab kernels: the two instructions of FireQ §3.2.2's FP16 softmax (core/fireq/softmax_fp16.h is the contract;
// fireq_prefill_sm90.cu runs it) that cuda_fp16.h does not offer as they are needed; the rest (__floats2half2_rn,
// __hmax2, __hsub2_rn, __hadd2_rn, __low2float / __high2float) round to nearest even as the reference's FP16
// steps do. A thread's share of a warpgroup MMA accumulator — rows g and g + 8, columns 8n + 2t + {0, 1}
// (wgmma.cuh) — holds a column pair of one row as one __half2, the even column low (turbo_sas.cuh uses the
// same intrinsics).
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

namespace attnlab::kernels {

__device__ __forceinline__ uint32_t half2_bits(__half2 h) { return *reinterpret_cast<const uint32_t*>(&h); }

// 2^x per half on the SFU: ex2.approx.f16x2 (relative error ≤ 2⁻⁹·⁹, the PTX ISA's bound; subnormal results
// kept). cuda_fp16.h's h2exp2 computes in FP32 instead (two MUFU and conversions).
__device__ __forceinline__ __half2 half2_ex2(__half2 x) {
  uint32_t r;
  asm("ex2.approx.f16x2 %0, %1;\n" : "=r"(r) : "r"(half2_bits(x)));
  return *reinterpret_cast<const __half2*>(&r);
}

#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 890
// Two half2 rounded to E4M3 (RNE, saturating) and packed: a's halves in bytes 0–1, b's in bytes 2–3 (the low
// half first), as fp8_pack.cuh's pack_e4m3x4 packs four floats. cvt's e4m3x2.f16x2 keeps each half's position.
__device__ __forceinline__ uint32_t pack_e4m3x4_half2(__half2 a, __half2 b) {
  uint16_t lo, hi;
  asm("cvt.rn.satfinite.e4m3x2.f16x2 %0, %1;\n" : "=h"(lo) : "r"(half2_bits(a)));
  asm("cvt.rn.satfinite.e4m3x2.f16x2 %0, %1;\n" : "=h"(hi) : "r"(half2_bits(b)));
  return uint32_t(lo) | (uint32_t(hi) << 16);
}
#endif

}  // namespace attnlab::kernels
