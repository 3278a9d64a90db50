// attnlab kernels: the `flash2` kernel's Hopper path — the same function as flash2.h's, on warpgroup MMA
// (wgmma, sm_90a) with FlashAttention-3's pipeline, for prefill (no KV split): a TMA producer warpgroup and two
// consumer warpgroups in ping-pong (v2, flash2.h's tma_producer), or every thread's cp.async (v1); the same bits.
// flash2_forward picks it by itself where it applies (KernelPath::automatic).
#pragma once

#include "core/kernel_traits.h"
#include "core/persistent_order.h"
#include "kernels/flash2/flash2.h"

namespace attnlab::kernels {

// Launches on `stream` (a.splits must be 1; d ∈ {64, 128}); returns the launch error.
cudaError_t flash2_sm90_forward(const Flash2Args& a, cudaStream_t stream);

// FlashAttention-3's non-causal d 128 tile (core/kernel_traits.h's block_c_not_causal): the keys per K/V tile where
// flash2_sm90_wide_tile(a) holds.
inline constexpr int kWideTile = find_kernel_traits("flash2", 128, 90)->block_c_not_causal;
static_assert(kWideTile == 176, "S on the wide tile is one m64n176 accumulator (wgmma.cuh)");
// Whether a launch takes kWideTile-key tiles: a.wide_tile, the producer's loads, not causal, and a kernel row with
// the wide tile at a.head_dim (the rule of core/producer_loads.h's prefill_block_c on the launch's arguments).
bool flash2_sm90_wide_tile(const Flash2Args& a);

// Whether a launch runs persistent CTAs: a.persistent with the producer's loads (the cp.async pipeline has none).
bool flash2_sm90_persistent(const Flash2Args& a);
// The persistent CTAs' order of the row blocks (core/persistent_order.h): the w-th of blocks × B·Hq is batch·head bh's
// x-th row block, in bands of a.band_heads heads.
__host__ __device__ inline void flash2_sm90_persistent_order(const Flash2Args& a, int w, int blocks, int& bh, int& x) {
  persistent_row_block(a.batch * a.q_heads, a.band_heads, blocks, w, bh, x);
}
// Persistent CTAs (a.persistent): the batch·heads a band of the order holds on a GPU with `l2_bytes` of L2
// (core/persistent_order.h's persistent_band_heads).
int flash2_sm90_band_heads(const Flash2Args& a, int l2_bytes);

}  // namespace attnlab::kernels
