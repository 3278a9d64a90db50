// attnlab core: where every byte of a KIVI cache (core/quant/kivi.h) sits in GPU memory — the layout the
// kivi decode kernel (kernels/kivi/kivi_decode.cu) reads, as data both the host (which builds and checks
// images, core/variants/kivi_image.h) and the kernel compile against. Plain constexpr index arithmetic.
//
// One KV head's cache is six arrays; every (batch, KV head) — a "pair" — has the same sizes, since all
// pairs share N, R, g, d and b:
//   k_codes   slots × code_bytes        b-bit codes of K̂, tile by tile (a slot = kTile = 64 tokens)
//   v_codes   slots × code_bytes        b-bit codes of V̂
//   k_params  k_groups × d × 2 FP16     s and z of each key group (g tokens of one channel)
//   v_params  slots × 64 × VG × 2 FP16  s and z of each value group (g channels of one token), VG = ⌈d/g⌉
//   k_res     res_slots × 64 × d FP16   the FP16 residual tokens of K
//   v_res     res_slots × 64 × d FP16   the FP16 residual tokens of V
// and, beside them, a byte per slot that is no part of KIVI's cache but the kernel's: whether the slot may be
// dequantized in FP16 arithmetic (kivi_image.h slot_exact).
// slots = ⌈Q/64⌉ for the Q quantized tokens, res_slots = ⌈(N − Q)/64⌉. The last slot of each part may be
// partly empty: its codes, s, z and residual values are 0 there (x̂ = 0·0 + 0, finite; the kernel masks
// those tokens). k_groups = ⌈slots·64/g⌉, the empty tail's groups included.
//
// The order inside a slot is the order in which the kernel's mma.sync.m16n8k16 A fragments want the
// values (kernels/common/mma.cuh: g = lane / 4, t = lane % 4; element (row r, col k) of a 16×16 A tile is held
// by lane 4·(r mod 8) + (k mod 8)/2 in register reg = ⌊r/8⌋ + 2·⌊k/8⌋, half e = k mod 2; its position
// among the lane's 8 values is p = 2·reg + e). The kernel computes Sᵀ = K̂·Qᵀ (A = K̂: rows = tokens,
// cols = channels) and Oᵀ = V̂ᵀ·P̃ᵀ (A = V̂ᵀ: rows = channels, cols = tokens), so the query heads of a KV
// head are the MMA's N = 8 columns. Each 16×16 A tile is named by (outer, inner): K (outer = kk, the
// 16-channel k-step; inner = mt, the 16-token m-tile, 4 per slot), V (outer = ks, the 16-token k-step,
// 4 per slot; inner = mi, the 16-channel m-tile, d/16).
//   4-bit codes: one word per (outer, inner, lane), code p = 2·reg + e at bit 16·e + 4·reg; words in order
//     (outer, inner/4, lane, inner mod 4) — one 16-byte load gives a lane four inner tiles.
//   2-bit codes: one word per (outer pair, inner, lane), code p = 2·reg + e of outer o at bit
//     16·e + 8·(o mod 2) + 2·reg; words in order (outer/2, inner/4, lane, inner mod 4).
//   So the two codes of a fragment register sit at the same offset of the word's two 16-bit halves, within
//   its low 8 bits or (4-bit reg ≥ 2, odd 2-bit outers) its next 8: one AND with a mask per half and an OR
//   with 1024's FP16 bits (0x6400) make the half2 (1024 + c₀·2ᵏ, 1024 + c₁·2ᵏ), k = the offset, exactly
//   (kernels/kivi/kivi_decode.cu, code_pair).
//   FP16 residual: the lane's 8 values of (outer, inner) as 16 bytes, in order (outer, inner, lane).
// Parameters, for the lane's four A-fragment channels (K) or tokens (V):
//   K: s of (group kg, channel c) at ((kg·d/16 + c/16)·4 + t)·8 + j and z at 4 more, where for x = c mod
//     16: t = (x mod 8)/2 and j = 2·⌊x/8⌋ + x mod 2 (channels 2t, 2t+1, 2t+8, 2t+9 of the k-step).
//   V: s of (token τ of the slot, group vg) at ((⌊τ/16⌋·VG + vg)·4 + t)·8 + j, z at 4 more, with x = τ mod
//     16 as above (tokens 2t, 2t+1, 2t+8, 2t+9 of the k-step).
// The A fragment's register reg uses entry j = 2·⌊reg/2⌋ + e: for K reg/2 picks the channel half, for V
// the token half. Limits: d a multiple of 64, g a power of two ≥ 16 (a 16-token m-tile lies in one key
// group, a 16-channel m-tile in one value group, and a slot's key groups are whole or one), b ∈ {2, 4}.
#pragma once

#include "core/host_device.h"

#include <cstdint>

namespace attnlab::kivi_layout {

inline constexpr int64_t kTile = 64;  // tokens per slot (the kernel's KV tile)

ATTNLAB_HD constexpr bool supports(int64_t d, int bits, int64_t group) {
  return d > 0 && d % 64 == 0 && (bits == 2 || bits == 4) && group >= 16 && (group & (group - 1)) == 0;
}

ATTNLAB_HD constexpr int64_t slots_for(int64_t tokens) { return (tokens + kTile - 1) / kTile; }
ATTNLAB_HD constexpr int64_t code_bytes(int64_t d, int bits) { return kTile * d * bits / 8; }  // one tensor, one slot
ATTNLAB_HD constexpr int64_t v_groups(int64_t d, int64_t group) { return (d + group - 1) / group; }  // VG
ATTNLAB_HD constexpr int64_t k_groups(int64_t slots, int64_t group) { return (slots * kTile + group - 1) / group; }
// Key groups one slot touches (g ≤ 64: 64/g whole groups; g > 64: part of one) and the first of them.
ATTNLAB_HD constexpr int64_t slot_k_groups(int64_t group) { return group < kTile ? kTile / group : 1; }
ATTNLAB_HD constexpr int64_t slot_first_k_group(int64_t slot, int64_t group) { return slot * kTile / group; }
ATTNLAB_HD constexpr int64_t k_param_halves(int64_t groups, int64_t d) { return groups * d * 2; }
ATTNLAB_HD constexpr int64_t v_param_halves(int64_t d, int64_t group) { return kTile * v_groups(d, group) * 2; }  // per slot
ATTNLAB_HD constexpr int64_t residual_halves(int64_t d) { return kTile * d; }  // per slot, per tensor

// The lane and position p (0…7) holding element (r, k) of a 16×16 A tile.
struct FragAt {
  int64_t lane, p;
};
ATTNLAB_HD constexpr FragAt a_frag_at(int64_t r, int64_t k) {
  return {4 * (r % 8) + (k % 8) / 2, 2 * (r / 8 + 2 * (k / 8)) + k % 2};
}

// The 32-bit code word of A tile (outer, inner) for `lane` (inner_n tiles along inner, a multiple of 4).
ATTNLAB_HD constexpr int64_t code_word(int64_t outer, int64_t inner, int64_t inner_n, int64_t lane, int bits) {
  const int64_t o = bits == 4 ? outer : outer / 2;
  return ((o * (inner_n / 4) + inner / 4) * 32 + lane) * 4 + inner % 4;
}
// The first bit of code p of A tile row `outer` within its word.
ATTNLAB_HD constexpr int code_bit(int64_t outer, int64_t p, int bits) {
  const int reg = int(p / 2), e = int(p % 2);
  return bits == 4 ? 16 * e + 4 * reg : 16 * e + 8 * int(outer % 2) + 2 * reg;
}

// Where one code lives within its slot: byte offset and bit shift within the byte.
struct CodeAt {
  int64_t byte;
  int shift;
};
ATTNLAB_HD constexpr CodeAt code_at(int64_t outer, int64_t inner, int64_t inner_n, FragAt f, int bits) {
  const int bit = code_bit(outer, f.p, bits);
  return {4 * code_word(outer, inner, inner_n, f.lane, bits) + bit / 8, bit % 8};
}
// K code of (token τ of the slot, channel c); V code likewise.
ATTNLAB_HD constexpr CodeAt k_code_at(int64_t tau, int64_t c, int bits) {
  return code_at(c / 16, tau / 16, kTile / 16, a_frag_at(tau % 16, c % 16), bits);
}
ATTNLAB_HD constexpr CodeAt v_code_at(int64_t tau, int64_t c, int64_t d, int bits) {
  return code_at(tau / 16, c / 16, d / 16, a_frag_at(c % 16, tau % 16), bits);
}

// The index (half) of the FP16 scale of a lane's quad entry: quad (outer, t), entry j; the zero point is 4
// halves after it.
ATTNLAB_HD constexpr int64_t quad_index(int64_t quad, int64_t x) {
  return (quad * 4 + (x % 8) / 2) * 8 + 2 * (x / 8) + x % 2;
}
// s of key group kg, channel c (within the pair's k_params); z at +4.
ATTNLAB_HD constexpr int64_t k_scale_at(int64_t kg, int64_t c, int64_t d) { return quad_index(kg * (d / 16) + c / 16, c % 16); }
// s of token τ of a slot, value group vg (within the slot's v_params); z at +4.
ATTNLAB_HD constexpr int64_t v_scale_at(int64_t tau, int64_t vg, int64_t d, int64_t group) {
  return quad_index((tau / 16) * v_groups(d, group) + vg, tau % 16);
}

// FP16 residual value (token τ of the slot, channel c), K (outer kk, inner mt) and V (outer ks, inner mi).
ATTNLAB_HD constexpr int64_t k_residual_at(int64_t tau, int64_t c) {
  const FragAt f = a_frag_at(tau % 16, c % 16);
  return (((c / 16) * (kTile / 16) + tau / 16) * 32 + f.lane) * 8 + f.p;
}
ATTNLAB_HD constexpr int64_t v_residual_at(int64_t tau, int64_t c, int64_t d) {
  const FragAt f = a_frag_at(c % 16, tau % 16);
  return (((tau / 16) * (d / 16) + c / 16) * 32 + f.lane) * 8 + f.p;
}

}  // namespace attnlab::kivi_layout
