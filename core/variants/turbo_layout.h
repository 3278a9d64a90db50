// attnlab core: where every byte of TurboAttention's compressed KV cache sits in GPU memory — the packing
// part of `turbo`'s storage format, as data both the host (which builds and checks caches) and the CUDA
// kernels (which append, flush and read them) compile against. Plain constexpr index arithmetic.
//
// One KV head's cache is a run of fixed-size slots, one per block of B_c tokens (TurboAttention §3.1:
// step 2 is per channel within each block), followed by the INT8 decode buffer of n_b = B_c tokens (§3.3):
//   slot s:   K codes (B_c·d·b/8 bytes) | V codes (B_c·d·b/8 bytes)        in the head's code array
//             s_int, z_int of K (d + d INT8) | s_int, z_int of V (d + d)  in the head's scale array,
//             then the K and V channels' saturation flags (d + d bits)
//             s_K, s_V (two FP32)                                         in the head's block-scale array
//   buffer:   K (B_c·d INT8) | V (B_c·d INT8), pending tokens at their positions, unused ones 0.
// b ∈ {2, 4} is the head's cache width (Eq. 12). A block shorter than B_c (the prefill's last) keeps its
// full slot with code 0 at the absent tokens; its s_int/z_int come from its present tokens only.
//
// The code order inside a slot is the order in which the decode kernel's mma.sync.m16n8k32 fragments
// want them (kernels/common/mma.cuh states the fragment layouts; g = lane / 4, t = lane % 4), so one 16-byte
// shared-memory load gives a thread whole operands and a mask unpacks them:
//   K (the B operand of S = Q·Kᵀ: k = channel, n = token). Token τ = 8j + g (n-tile j), channel
//     c = 32·ks + r (k-step ks): r < 16 goes to register b0, r ≥ 16 to b1, at byte i = r mod 4 of lane
//     4g + t with t = (r mod 16) / 4. 4-bit: one word per (j, lane, ks), b0's code in the low nibble of
//     byte i and b1's in the high nibble; words in order (j, lane, ks). 2-bit: one word per (⌊j/4⌋, lane, ks,
//     b0/b1), n-tile j's code in field f = j mod 4 (bits 2f..2f+1) of byte i; words in that order.
//   V (the B operand of O = P·V: k = token, n = channel). The kernel builds P's A fragment from the
//     S accumulator without moving data between lanes, which orders the 32 tokens of a k-step κ as
//     k = 4t + i ↦ token 32κ + 8⌊i/2⌋ + 2t + i mod 2 and k = 16 + 4t + i ↦ that + 16 (int_flash's Vᵀ
//     permutation). Channel c = 8·jc + g (n-tile jc). 4-bit: one word per (κ, jc, lane), b0's code low
//     and b1's high in byte i; words in order (κ, jc/4, lane, jc mod 4). 2-bit: one word per (κ, ⌊jc/4⌋,
//     lane, b0/b1), n-tile jc's code in field f = jc mod 4; words in order (κ, jc/8, lane, ⌊jc/4⌋ mod 2, b0/b1).
//   INT8 buffer: the same positions with whole bytes, b0 and b1 as two words: K words in order (j, lane,
//     ks, b0/b1), V words in order (κ, jc, lane, b0/b1).
// d is a multiple of 32 (64 for the 2-bit V order) and B_c a multiple of 32: the kernel's own limits.
// The 2-bit order (v21 of the decode kernel) puts one n-tile's codes in one field of every word, so the kernel
// unpacks an operand with one mask, w & (3·0x01010101 << 2f), and no shift: the operand is 4^f times the codes,
// and so is that n-tile's INT32 product, which the kernel divides back exactly (each of its terms is a multiple
// of 4^f). The previous order (a word's four fields the k-steps and b0/b1 of one n-tile) needed a shift and a
// mask for three of every four operands.
#pragma once

#include "core/host_device.h"

#include <cstdint>
#include <type_traits>

namespace attnlab::turbo_layout {

// Where one code lives: byte offset within its array and bit shift within the byte. The index functions
// below compute in the integer type of their first argument: int64_t on the host, int in the kernels
// (64-bit index arithmetic costs the kernel two instructions per operation and keeps the compiler from
// folding the per-token part into constants).
template <class I>
struct CodeAtT {
  I byte;
  int shift;
};
using CodeAt = CodeAtT<int64_t>;
template <class I>
using Same = std::type_identity_t<I>;

ATTNLAB_HD constexpr int64_t code_bytes(int64_t block_c, int64_t d, int bits) { return block_c * d * bits / 8; }

// K code of (token τ, channel c) in a K block (bits ∈ {2, 4}).
template <class I>
ATTNLAB_HD constexpr CodeAtT<I> k_code_at(I tau, Same<I> c, Same<I> d, int bits) {
  const I j = tau / 8, g = tau % 8, ks = c / 32, r = c % 32;
  const I h = r / 16, t = (r % 16) / 4, i = r % 4, lane = 4 * g + t;
  if (bits == 4) {
    const I word = (j * 32 + lane) * (d / 32) + ks;
    return {4 * word + i, int(4 * h)};
  }
  const I word = ((j / 4) * 32 + lane) * (d / 16) + 2 * ks + h;
  return {4 * word + i, int(2 * (j % 4))};
}

// The k index (0…31) of token position pos (0…31) within a V k-step: the inverse of the permutation above.
template <class I>
ATTNLAB_HD constexpr I v_k_of_token(I pos) {
  const I h = pos / 16, rem = pos % 16, ihi = (rem % 16) / 8, rem2 = rem % 8;
  const I t = rem2 / 2, e = rem2 % 2;
  return 16 * h + 4 * t + 2 * ihi + e;
}
// The token position (0…31) of k index k (0…31) within a V k-step.
ATTNLAB_HD constexpr int64_t v_token_of_k(int64_t k) {
  const int64_t h = k / 16, t = (k % 16) / 4, i = k % 4;
  return 16 * h + 8 * (i / 2) + 2 * t + (i % 2);
}

// V code of (token τ, channel c) in a V block (bits ∈ {2, 4}).
template <class I>
ATTNLAB_HD constexpr CodeAtT<I> v_code_at(I tau, Same<I> c, Same<I> d, int bits) {
  const I kappa = tau / 32, k = v_k_of_token(I(tau % 32));
  const I h = k / 16, t = (k % 16) / 4, i = k % 4;
  const I jc = c / 8, g = c % 8, lane = 4 * g + t, nj = d / 8;
  if (bits == 4) {
    const I word = ((kappa * (nj / 4) + jc / 4) * 32 + lane) * 4 + jc % 4;
    return {4 * word + i, int(4 * h)};
  }
  const I word = ((kappa * (nj / 8) + jc / 8) * 32 + lane) * 4 + 2 * ((jc % 8) / 4) + h;
  return {4 * word + i, int(2 * (jc % 4))};
}

// Byte offset of the INT8 value of (token τ, channel c) in the K buffer and the V buffer.
ATTNLAB_HD constexpr int64_t k8_at(int64_t tau, int64_t c, int64_t d) {
  const int64_t j = tau / 8, g = tau % 8, ks = c / 32, r = c % 32;
  const int64_t h = r / 16, t = (r % 16) / 4, i = r % 4, lane = 4 * g + t;
  return 4 * (((j * 32 + lane) * (d / 32) + ks) * 2 + h) + i;
}
ATTNLAB_HD constexpr int64_t v8_at(int64_t tau, int64_t c, int64_t d) {
  const int64_t kappa = tau / 32, k = v_k_of_token(tau % 32);
  const int64_t h = k / 16, t = (k % 16) / 4, i = k % 4;
  const int64_t jc = c / 8, g = c % 8, lane = 4 * g + t;
  return 4 * ((((kappa * (d / 8) + jc) * 32 + lane) * 2) + h) + i;
}

// Whether channel (s_int, z_int) of a b-bit block may saturate when dequantized (core/quant/progressive.h:
// sat₁₂₇((code + z_int)·s_int), code ∈ [0, L], L = 2^b − 1). s_int > 0, so (code + z_int)·s_int is monotonic
// in the code and its extremes are code 0 and code L: exactly then some code of the channel leaves [−127, 127].
ATTNLAB_HD constexpr bool may_saturate(int s_int, int z_int, int bits) {
  const int top = (1 << bits) - 1;
  return z_int * s_int < -127 || (top + z_int) * s_int > 127;
}

// Per-slot scale array: K's s_int, K's z_int, V's s_int, V's z_int, d INT8 each; then the saturation flags, d bits
// for K and d for V: bit c mod 32 of word c / 32 says may_saturate of channel c (K's d / 32 words, then V's). The
// flags are derived from s_int and z_int when a block is written (prefill or flush), so the decode kernel reads
// them instead of testing every channel of every block it streams (two ballots per 32 channels; kernels/PERF.md,
// turbo decode v16): 1 bit per block and channel, 32 bytes a block at d 128 (+0.7% of a 2-bit block's bytes). They
// are the kernels' layout, not the paper's format: the variant's storage (and so the cost model's bytes) omits them.
ATTNLAB_HD constexpr int64_t saturation_flag_bytes(int64_t d) { return 2 * d / 8; }
ATTNLAB_HD constexpr int64_t saturation_flags_at(int64_t d) { return 4 * d; }  // their byte offset in the slot
ATTNLAB_HD constexpr int64_t scale_zero_bytes(int64_t d) { return 4 * d + saturation_flag_bytes(d); }
// The flag word (from saturation_flags_at) that holds channel c's bit (c mod 32) of K (which 0) or V (which 1).
ATTNLAB_HD constexpr int64_t saturation_flag_word(int64_t d, int64_t which, int64_t c) {
  return which * (d / 32) + c / 32;
}

// The flag words of one slot from its s_int, z_int (sz: the slot's scale array; writes its flags).
ATTNLAB_HD inline void write_saturation_flags(int8_t* sz, int64_t d, int bits) {
  int8_t* flags = sz + saturation_flags_at(d);  // little-endian words, written a byte at a time
  for (int64_t which = 0; which < 2; ++which)
    for (int64_t w = 0; w < d / 32; ++w) {
      uint32_t m = 0;
      for (int64_t i = 0; i < 32; ++i) {
        const int64_t c = 32 * w + i;
        m |= uint32_t(may_saturate(sz[2 * d * which + c], sz[2 * d * which + d + c], bits)) << i;
      }
      const int64_t word = saturation_flag_word(d, which, 32 * w);
      for (int64_t b = 0; b < 4; ++b) flags[4 * word + b] = int8_t(uint8_t(m >> (8 * b)));
    }
}

}  // namespace attnlab::turbo_layout
