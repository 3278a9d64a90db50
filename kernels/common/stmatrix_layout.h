// attnlab kernels: where tma_store.cuh's stage_rows_sw128 puts a warp's rows of O — plain arithmetic that the kernel
// and the host tests both compile (tests/kernels/common/test_stmatrix_layout.cpp emulates stmatrix with it).
//
// The accumulator (wgmma m64nN, wgmma.cuh): lane L = 4g + t of warp w holds o[4c + 2i + e] = element (w·16 + g + 8i,
// 8c + 2t + e) of the warpgroup's 64 rows, c the column chunk (8 columns), i, e ∈ {0, 1}. One stmatrix.x4 (PTX ISA,
// "stmatrix") writes four 8×8 matrices of 16-bit values: register k of lane L holds row L/4, columns 2(L mod 4) and
// + 1 of matrix k, and lane L gives the address of row L mod 8 of matrix L/8. So register k carries the pair (i, c) =
// (k mod 2, n + k/2) of the accumulator — the matrix's rows are g + 8i, its columns chunk c — and the lane addresses
// the row and chunk below.
#pragma once

#include "core/host_device.h"
#include "kernels/common/wgmma_descriptor.h"

#include <cstdint>

namespace attnlab::kernels {

// Register k of one stmatrix.x4 at column chunks n, n + 1 (n even): the accumulator's row half i and chunk c.
struct StmatrixPair {
  int i, c;
};
ATTNLAB_HD constexpr StmatrixPair stmatrix_x4_pair(int k, int n) { return {k & 1, n + k / 2}; }

// The row (of the warpgroup's 64) and the column chunk whose 16 bytes lane `lane` of warp `warp` addresses.
struct StmatrixRow {
  int row, chunk;
};
ATTNLAB_HD constexpr StmatrixRow stmatrix_x4_row(int warp, int lane, int n) {
  const int matrix = lane / 8;
  return {warp * 16 + 8 * (matrix & 1) + lane % 8, n + matrix / 2};
}

// Byte offset of (row, column chunk) in a staged tile: 64-column blocks block_stride bytes apart, each 128-byte
// rows in the 128-byte swizzle — the layout a TMA load of a 64-column box with that swizzle writes.
ATTNLAB_HD constexpr uint32_t staged_offset(int row, int chunk, uint32_t block_stride) {
  return uint32_t(chunk / 8) * block_stride + sw128_offset(row, chunk % 8);
}

}  // namespace attnlab::kernels
