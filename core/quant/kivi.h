// attnlab core: the KIVI KV-cache quantizer, TurboAttention's baseline (§5.3; KIVI, Liu et al. 2024).
//
// KIVI's scheme, with the generic quantizer's rules (quantize.h):
//   keys    asymmetric, per channel, in groups of g consecutive tokens (granularity group_tokens);
//   values  asymmetric, per token, in groups of g consecutive channels (granularity group_channels; a
//           shorter tail group when g does not divide the channels);
//   the most recent tokens stay in full precision (FP16), the residual.
// Split: quantized_tokens = ⌊(tokens − residual) / g⌋·g (0 when tokens ≤ residual); the remaining
// tokens − quantized_tokens ∈ [residual, residual + g) tokens are kept in FP16 — KIVI keeps the remainder
// that does not fill a key group in full precision too, so key groups never have a token tail. Keys and
// values split at the same token.
// Number formats: the cache's inputs are FP16 in KIVI, so k and v are rounded to FP16 first; scales and
// zero points are stored in FP16 (Spec::fp16_params); codes are b-bit. kivi_dequantize returns FP32
// values rounded to FP16 (the FP16 tensor the attention then reads): x̂ = fp16(q·s + z), computed in
// FP32 and rounded once.
#pragma once

#include "core/quant/quantize.h"

#include <cstdint>
#include <vector>

namespace attnlab::quant {

struct KiviCache {
  int64_t tokens = 0, channels = 0;  // the cached (tokens, channels) of one head
  int bits = 2;                      // 2, 4 or 8
  int64_t group = 32;                // g
  int64_t residual = 128;            // R: the most recent tokens at least, kept in FP16
  int64_t quantized_tokens = 0;      // ⌊(tokens − R) / g⌋·g: the leading tokens held quantized
  Quantized keys;                    // (quantized_tokens, channels), group_tokens; empty when 0 tokens
  Quantized values;                  // (quantized_tokens, channels), group_channels; empty when 0 tokens
  std::vector<float> k_residual;     // (tokens − quantized_tokens, channels), FP16 values
  std::vector<float> v_residual;     // (tokens − quantized_tokens, channels), FP16 values

  int64_t residual_tokens() const { return tokens - quantized_tokens; }
};

// k and v are (tokens, channels) of one head. bits ∈ {2, 4, 8}, group ≥ 1, residual ≥ 0; throws
// InputError naming kivi.* on bad parameters, empty input or NaN/Inf.
KiviCache kivi_quantize(const float* k, const float* v, int64_t tokens, int64_t channels, int bits,
                        int64_t group, int64_t residual);

// k_out and v_out are (tokens, channels): dequantized rows, then the FP16 residual, all FP16 values.
void kivi_dequantize(const KiviCache& c, float* k_out, float* v_out);

// Tokens [begin, end) of c as a cache of their own (a context-parallel shard), every value as c holds it: its
// quantized rows keep their codes, scales and zero points, its FP16 rows stay FP16, so kivi_dequantize of the
// slice is rows [begin, end) of c's. Its `residual` is the slice's FP16 token count, so the split rule above holds
// for it. Where begin or end falls inside c's quantized rows it must be a multiple of c.group (a key group is never
// cut); otherwise, or for an empty or out-of-range span, std::invalid_argument. Quantization stats are not carried.
KiviCache kivi_slice(const KiviCache& c, int64_t begin, int64_t end);
// Bytes of the cache: packed codes ⌈n·bits/8⌉ per tensor + FP16 scale and zero point per group
// (2 + 2 bytes) + the FP16 residual of K and V (2 bytes per value).
int64_t kivi_cache_bytes(const KiviCache& c);

}  // namespace attnlab::quant
