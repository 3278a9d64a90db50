// attnlab core — TurboAttention's INT8 tiles and compressed KV cache (turbo_cache.h states the rules).
#include "core/variants/turbo_cache.h"

#include "core/formats/pack.h"
#include "core/quant/decode_buffer.h"
#include "core/quant/quantize.h"

#include <algorithm>

namespace attnlab::variants::turbo_detail {

namespace {

constexpr int64_t kScaleBytes = 4;  // one FP32 block scale (s_K or s_V)

// Eq. 9: x (tokens, d) → INT8 blocks of block_c tokens, symmetric, max|block| / q_max8. Writes the
// values into out (tokens, d) as floats and returns one scale per block.
std::vector<float> int8_blocks(const float* x, int64_t tokens, int64_t d, int64_t block_c, double q_max8,
                               RowMatrix<float>& out) {
  const quant::Quantized q = quant::quantize(
      x, tokens, d,
      quant::Spec{.bits = 8, .granularity = quant::Granularity::block, .block_rows = block_c, .q_max = q_max8});
  out.resize(tokens, d);
  std::copy(q.q.begin(), q.q.end(), out.data());
  return q.scale;
}

// Step 2 of one block (Eq. 10) at `bits` ∈ {2, 4}, or nothing at 8; writes back into `values` what
// Alg. 2 will read (the dequantized INT8 values) and adds the block's bytes and counts to stats.
void store_block(float* values, int64_t rows, int64_t d, float scale, int bits, quant::IntScale rule,
                 CacheStats& stats) {
  stats.block_scale_bytes += kScaleBytes;
  if (bits == 8) {
    stats.code_bytes += rows * d;
    return;
  }
  std::vector<int8_t> q8(values, values + rows * d);  // exact: the floats hold INT8 values
  const quant::ProgressiveBlock b = quant::progressive_compress(q8.data(), rows, d, scale, bits, rule);
  const std::vector<int8_t> back = quant::progressive_dequantize(b);  // Alg. 2 line 6
  std::copy(back.begin(), back.end(), values);
  stats.code_bytes += formats::packed_bytes(rows * d, bits);
  stats.scale_zero_bytes += 2 * d;  // s_int and z_int per channel, INT8 each (progressive.h)
  stats.step2_clamped += b.clamped;
  stats.saturated += b.saturated;
}

// A flushed decode-buffer block: its INT8 values (8-bit heads keep them) or its step-2 codes read back.
void append_flushed(const quant::ProgressiveBlock& b, int bits, float* out, CacheStats& stats) {
  stats.block_scale_bytes += kScaleBytes;
  if (bits == 8) {
    std::copy(b.q8.begin(), b.q8.end(), out);
    stats.code_bytes += b.rows * b.cols;
    return;
  }
  const std::vector<int8_t> back = quant::progressive_dequantize(b);
  std::copy(back.begin(), back.end(), out);
  stats.code_bytes += formats::packed_bytes(b.rows * b.cols, bits);
  stats.scale_zero_bytes += 2 * b.cols;
  stats.step2_clamped += b.clamped;
  stats.saturated += b.saturated;
}

}  // namespace

Int8Tiles prefill_tiles(const float* k, const float* v, int64_t tokens, int64_t d, int64_t block_c,
                        double q_max8) {
  Int8Tiles t;
  t.s_k = int8_blocks(k, tokens, d, block_c, q_max8, t.k);
  t.s_v = int8_blocks(v, tokens, d, block_c, q_max8, t.v);
  for (int64_t r = 0; r < tokens; r += block_c) t.start.push_back(r);
  t.start.push_back(tokens);
  return t;
}

CacheStats cache_of(const Int8Tiles& tiles, int bits, quant::IntScale rule) {
  CacheStats stats;
  const int64_t d = tiles.k.cols();
  RowMatrix<float> scratch;
  for (int64_t j = 0; j < tiles.tiles(); ++j) {
    const int64_t r0 = tiles.start[j], rows = tiles.start[j + 1] - r0;
    for (auto [m, s] : {std::pair{&tiles.k, tiles.s_k[j]}, std::pair{&tiles.v, tiles.s_v[j]}}) {
      scratch = m->middleRows(r0, rows);
      store_block(scratch.data(), rows, d, s, bits, rule, stats);
    }
  }
  return stats;
}

Int8Tiles decode_tiles(const float* k, const float* v, int64_t tokens, int64_t d, const DecodeSettings& s,
                       CacheStats& stats) {
  const int64_t prefilled = tokens - s.decode_steps;  // ≥ 1 (the variant validates decode_steps)
  // The prefill's cache (Alg. 1 lines 13–18), read back by Alg. 2 line 6.
  Int8Tiles t = prefill_tiles(k, v, prefilled, d, s.block_c, s.q_max8);
  for (int64_t j = 0; j < t.tiles(); ++j) {
    const int64_t r0 = t.start[j], rows = t.start[j + 1] - r0;
    store_block(t.k.data() + r0 * d, rows, d, t.s_k[j], s.bits, s.rule, stats);
    store_block(t.v.data() + r0 * d, rows, d, t.s_v[j], s.bits, s.rule, stats);
  }
  if (s.decode_steps == 0) return t;

  // §3.3: the generated tokens go through the INT8 buffer with universal scales chosen at prefill. The
  // buffer's own step 2 runs at 4 bits for an 8-bit head; append_flushed then keeps the INT8 values.
  const int buffer_bits = s.bits == 8 ? 4 : s.bits;
  quant::DecodeBuffer kb(d, s.n_b, quant::universal_scale(k, prefilled, d, s.q_max8), buffer_bits, s.rule);
  quant::DecodeBuffer vb(d, s.n_b, quant::universal_scale(v, prefilled, d, s.q_max8), buffer_bits, s.rule);
  for (int64_t r = prefilled; r < tokens; ++r) {
    kb.append(k + r * d);
    vb.append(v + r * d);
  }
  t.k.conservativeResize(tokens, d);
  t.v.conservativeResize(tokens, d);
  int64_t row = prefilled;
  for (size_t f = 0; f < kb.flushed().size(); ++f) {
    append_flushed(kb.flushed()[f], s.bits, t.k.data() + row * d, stats);
    append_flushed(vb.flushed()[f], s.bits, t.v.data() + row * d, stats);
    t.s_k.push_back(kb.scale());
    t.s_v.push_back(vb.scale());
    row += s.n_b;
    t.start.push_back(row);
  }
  if (kb.size() > 0) {
    std::copy(kb.pending().begin(), kb.pending().end(), t.k.data() + row * d);
    std::copy(vb.pending().begin(), vb.pending().end(), t.v.data() + row * d);
    t.s_k.push_back(kb.scale());
    t.s_v.push_back(vb.scale());
    row += kb.size();
    t.start.push_back(row);
  }
  stats.buffer_bytes = 2 * kb.size() * d + 2 * kScaleBytes;  // pending K and V, and the universal scales
  stats.buffer_clamped = kb.clamped() + vb.clamped();
  stats.flushes = kb.flushes();
  stats.buffer_tokens = kb.size();
  return t;
}

}  // namespace attnlab::variants::turbo_detail
