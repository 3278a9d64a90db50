// attnlab core: where every byte of a FireQ INT4 KV cache (§2.1 Eq. 1: per-token INT4 codes of K̃ and V,
// one E4M3 scale σ per token) sits in GPU memory — the layout the fireq decode kernel
// (kernels/fireq/fireq_decode.cu) reads, as data both the host (which packs and checks images,
// core/variants/fireq_image.h) and the kernel compile against. Plain constexpr index arithmetic.
//
// One (batch, KV head) — a "pair" — is ⌈N/64⌉ tiles of kTile = 64 tokens, each tile_bytes(d) = 64·d + 128
// bytes, in this order:
//   K codes   64 rows of d/2 bytes   row r = token 64·tile + r
//   V codes   64 rows of d/2 bytes
//   σ_K       64 bytes               the tokens' E4M3 scales, bit patterns
//   σ_V       64 bytes
// The last tile's empty rows are 0 (codes 0, σ 0: every LUT entry 0; the kernel masks those tokens). A
// code is INT4 two's complement (c & 0xF), c ∈ [−8, 7].
//
// The order of the nibbles is the order in which the kernel's FP8 tensor-core operands want them, so that
// each 32-bit word of codes becomes two operand registers by byte permutes alone (§3.1.1 Step 1's LUT;
// kernels/fireq/fireq_decode.cu, lut_convert): nibble k of a word becomes byte k mod 4 of register ⌊k/4⌋.
// mma.m16n8k32 (g = lane / 4, t = lane % 4) gives lane (g, t) the operand bytes (k = 4t..4t+3) and
// (k = 16 + 4t..16 + 4t + 3) of its row or column (A: rows g and g + 8; B: column g).
//   K (Sᵀ = K̂·Q̂ᵀ, A = K̂: rows = tokens, k = channels), row by row: a token's row is 4 slices of d/8 bytes,
//     slice t for lane t of the token's row; in slice t, word j (the 32-channel k-step j) nibble k holds
//     channel 32j + 16·⌊k/4⌋ + 4t + k mod 4.
//   V (Oᵀ = V̂ᵀ·P̂ᵀ, A = V̂ᵀ: rows = channels, k = tokens), lane by lane: the tile's tokens in two 32-token
//     chunks c; lane (g, t) reads of chunk c the 8 tokens i = 0…7 — 32c + 4t + i (i < 4) and 32c + 16 + 4t +
//     (i − 4) (i ≥ 4) — each as its slice g of d/16 bytes (d/64 words), in which nibble j holds channel
//     g + 8j: the lane's row g or g + 8 of every 16-channel m-tile. Part p = 2·w + ⌊i/4⌋ of the lane holds
//     word w of tokens 4·⌊i/4⌋ … + 3, in that order (16 bytes); part p of lane L = 4g + t lies at chunk c's
//     offset c·16·d + (32p + L)·16 (one 16-byte load per part, a warp's 512 bytes contiguous: no bank
//     conflict). The kernel converts each token's word through that token's table and transposes 4×4 bytes,
//     since k = tokens runs along a register and σ differs per token.
// Limits: d ∈ {64, 128} (a multiple of 32 whose V slice is whole words: d/16 bytes ≥ 4).
#pragma once

#include "core/host_device.h"

#include <cstdint>

namespace attnlab::fireq_layout {

inline constexpr int64_t kTile = 64;  // tokens per tile (the kernel's KV tile)

ATTNLAB_HD constexpr bool supports(int64_t d) { return d == 64 || d == 128; }
ATTNLAB_HD constexpr int64_t tiles_for(int64_t tokens) { return (tokens + kTile - 1) / kTile; }
ATTNLAB_HD constexpr int64_t row_bytes(int64_t d) { return d / 2; }
ATTNLAB_HD constexpr int64_t tile_bytes(int64_t d) { return 2 * kTile * row_bytes(d) + 2 * kTile; }
// Offsets inside a tile.
ATTNLAB_HD constexpr int64_t v_offset(int64_t d) { return kTile * row_bytes(d); }
ATTNLAB_HD constexpr int64_t sigma_k_offset(int64_t d) { return 2 * kTile * row_bytes(d); }
ATTNLAB_HD constexpr int64_t sigma_v_offset(int64_t d) { return sigma_k_offset(d) + kTile; }

// Where (token r of a tile, channel) lies: the nibble index (low nibble of each byte first) inside the
// tile's K region (rows) or V region.
ATTNLAB_HD constexpr int64_t k_nibble(int64_t d, int64_t r, int64_t channel) {
  const int64_t j = channel / 32, x = channel % 32, half = x / 16, t = (x % 16) / 4, k = 4 * half + x % 4;
  return r * d + t * (d / 4) + 8 * j + k;  // row r: d nibbles; slice t: d/4 nibbles
}
ATTNLAB_HD constexpr int64_t v_nibble(int64_t d, int64_t r, int64_t channel) {
  const int64_t c = r / 32, q = r % 32 % 16, t = q / 4, i = q % 4 + 4 * (r % 32 / 16);
  const int64_t g = channel % 8, j = channel / 8, lane = 4 * g + t;
  const int64_t w = j / 8, p = 2 * w + i / 4;
  const int64_t byte = c * 16 * d + (32 * p + lane) * 16 + 4 * (i % 4) + (j % 8) / 2;
  return 2 * byte + j % 2;
}

}  // namespace attnlab::fireq_layout
