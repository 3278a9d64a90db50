// attnlab core — the INT8 tiles TurboAttention's attention loop reads, and the compressed KV cache it
// writes and reads back (TurboAttention §3.1–3.3; App. A, Alg. 1 lines 13–18 and Alg. 2 lines 6–7).
//
// One KV head at a time. Both phases hand the attention loop the same thing: K and V as INT8 values
// (integer-valued floats) cut into tiles, each tile with one FP32 scale.
//   - Prefill (Alg. 1): tile j is the INT8 block Kⱼ^q1 = ⌈Kⱼ / s_Kⱼ⌋, s_Kⱼ = max|Kⱼ| / 119, of B_c
//     tokens (the generic quantizer, block granularity). The cache Alg. 1 writes is step 2 of these same
//     blocks (progressive INT4/INT2 per channel); prefill attends to the INT8 blocks, not the cache.
//   - Decode (Alg. 2 and §3.3): the first P = kv_len − decode_steps tokens are the prefill's cache,
//     read back to INT8 by Alg. 2's integer dequantization (progressive.h); the last decode_steps tokens
//     were appended one at a time to the INT8 decode buffer (universal scale from the prefill keys or
//     values, outliers clamped), which flushed into a progressive block every n_b tokens. Tiles: the
//     cache blocks (B_c tokens, the last may be short), the flushed buffer blocks (n_b tokens, universal
//     scale), then the pending buffer tokens (INT8, universal scale).
// A head whose cache width is 8 bits keeps the INT8 blocks as they are (no step 2): Alg. 2 then reads
// exactly what Alg. 1 attended to. This is not one of the paper's settings; it isolates the cache's
// own error (the "8-bit cache" of the consistency checks).
#pragma once

#include "core/params.h"
#include "core/problem.h"
#include "core/quant/head_priority.h"
#include "core/quant/progressive.h"
#include "core/tensor.h"

#include <array>
#include <cstdint>
#include <vector>

namespace attnlab::variants::turbo_detail {

struct Int8Tiles {
  RowMatrix<float> k, v;        // (tokens, d): INT8 values held in floats
  std::vector<int64_t> start;   // (tiles + 1): tile t is rows [start[t], start[t + 1])
  std::vector<float> s_k, s_v;  // (tiles): FP32 scale of each tile
  int64_t tiles() const { return static_cast<int64_t>(s_k.size()); }
};

// What writing (prefill) or holding (decode) one KV head's cache cost and clamped.
struct CacheStats {
  int64_t code_bytes = 0;         // packed INT4/INT2 codes (or INT8 values for an 8-bit head), K and V
  int64_t scale_zero_bytes = 0;   // s_int and z_int, one INT8 each per channel per block, K and V
  int64_t block_scale_bytes = 0;  // s_K, s_V: one FP32 per block (the universal scale per buffer block)
  int64_t buffer_bytes = 0;       // pending INT8 tokens of the decode buffer and its two FP32 scales
  int64_t step2_clamped = 0;      // step-2 quotients outside [0, 2^b − 1] (progressive.h)
  int64_t saturated = 0;          // dequantized values saturated to ±127
  int64_t buffer_clamped = 0;     // buffer tokens beyond ±127·s_universal, clamped (§3.3)
  int64_t flushes = 0;            // buffer flushes into the compressed cache (K's; V flushes alike)
  int64_t buffer_tokens = 0;      // tokens still pending in the buffer at the end
  int64_t total() const { return code_bytes + scale_zero_bytes + block_scale_bytes + buffer_bytes; }
};

// Alg. 1: K and V (tokens, d) of one KV head, row-major → INT8 blocks of block_c tokens with
// max|·|/q_max8 scales.
Int8Tiles prefill_tiles(const float* k, const float* v, int64_t tokens, int64_t d, int64_t block_c,
                        double q_max8);

// Alg. 1 lines 13–18: the compressed cache of the prefill tiles at `bits` ∈ {2, 4, 8} (8 = INT8 kept).
CacheStats cache_of(const Int8Tiles& tiles, int bits, quant::IntScale rule);

struct DecodeSettings {
  int64_t block_c = 64;
  double q_max8 = 119;
  int bits = 4;                               // this head's cache width: 2, 4 or 8
  quant::IntScale rule = quant::IntScale::nearest;
  int64_t n_b = 64;                           // decode-buffer capacity (§3.3)
  int64_t decode_steps = 0;                   // tokens appended through the buffer, < tokens
};

// The compressed cache of one KV head as decode holds it (Alg. 1 lines 13–18 for the prefill's blocks,
// §3.3 for the buffer): the prefill's blocks, then the buffer's flushed blocks, each a ProgressiveBlock
// (codes, s_int, z_int, scale8; an 8-bit head's blocks carry only q8 and scale8, bits = 8), then the
// pending INT8 buffer tokens with the universal scales.
struct HeadCache {
  int64_t d = 0, prefill_tokens = 0;
  int bits = 4;
  std::vector<quant::ProgressiveBlock> k_blocks, v_blocks;  // prefill blocks first, then flushed ones
  int64_t prefill_blocks = 0;                               // how many of them the prefill wrote
  std::vector<int8_t> k_pending, v_pending;                 // (pending, d) INT8 buffer tokens
  float k_universal = 1, v_universal = 1;                   // §3.3's universal scales, from the prefill
  CacheStats stats;
  int64_t pending() const { return d > 0 ? static_cast<int64_t>(k_pending.size()) / d : 0; }
};

// Alg. 2 and §3.3: the cache decode reads for K and V (tokens, d) of one KV head.
HeadCache decode_cache(const float* k, const float* v, int64_t tokens, int64_t d, const DecodeSettings& s);

// The part of cache c that one GPU holds when the sequence is split into token ranges across GPUs (context
// parallelism): the tiles — blocks, and the pending buffer tokens — whose LAST token lies in [begin, end). Cut at
// any boundaries, the parts hold every tile exactly once, in order; a part that holds a tile holds all of it (a
// cut never splits a block); a part whose range ends at the cache's end holds the pending tokens; and, since no
// tile is longer than block_c, every range of at least block_c tokens, and every range that holds the cache's last
// token, holds a tile. The part's own prefill is its blocks that were the prefill's (prefill_tokens: their tokens);
// the width and the universal scales are the whole cache's; stats stay empty.
HeadCache slice_by_last_token(const HeadCache& c, int64_t begin, int64_t end);

// Alg. 2 line 6: the INT8 tiles a cache reads back to — its blocks dequantized (an 8-bit head's kept as
// they are), then the pending buffer tokens as one tile, with their scales.
Int8Tiles tiles_of(const HeadCache& c);

// Alg. 2 and §3.3: the INT8 tiles decode reads for K and V (tokens, d) of one KV head; stats gets the
// cache's bytes and counts. tiles_of(decode_cache(…)).
Int8Tiles decode_tiles(const float* k, const float* v, int64_t tokens, int64_t d, const DecodeSettings& s,
                       CacheStats& stats);

// The cache of one head laid out in GPU memory (core/variants/turbo_layout.h), slots for `slots` blocks
// of block_c tokens (≥ the cache's blocks; the rest zero) and a buffer of block_c tokens. bits ∈ {2, 4}.
struct DeviceImage {
  std::vector<uint8_t> codes;         // slots × (K codes | V codes)
  std::vector<int8_t> scale_zero;     // slots × (K s_int | K z_int | V s_int | V z_int), d each
  std::vector<float> block_scales;    // slots × (s_K, s_V)
  std::vector<int8_t> k_buffer, v_buffer;  // block_c × d each, pending tokens at their positions
};
DeviceImage device_image(const HeadCache& c, int64_t block_c, int64_t slots);

// The cache width of every (batch, KV head), in that order, as the `turbo` reference chooses it (Eq. 11–12
// from the prefill keys; core/variants/turbo.cpp). params are turbo's.
std::vector<int> kv_head_bits(const Problem& p, const QKV& in, const ParamValues& params);
// The priority metric turbo's parameters name (Eq. 11 or a §5.6 baseline).
quant::PriorityMetric priority_metric(const ParamValues& params);

// SAS's "refit" polynomial (poly = refit): the 100-point least-squares cubic of e^{−x} on [0, 1] (sas.h).
std::array<double, 4> refit_polynomial();

}  // namespace attnlab::variants::turbo_detail
