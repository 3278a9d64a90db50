// attnlab core: the turbo decode kernel's fold (kernels/turbo/turbo_decode.cu, Eq. 7–8 folded into Q·Kᵀ):
// Σ_c q_c·K̂_c = Σ_c (q_c·s_c)·k_c + Σ_c (q_c·s_c)·z_c, with each product q·s split into two INT8 MMA rows,
// hi = ⌊q·s / 128⌋ and lo = q·s mod 128, four channels' bytes packed in one word each. Host and device compile it:
// the CPU tests (tests/core/variants/test_turbo_fold.cpp) hold it to that definition over every q, s and flag.
#pragma once

#include "core/host_device.h"

#include <cstdint>

namespace attnlab::turbo_fold {

// PTX prmt.b32 in its default mode: result byte n is byte sel[4n+2 : 4n] of the eight bytes {b, a} (a's are 0–3),
// or, where sel's bit 4n+3 is set, that byte's sign bit repeated over all eight bits. One PRMT on the GPU.
ATTNLAB_HD inline uint32_t byte_perm(uint32_t a, uint32_t b, uint32_t sel) {
#if defined(__CUDA_ARCH__)
  uint32_t d;
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(sel));
  return d;
#else
  const uint64_t bytes = uint64_t(b) << 32 | a;
  uint32_t d = 0;
  for (int n = 0; n < 4; ++n) {
    const uint32_t s = (sel >> 4 * n) & 0xFu;
    uint32_t v = uint32_t(bytes >> 8 * (s & 7u)) & 0xFFu;
    if (s & 8u) v = v & 0x80u ? 0xFFu : 0u;
    d |= v << 8 * n;
  }
  return d;
#endif
}

// byte_perm selectors: byte i of a sign-extended to 32 bits (bytes 1–3 repeat its sign), and zero-extended (b = 0).
ATTNLAB_HD constexpr uint32_t sign_extend_byte(int i) { return 0x8880u + 0x1111u * uint32_t(i); }
ATTNLAB_HD constexpr uint32_t zero_extend_byte(int i) { return 0x4440u + uint32_t(i); }

struct FoldWords {
  uint32_t hi, lo;  // four channels' hi bytes (two's complement), and lo bytes (0 … 127)
};

// The fold's two A words for four channels from four Q codes (qw, INT8, |q| ≤ 127) and four K scales (sw, each
// 0 … 127): q·s = 128·hi + lo; a channel whose bit of flags (bits 0–3; the cache writer's saturation flags, which
// turbo_layout.h stores) is set gets hi = lo = 0 — it is summed apart, token by token. |q·s| ≤ 127·127 < 2¹⁵, so a
// product's low 16 bits hold it whole, bits 7 … 14 are hi's byte and bits 0 … 6 are lo: two products share a word
// (p01 = p0 | p1 << 16) and one shift and one byte permutation give both hi bytes (turbo decode v19; v18 shifted,
// masked and packed each product alone, and cleared the flagged channels' scales one select each).
ATTNLAB_HD inline FoldWords fold_words(uint32_t qw, uint32_t sw, uint32_t flags) {
  const uint32_t flagged = ((flags & 0xFu) * 0x00204081u) & 0x01010101u;  // bit i → the low bit of byte i
  sw &= ~(flagged * 0xFFu);
  uint32_t p[4];
  for (int i = 0; i < 4; ++i)
    p[i] = uint32_t(int(byte_perm(qw, 0, sign_extend_byte(i))) * int(byte_perm(sw, 0, zero_extend_byte(i))));
  const uint32_t p01 = byte_perm(p[0], p[1], 0x5410u), p23 = byte_perm(p[2], p[3], 0x5410u);
  return {byte_perm(p01 >> 7, p23 >> 7, 0x6420u), byte_perm(p01, p23, 0x6420u) & 0x7F7F7F7Fu};
}

}  // namespace attnlab::turbo_fold
