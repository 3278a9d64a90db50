// attnlab core — TurboAttention's INT8 tiles and compressed KV cache (turbo_cache.h states the rules).
#include "core/variants/turbo_cache.h"

#include "core/formats/pack.h"
#include "core/quant/decode_buffer.h"
#include "core/quant/quantize.h"
#include "core/variants/turbo_layout.h"

#include <algorithm>
#include <stdexcept>
#include <tuple>

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

// Step 2 of one INT8 block (Eq. 10) at `bits` ∈ {2, 4}, or nothing at 8 (the block keeps q8 and its
// scale; bits = 8 marks it); adds the block's bytes and counts to stats.
quant::ProgressiveBlock compress_block(const int8_t* q8, int64_t rows, int64_t d, float scale, int bits,
                                       quant::IntScale rule, CacheStats& stats) {
  stats.block_scale_bytes += kScaleBytes;
  if (bits == 8) {
    stats.code_bytes += rows * d;
    quant::ProgressiveBlock b;
    b.rows = rows, b.cols = d, b.bits = 8, b.scale8 = scale;
    b.q8.assign(q8, q8 + rows * d);
    return b;
  }
  quant::ProgressiveBlock b = quant::progressive_compress(q8, rows, d, scale, bits, rule);
  stats.code_bytes += formats::packed_bytes(rows * d, bits);
  stats.scale_zero_bytes += 2 * d;  // s_int and z_int per channel, INT8 each (progressive.h)
  stats.step2_clamped += b.clamped;
  stats.saturated += b.saturated;
  return b;
}

// A flushed decode-buffer block as the cache keeps it: its step-2 codes, or for an 8-bit head its INT8
// values alone (the buffer ran step 2 at 4 bits; those codes are dropped).
quant::ProgressiveBlock keep_flushed(const quant::ProgressiveBlock& b, int bits, CacheStats& stats) {
  if (bits == 8) return compress_block(b.q8.data(), b.rows, b.cols, b.scale8, 8, b.rule, stats);
  stats.block_scale_bytes += kScaleBytes;
  stats.code_bytes += formats::packed_bytes(b.rows * b.cols, bits);
  stats.scale_zero_bytes += 2 * b.cols;
  stats.step2_clamped += b.clamped;
  stats.saturated += b.saturated;
  return b;
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
  for (int64_t j = 0; j < tiles.tiles(); ++j) {
    const int64_t r0 = tiles.start[j], rows = tiles.start[j + 1] - r0;
    for (auto [m, s] : {std::pair{&tiles.k, tiles.s_k[j]}, std::pair{&tiles.v, tiles.s_v[j]}}) {
      const std::vector<int8_t> q8(m->data() + r0 * d, m->data() + (r0 + rows) * d);  // exact: INT8 values
      compress_block(q8.data(), rows, d, s, bits, rule, stats);
    }
  }
  return stats;
}

HeadCache decode_cache(const float* k, const float* v, int64_t tokens, int64_t d, const DecodeSettings& s) {
  HeadCache c;
  c.d = d;
  c.bits = s.bits;
  c.prefill_tokens = tokens - s.decode_steps;  // ≥ 1 (the variant validates decode_steps)
  // The prefill's cache (Alg. 1 lines 13–18): INT8 blocks, then step 2 per block.
  const Int8Tiles t = prefill_tiles(k, v, c.prefill_tokens, d, s.block_c, s.q_max8);
  for (int64_t j = 0; j < t.tiles(); ++j) {
    const int64_t r0 = t.start[j], rows = t.start[j + 1] - r0;
    for (auto [m, scale, out] : {std::tuple{&t.k, t.s_k[j], &c.k_blocks}, std::tuple{&t.v, t.s_v[j], &c.v_blocks}}) {
      const std::vector<int8_t> q8(m->data() + r0 * d, m->data() + (r0 + rows) * d);  // exact: INT8 values
      out->push_back(compress_block(q8.data(), rows, d, scale, s.bits, s.rule, c.stats));
    }
  }
  c.prefill_blocks = t.tiles();
  // §3.3: the generated tokens go through the INT8 buffer with universal scales chosen at prefill (set
  // whether or not any token follows, so a cache can be continued). The buffer's own step 2 runs at 4 bits
  // for an 8-bit head; keep_flushed then keeps the INT8 values.
  c.k_universal = quant::universal_scale(k, c.prefill_tokens, d, s.q_max8);
  c.v_universal = quant::universal_scale(v, c.prefill_tokens, d, s.q_max8);
  if (s.decode_steps == 0) return c;
  const int buffer_bits = s.bits == 8 ? 4 : s.bits;
  quant::DecodeBuffer kb(d, s.n_b, c.k_universal, buffer_bits, s.rule);
  quant::DecodeBuffer vb(d, s.n_b, c.v_universal, buffer_bits, s.rule);
  for (int64_t r = c.prefill_tokens; r < tokens; ++r) {
    kb.append(k + r * d);
    vb.append(v + r * d);
  }
  for (size_t f = 0; f < kb.flushed().size(); ++f) {
    c.k_blocks.push_back(keep_flushed(kb.flushed()[f], s.bits, c.stats));
    c.v_blocks.push_back(keep_flushed(vb.flushed()[f], s.bits, c.stats));
  }
  c.k_pending = kb.pending();
  c.v_pending = vb.pending();
  c.stats.buffer_bytes = 2 * kb.size() * d + 2 * kScaleBytes;  // pending K and V, and the universal scales
  c.stats.buffer_clamped = kb.clamped() + vb.clamped();
  c.stats.flushes = kb.flushes();
  c.stats.buffer_tokens = kb.size();
  return c;
}

Int8Tiles tiles_of(const HeadCache& c) {
  Int8Tiles t;
  const int64_t d = c.d, pending = c.pending();
  int64_t tokens = pending;
  for (const auto& b : c.k_blocks) tokens += b.rows;
  t.k.resize(tokens, d);
  t.v.resize(tokens, d);
  int64_t row = 0;
  for (size_t j = 0; j < c.k_blocks.size(); ++j) {
    t.start.push_back(row);
    for (auto [b, out] : {std::pair{&c.k_blocks[j], &t.k}, std::pair{&c.v_blocks[j], &t.v}}) {
      const std::vector<int8_t> back = c.bits == 8 ? b->q8 : quant::progressive_dequantize(*b);  // Alg. 2 line 6
      std::copy(back.begin(), back.end(), out->data() + row * d);
    }
    t.s_k.push_back(c.k_blocks[j].scale8);
    t.s_v.push_back(c.v_blocks[j].scale8);
    row += c.k_blocks[j].rows;
  }
  if (pending > 0) {
    t.start.push_back(row);
    std::copy(c.k_pending.begin(), c.k_pending.end(), t.k.data() + row * d);
    std::copy(c.v_pending.begin(), c.v_pending.end(), t.v.data() + row * d);
    t.s_k.push_back(c.k_universal);
    t.s_v.push_back(c.v_universal);
    row += pending;
  }
  t.start.push_back(row);
  return t;
}

HeadCache slice_by_last_token(const HeadCache& c, int64_t begin, int64_t end) {
  HeadCache part;
  part.d = c.d, part.bits = c.bits;
  part.k_universal = c.k_universal, part.v_universal = c.v_universal;
  int64_t first = 0;  // the block's first token
  for (size_t j = 0; j < c.k_blocks.size(); ++j) {
    const int64_t rows = c.k_blocks[j].rows, last = first + rows - 1;
    if (last >= begin && last < end) {
      part.k_blocks.push_back(c.k_blocks[j]);
      part.v_blocks.push_back(c.v_blocks[j]);
      if (int64_t(j) < c.prefill_blocks) ++part.prefill_blocks, part.prefill_tokens += rows;
    }
    first += rows;
  }
  const int64_t last = first + c.pending() - 1;  // the pending tokens follow the blocks
  if (c.pending() > 0 && last >= begin && last < end) part.k_pending = c.k_pending, part.v_pending = c.v_pending;
  return part;
}

Int8Tiles decode_tiles(const float* k, const float* v, int64_t tokens, int64_t d, const DecodeSettings& s,
                       CacheStats& stats) {
  const HeadCache c = decode_cache(k, v, tokens, d, s);
  stats = c.stats;
  return tiles_of(c);
}

DeviceImage device_image(const HeadCache& c, int64_t block_c, int64_t slots) {
  if (c.bits != 2 && c.bits != 4) throw std::logic_error("turbo device_image: the GPU cache holds 2- or 4-bit heads");
  if (static_cast<int64_t>(c.k_blocks.size()) > slots || c.pending() > block_c)
    throw std::logic_error("turbo device_image: the cache does not fit the slots");
  const int64_t d = c.d, code_bytes = turbo_layout::code_bytes(block_c, d, c.bits);
  const int64_t sz = turbo_layout::scale_zero_bytes(d);
  DeviceImage img;
  img.codes.assign(static_cast<size_t>(slots * 2 * code_bytes), 0);
  img.scale_zero.assign(static_cast<size_t>(slots * sz), 0);
  img.block_scales.assign(static_cast<size_t>(slots * 2), 0.0f);
  img.k_buffer.assign(static_cast<size_t>(block_c * d), 0);
  img.v_buffer.assign(static_cast<size_t>(block_c * d), 0);
  for (size_t j = 0; j < c.k_blocks.size(); ++j) {
    const quant::ProgressiveBlock& kb = c.k_blocks[j];
    const quant::ProgressiveBlock& vb = c.v_blocks[j];
    uint8_t* k_codes = img.codes.data() + int64_t(j) * 2 * code_bytes;
    uint8_t* v_codes = k_codes + code_bytes;
    for (int64_t tau = 0; tau < kb.rows; ++tau)
      for (int64_t ch = 0; ch < d; ++ch) {
        const turbo_layout::CodeAt ka = turbo_layout::k_code_at(tau, ch, d, c.bits);
        const turbo_layout::CodeAt va = turbo_layout::v_code_at(tau, ch, d, c.bits);
        k_codes[ka.byte] = uint8_t(k_codes[ka.byte] | (kb.codes[size_t(tau * d + ch)] << ka.shift));
        v_codes[va.byte] = uint8_t(v_codes[va.byte] | (vb.codes[size_t(tau * d + ch)] << va.shift));
      }
    int8_t* szp = img.scale_zero.data() + int64_t(j) * sz;
    for (int64_t ch = 0; ch < d; ++ch) {  // s_int ≤ 85 and |z_int| ≤ 127 (progressive.h): INT8 as stored
      szp[ch] = int8_t(kb.s_int[size_t(ch)]), szp[d + ch] = int8_t(kb.z_int[size_t(ch)]);
      szp[2 * d + ch] = int8_t(vb.s_int[size_t(ch)]), szp[3 * d + ch] = int8_t(vb.z_int[size_t(ch)]);
    }
    turbo_layout::write_saturation_flags(szp, d, c.bits);
    img.block_scales[2 * j] = kb.scale8, img.block_scales[2 * j + 1] = vb.scale8;
  }
  for (int64_t tau = 0; tau < c.pending(); ++tau)
    for (int64_t ch = 0; ch < d; ++ch) {
      img.k_buffer[size_t(turbo_layout::k8_at(tau, ch, d))] = c.k_pending[size_t(tau * d + ch)];
      img.v_buffer[size_t(turbo_layout::v8_at(tau, ch, d))] = c.v_pending[size_t(tau * d + ch)];
    }
  return img;
}

}  // namespace attnlab::variants::turbo_detail
