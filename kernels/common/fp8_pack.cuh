// attnlab kernels: FP32 → E4M3 packing for the FP8 kernels (flash3_fp8, fireq decode and prefill): the
// conversion the references' formats::round_fp8 (round to nearest even, saturating) emulates. cvt's e4m3x2
// needs sm_89; other targets do not see it.
#pragma once

#include <cstdint>

namespace attnlab::kernels {

#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 890
// Four FP32 values rounded to E4M3 and packed, the first in the lowest byte. cvt's e4m3x2 puts its first
// source in the upper byte.
__device__ __forceinline__ uint32_t pack_e4m3x4(float b0, float b1, float b2, float b3) {
  uint16_t lo, hi;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;\n" : "=h"(lo) : "f"(b1), "f"(b0));
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;\n" : "=h"(hi) : "f"(b3), "f"(b2));
  return uint32_t(lo) | (uint32_t(hi) << 16);
}
#endif

}  // namespace attnlab::kernels
