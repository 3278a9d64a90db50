// attnlab kernels: the `int_flash` kernel's Hopper path — the same function as int_flash.h's, on warpgroup MMA
// (wgmma, sm_90a) at d = 64 and 128, with FlashAttention-3's warp-specialized pipeline (a TMA producer warpgroup,
// flash3_fp8's) or, as IntFlashArgs' tma_producer asks, wgmma v2's cp.async one. int_flash_forward runs it when
// the path is warpgroup_mma (the backend asks for it where block_c = 128; `automatic` keeps mma.sync: int_flash.h).
#pragma once

#include "kernels/int8/int_flash.h"

namespace attnlab::kernels {

bool int_flash_sm90_supports(int head_dim);  // 64 and 128

// Launches on `stream`; returns the launch error.
cudaError_t int_flash_sm90_forward(const IntFlashArgs& a, cudaStream_t stream);

}  // namespace attnlab::kernels
