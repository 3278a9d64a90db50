// Where flash2's TMA-store epilogue (kernels/common/tma_store.cuh's stage_rows_sw128) puts O, by the arithmetic of
// kernels/common/stmatrix_layout.h, checked against what the hardware does with it: stmatrix.x4 emulated as PTX defines
// it (register k of lane L holds row L/4, columns 2(L mod 4) and + 1 of matrix k; lane L gives the address of row L mod
// 8 of matrix L/8), the registers filled as the kernel fills them from the wgmma accumulator (lane 4g + t of warp w
// holds o[4c + 2i + e] = element (w·16 + g + 8i, 8c + 2t + e)). Every element of a warpgroup's 64 rows must land once,
// at the byte where a TMA load of the same map puts it (64-column boxes, 128-byte swizzle: row r, column x at block
// x/64, byte r·128 + ((x mod 64)/8 ⊕ r mod 8)·16 + (x mod 8)·2), and no stmatrix may hit a bank twice within one
// matrix (its eight 16-byte rows in eight different 16-byte columns of the 128-byte bank line).
#include "kernels/common/stmatrix_layout.h"
#include "tests/catch.h"

#include <cstdint>
#include <set>
#include <vector>

namespace attnlab::kernels {
namespace ATTNLAB_FILE_LOCAL {

// The TMA layout written out from its definition, not from staged_offset.
uint32_t tma_byte(int row, int col, uint32_t block_stride) {
  return uint32_t(col / 64) * block_stride + uint32_t(row) * 128u + uint32_t((((col % 64) / 8) ^ (row % 8)) * 16) +
         uint32_t((col % 8) * 2);
}

TEST_CASE("stmatrix layout: every element of O where a TMA store of Q's map reads it") {
  for (int d : {64, 128})
    for (uint32_t block_stride : {64u * 128u, 128u * 128u}) {  // a 64-row tile alone, or a warpgroup's rows of Q's 128
      INFO("d=" << d << " block_stride=" << block_stride);
      std::vector<int> landed(size_t(64) * d, 0);
      bool all_in_place = true, no_conflict = true;
      for (int warp = 0; warp < 4; ++warp)
        for (int n = 0; n < d / 8; n += 2) {
          for (int matrix = 0; matrix < 4; ++matrix) {
            std::set<uint32_t> bank_columns;
            for (int r = 0; r < 8; ++r) {
              const int addressing_lane = 8 * matrix + r;
              const StmatrixRow at = stmatrix_x4_row(warp, addressing_lane, n);
              const uint32_t address = staged_offset(at.row, at.chunk, block_stride);
              bank_columns.insert((address / 16) % 8);
              for (int x = 0; x < 8; ++x) {  // column x of matrix row r: lane 4r + x/2's register `matrix`, half x%2
                const int lane = 4 * r + x / 2, g = lane / 4, t = lane % 4, e = x % 2;
                const StmatrixPair pair = stmatrix_x4_pair(matrix, n);
                const int row = warp * 16 + g + 8 * pair.i, col = 8 * pair.c + 2 * t + e;  // o[4c + 2i + e]
                all_in_place = all_in_place && address + uint32_t(2 * x) == tma_byte(row, col, block_stride);
                ++landed[size_t(row) * d + col];
              }
            }
            no_conflict = no_conflict && bank_columns.size() == 8;
          }
        }
      CHECK(all_in_place);
      CHECK(no_conflict);
      int once = 0;
      for (int count : landed) once += count == 1;
      CHECK(once == 64 * d);
    }
}

TEST_CASE("stmatrix layout: a pair and a row that the accumulator does not hold are told apart") {
  // The test above would pass for a layout that swapped the matrices' roles consistently in both functions; these pin
  // PTX's order: matrix 1 is the rows 8 below matrix 0 (the accumulator's second row half), matrix 2 the next chunk.
  CHECK(stmatrix_x4_pair(1, 4).i == 1);
  CHECK(stmatrix_x4_pair(1, 4).c == 4);
  CHECK(stmatrix_x4_pair(2, 4).i == 0);
  CHECK(stmatrix_x4_pair(2, 4).c == 5);
  CHECK(stmatrix_x4_row(2, 9, 0).row == 2 * 16 + 8 + 1);  // lane 9: matrix 1's row 1
  CHECK(stmatrix_x4_row(2, 17, 6).chunk == 7);            // lane 17: matrix 2, the next chunk
  CHECK(staged_offset(3, 9, 16384) == 16384 + 3 * 128 + ((1 ^ 3) * 16));
}

}  // namespace ATTNLAB_FILE_LOCAL
}  // namespace attnlab::kernels
