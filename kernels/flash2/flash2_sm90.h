// attnlab kernels: the `flash2` kernel's Hopper path — the same function as flash2.h's, on warpgroup MMA
// (wgmma, sm_90a) with FlashAttention-3's pipeline, for prefill (no KV split): a TMA producer warpgroup and two
// consumer warpgroups in ping-pong (v2, flash2.h's tma_producer), or every thread's cp.async (v1); the same bits.
// flash2_forward picks it by itself where it applies (KernelPath::automatic).
#pragma once

#include "kernels/flash2/flash2.h"

namespace attnlab::kernels {

// Launches on `stream` (a.splits must be 1; d ∈ {64, 128}); returns the launch error.
cudaError_t flash2_sm90_forward(const Flash2Args& a, cudaStream_t stream);

}  // namespace attnlab::kernels
