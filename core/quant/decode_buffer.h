// attnlab core: the INT8 decode buffer of one head's K (or V) (TurboAttention §3.3, Fig. 3 right).
//
// Tokens generated after prefill are quantized to INT8 one at a time with a universal scale fixed at
// prefill, and held in a buffer B of n_b tokens; when B is full it is flushed into the compressed cache
// as one progressive INT4/INT2 block (Eq. 10), and starts empty again.
//   - Universal scale: s = max|X_prefill| / 119 over this head's prefill K (or V) — the same rule as a
//     prefill block's s_K (Eq. 9), over the whole prefill (universal_scale below). A zero prefill gives 1.
//   - Append: q = clamp(rne(x / s), −127, 127) (quantize_with_scale, q_max = 127). The 119 of the scale
//     leaves new tokens a headroom of 127/119 ≈ 1.067× the prefill max; beyond it (|x| ≥ 127.5·s) values
//     are clamped, and counted, rather than re-compressing the tokens already in B (§3.3, §5.2).
//   - Flush: step 1 of progressive quantization is not run again. The buffered INT8 values and the
//     universal scale become the block's q8 and scale8 as they are (progressive_compress); only step 2,
//     per-channel asymmetric INT4/INT2 in integers, runs. This is the paper's "avoid re-compression":
//     no value is ever quantized from float twice.
#pragma once

#include "core/quant/progressive.h"

#include <cstdint>
#include <vector>

namespace attnlab::quant {

// The universal INT8 scale of a head from its prefill x (tokens, channels): max|x| / q_max8, or 1 for
// an all-zero prefill (the generic quantizer's rule, tensor granularity).
float universal_scale(const float* prefill, int64_t tokens, int64_t channels, double q_max8 = 119);

class DecodeBuffer {  // one head's K (or V) tokens generated after prefill
 public:
  // channels ≥ 1, n_b ≥ 1, universal_scale a finite normal FP32 > 0, cache_bits ∈ {2, 4}.
  DecodeBuffer(int64_t channels, int64_t n_b, float universal_scale, int cache_bits,
               IntScale rule = IntScale::nearest);

  // token is (channels). Appends it as INT8 with the universal scale, clamping outliers (counted).
  // Returns true when the buffer reached n_b tokens and was flushed into a progressive block.
  bool append(const float* token);

  int64_t size() const { return static_cast<int64_t>(pending_.size()) / channels_; }  // tokens in B
  int64_t clamped() const { return clamped_; }  // values clamped to ±127 since construction
  int64_t flushes() const { return static_cast<int64_t>(flushed_.size()); }
  int64_t channels() const { return channels_; }
  int64_t n_b() const { return n_b_; }
  float scale() const { return scale_; }
  const std::vector<ProgressiveBlock>& flushed() const { return flushed_; }  // the compressed cache
  const std::vector<int8_t>& pending() const { return pending_; }  // (size(), channels) INT8, not yet flushed

 private:
  int64_t channels_, n_b_;
  float scale_;
  int cache_bits_;
  IntScale rule_;
  int64_t clamped_ = 0, pending_clamped_ = 0;
  std::vector<int8_t> pending_;
  std::vector<ProgressiveBlock> flushed_;
};

}  // namespace attnlab::quant
