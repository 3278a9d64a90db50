// The wgmma shared-memory descriptor's arithmetic (kernels/common/wgmma_descriptor.h): the fields where PTX's
// "Matrix Descriptor Format" puts them, and desc_advance equal to building the descriptor again at the advanced
// address — over every 1024-byte-aligned start and steps of 112 bytes (7 × 16: the arithmetic is linear, so a sample
// of steps that reaches every part of shared memory stands for all) — the kernels advance their descriptors by it.
#include "kernels/common/wgmma_descriptor.h"
#include "tests/catch.h"

#include <cstdint>

namespace attnlab::kernels {
namespace ATTNLAB_FILE_LOCAL {

TEST_CASE("wgmma descriptor: the fields where PTX puts them") {
  // Start 0x1400 (>> 4 = 0x140), LBO 16 B (1), SBO 1024 B (64), 128-byte swizzle (mode 1).
  CHECK(wgmma_descriptor(0x1400, 16, 1024, 1) == (0x140ull | 1ull << 16 | 64ull << 32 | 1ull << 62));
  // An LBO of flash2's V operand at its 176-key tile (176 rows × 128 B), with mode 2 (64-byte swizzle) to place the mode
  // field (flash2's own descriptors are mode 1).
  CHECK(wgmma_descriptor(0x8000, 176 * 128, 1024, 2) == (0x800ull | uint64_t(176 * 128 / 16) << 16 | 64ull << 32 | 2ull << 62));
}

TEST_CASE("wgmma descriptor: desc_advance equals the descriptor built at the advanced address") {
  // Every 1024-byte-aligned tile start (the swizzle's alignment) and steps that stay in shared memory; the LBO at its
  // largest (the field's 14 bits all set), so a carry out of the start field (into reserved bit 14 and on) would show.
  const uint32_t lbo = 0x3FFFu << 4, sbo = 1024;
  int checked = 0;
  for (uint32_t start = 0; start < kSharedAddressLimit; start += 1024)
    for (uint32_t bytes = 0; start + bytes < kSharedAddressLimit; bytes += 16 * 7) {
      const uint64_t advanced = desc_advance(wgmma_descriptor(start, lbo, sbo, 1), bytes);
      if (advanced != wgmma_descriptor(start + bytes, lbo, sbo, 1)) {
        FAIL_CHECK("start " << start << " + " << bytes << " bytes");
        return;
      }
      ++checked;
    }
  CHECK(checked > 100000);
  // Past the limit the start field would carry out (into bit 14): the kernels never address there (the precondition).
  CHECK(desc_advance(wgmma_descriptor(kSharedAddressLimit - 16, lbo, sbo, 1), 16) != wgmma_descriptor(0, lbo, sbo, 1));
}

}  // namespace ATTNLAB_FILE_LOCAL
}  // namespace attnlab::kernels
