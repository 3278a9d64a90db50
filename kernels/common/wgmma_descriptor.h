// attnlab kernels: the 64-bit shared-memory matrix descriptor of a wgmma operand (PTX ISA, "Matrix Descriptor
// Format"), as plain arithmetic that the kernels (wgmma.cuh) and the host tests both compile: bits 0–13 the start
// address >> 4, 16–29 the leading byte offset >> 4, 32–45 the stride byte offset >> 4, 49–51 the base offset (0:
// the tiles' blocks are aligned to the swizzle's repeat), 62–63 the swizzle mode (1 = 128 B, 2 = 64 B, 3 = 32 B);
// and the byte offsets of the swizzles themselves (sw_offset), which the copies, TMA and the stmatrix epilogue share.
#pragma once

#include "core/host_device.h"

#include <cstdint>

namespace attnlab::kernels {

// Byte offset of 16-byte chunk `chunk` of row `row` inside one swizzled block W bytes wide (W = 128: the
// chunk's 3 index bits XOR row bits 0–2; W = 64, rows of 64 bytes: its 2 bits XOR row bits 1–2 — address
// bits 4–5 with 7–8, the 64-byte mode's pattern). Blocks start W·8-byte aligned.
template <int W>
ATTNLAB_HD constexpr uint32_t sw_offset(int row, int chunk) {
  static_assert(W == 128 || W == 64, "128- or 64-byte swizzle");
  if constexpr (W == 128) return uint32_t(row) * 128u + (uint32_t(chunk ^ (row & 7)) << 4);
  else return uint32_t(row) * 64u + (uint32_t(chunk ^ ((row >> 1) & 3)) << 4);
}
ATTNLAB_HD constexpr uint32_t sw128_offset(int row, int chunk) { return sw_offset<128>(row, chunk); }

// Shared memory's addresses lie below 2¹⁸ (228 KB a CTA on sm_90): the start field holds every one of them.
inline constexpr uint32_t kSharedAddressLimit = 1u << 18;

ATTNLAB_HD constexpr uint64_t wgmma_descriptor(uint32_t smem_address, uint32_t lbo_bytes, uint32_t sbo_bytes,
                                               uint32_t swizzle_mode) {
  return uint64_t((smem_address & (kSharedAddressLimit - 1)) >> 4) | (uint64_t((lbo_bytes >> 4) & 0x3FFFu) << 16) |
         (uint64_t((sbo_bytes >> 4) & 0x3FFFu) << 32) | (uint64_t(swizzle_mode) << 62);
}

// The descriptor of the operand `bytes` (a multiple of 16) further on: its start field plus bytes >> 4. A start that
// stays below kSharedAddressLimit never carries out of the 14-bit field, so the add touches the low word only — one
// integer add per wgmma where a descriptor built from the address again costs a mask, a shift and an OR
// (flash3_fp8_sm90.cu and fireq_prefill_sm90.cu add the offset to the whole 64-bit descriptor, FlashAttention-3's
// kernels advance theirs the same way). flash2 wgmma v5 at d 128, B 4, H 16, N 4k executed
// 18.2 M ULOP3, 9.2 M USHF and 6.7 M R2UR to FlashAttention-3's 1.3 M, 0.5 M and 0.5 M on the same tile
// (kernels/bench/h100-flash2-fa3-cudnn-ncu-2026-12-06.txt).
ATTNLAB_HD constexpr uint64_t desc_advance(uint64_t desc, uint32_t bytes) {
  const uint32_t lo = uint32_t(desc) + (bytes >> 4);
  return (desc & 0xFFFFFFFF00000000ull) | lo;
}

}  // namespace attnlab::kernels
