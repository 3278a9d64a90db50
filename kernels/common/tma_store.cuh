// attnlab kernels: O through shared memory and out by TMA (sm_90) — FlashAttention-3's epilogue. A warpgroup writes
// its rows of O, rounded to FP16, into a tile of shared memory in the 128-byte swizzle with stmatrix, and one of its
// threads has the copy engine store the tile (cp.async.bulk.tensor, a bulk group): the SM's threads leave as soon as
// the engine has read the tile, where 4-byte stores from registers (tile_softmax.cuh's store_rows: each warp's
// instruction 8 rows × 16 bytes) would keep them issuing. The generic proxy writes the tile and the async proxy
// reads it, so each writer fences (wgmma.cuh's fence_proxy_async) before the warpgroup's barrier and the store.
#pragma once

#include "kernels/common/stmatrix_layout.h"
#include "kernels/common/tile_softmax.cuh"
#include "kernels/common/wgmma.cuh"

#include <cuda.h>  // CUtensorMap

#include <cstdint>

namespace attnlab::kernels {

// Four 8×8 matrices of 16-bit values from the warp's registers to shared memory: r[k] of lane L holds row L/4,
// columns 2(L mod 4) and + 1 of matrix k (an MMA accumulator's pair); lane L gives the address of row L mod 8 of
// matrix L/8 (16 bytes, 16-byte aligned).
__device__ __forceinline__ void stmatrix_x4(void* dst, const uint32_t (&r)[4]) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(smem_addr(dst)), "r"(r[0]),
               "r"(r[1]), "r"(r[2]), "r"(r[3])
               : "memory");
}

// The box of `map` at element coordinates (x, y, z) — x the innermost — from shared memory at `src` (in the map's
// swizzle) into global memory, in this thread's bulk group. What lies outside the tensor is not written.
__device__ __forceinline__ void tma_store_3d(const CUtensorMap* map, const void* src, int x, int y, int z) {
  asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group [%0, {%2, %3, %4}], [%1];\n" ::"l"(
                   reinterpret_cast<uint64_t>(map)),
               "r"(smem_addr(src)), "r"(x), "r"(y), "r"(z)
               : "memory");
}
// The thread's stores so far closed as one bulk group; then the wait until every group has read its shared memory
// (the tile may be written again, or the CTA leave; the global writes complete on their own, before the grid does).
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
__device__ __forceinline__ void bulk_wait_read() { asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory"); }

// tile_softmax.cuh's store_rows with O in FP16 into shared memory instead of O's rows: a warp's 16 rows (warp·16 + g
// + 8i of a 64-row tile) of each 64-column block in the 128-byte swizzle (stmatrix_layout.h's staged_offset; block c at
// tile + c·block_stride) — the layout a TMA load of the tile writes, so a TMA store of the same map reads it back. The
// same operations on the same values as store_rows (ℓ summed over the quad, G·(1/ℓ) or G/ℓ, times out_scale, rounded
// to nearest even): the same bits. One stmatrix writes four 8×8 matrices, the accumulator's pairs of chunks n and n + 1
// (stmatrix_layout.h); a matrix's eight rows lie in eight different chunks of the swizzle, so no bank is hit twice.
// Every row is written (past q_len: a TMA store clips them); L goes to `lse` for rows < q_len.
template <int D, RowScale kRowScale>
__device__ __forceinline__ void stage_rows_sw128(const float (&o)[D / 2], float (&l)[2], const float (&m)[2],
                                                 int row0, int warp, int lane, int q_len, char* tile,
                                                 uint32_t block_stride, float* lse, float out_scale, float log_offset) {
  constexpr float kLog2e = 1.4426950408889634f;
  bool empty[2];
  float inv_l[2];
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    l[i] += __shfl_xor_sync(0xffffffffu, l[i], 1);
    l[i] += __shfl_xor_sync(0xffffffffu, l[i], 2);
    empty[i] = !(l[i] > 0.f);
    inv_l[i] = kRowScale == RowScale::reciprocal && !empty[i] ? 1.f / l[i] : 0.f;
  }
  auto scaled = [&](int i, float g) {
    return empty[i] ? 0.f : (kRowScale == RowScale::reciprocal ? g * inv_l[i] : g / l[i]) * out_scale;
  };
#pragma unroll
  for (int n = 0; n < D / 8; n += 2) {
    uint32_t r[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const StmatrixPair pair = stmatrix_x4_pair(k, n);
      r[k] = pack_half2(scaled(pair.i, o[4 * pair.c + 2 * pair.i]), scaled(pair.i, o[4 * pair.c + 2 * pair.i + 1]));
    }
    const StmatrixRow at = stmatrix_x4_row(warp, lane, n);
    stmatrix_x4(tile + staged_offset(at.row, at.chunk, block_stride), r);
  }
#pragma unroll
  for (int i = 0; i < 2; ++i)
    if (lane % 4 == 0 && row0 + 8 * i < q_len)
      lse[row0 + 8 * i] = empty[i] ? -INFINITY : (m[i] + log2f(l[i])) / kLog2e - log_offset;
}

}  // namespace attnlab::kernels
