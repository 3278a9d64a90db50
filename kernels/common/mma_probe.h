// attnlab kernels: what a tensor core's FP16 MMA (mma.sync m16n8k16, FP32 accumulate) keeps of a sum. The
// kernels' error bounds assume an accumulation width (fireq decode's sm_90 form runs its E4M3 products through
// these MMAs: tests/kernels/fireq/test_fireq_decode_kernel.cpp, item 1); tests/kernels/common/test_mma_accumulation.cpp
// measures it on the GPU at hand.
#pragma once

#include <cuda_runtime.h>

namespace attnlab::kernels {

// D[0][0] of one m16n8k16 FP16 MMA on the current device: c + Σ_k a[k]·b[k], A's row 0 and B's column 0 (every
// other operand 0), a and b rounded to FP16 first (exact for the powers of two the test passes).
cudaError_t mma_f16_row_dot(const float (&a)[16], const float (&b)[16], float c, float& d);

}  // namespace attnlab::kernels
