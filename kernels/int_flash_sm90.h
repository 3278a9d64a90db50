// attnlab kernels: the `int_flash` kernel's Hopper path — the same function as int_flash.h's, on
// warpgroup MMA (wgmma, sm_90a) with flash2_sm90's pipeline, at d = 64 and 128. int_flash_forward picks it by
// itself where it applies (KernelPath::automatic).
#pragma once

#include "kernels/int_flash.h"

namespace attnlab::kernels {

bool int_flash_sm90_supports(int head_dim);  // 64 and 128

// Launches on `stream`; returns the launch error.
cudaError_t int_flash_sm90_forward(const IntFlashArgs& a, cudaStream_t stream);

}  // namespace attnlab::kernels
