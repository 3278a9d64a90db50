// attnlab core: the INT8 decode buffer (decode_buffer.h states the rules; TurboAttention §3.3).
#include "core/quant/decode_buffer.h"

#include "core/error.h"
#include "core/quant/quantize.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

namespace attnlab::quant {

namespace {
constexpr float kBufferQMax = 127;  // appended tokens use the whole symmetric INT8 range
}  // namespace

float universal_scale(const float* prefill, int64_t tokens, int64_t channels, double q_max8) {
  if (tokens < 1 || channels < 1)
    fail_input("decode_buffer.prefill",
               fmt::format("must not be empty (got tokens = {}, channels = {})", tokens, channels));
  require_finite(prefill, tokens, channels, "decode_buffer.prefill");
  const Quantized q = quantize(
      prefill, tokens, channels,
      Spec{.bits = 8, .scheme = Scheme::symmetric, .granularity = Granularity::tensor, .q_max = q_max8});
  return q.scale[0];  // Eq. 9 over the whole prefill: max|X| / q_max8 (1 when all zero)
}

DecodeBuffer::DecodeBuffer(int64_t channels, int64_t n_b, float universal_scale, int cache_bits,
                           IntScale rule)
    : channels_(channels), n_b_(n_b), scale_(universal_scale), cache_bits_(cache_bits), rule_(rule) {
  if (channels < 1) fail_input("decode_buffer.channels", fmt::format("must be ≥ 1 (got {})", channels));
  if (n_b < 1) fail_input("n_b", fmt::format("must be ≥ 1 (got {})", n_b));
  if (!(universal_scale >= std::numeric_limits<float>::min()) || std::isinf(universal_scale))
    fail_input("decode_buffer.universal_scale",
               fmt::format("must be a finite normal FP32 number > 0 (got {})", universal_scale));
  if (cache_bits != 2 && cache_bits != 4)
    fail_input("decode_buffer.cache_bits", fmt::format("must be 4 or 2 (got {})", cache_bits));
  pending_.reserve(n_b * channels);
}

bool DecodeBuffer::append(const float* token) {
  require_finite(token, 1, channels_, "decode_buffer.token");
  // §3.3: INT8 with the universal scale, outliers clamped to ±127 instead of re-scaling B. The rule is
  // quantize_with_scale's (quantize.h Eq. 3, symmetric: ⌈x/s⌋ ties to even, clamped to ±q_max), written
  // out here because append runs once per generated token: no allocation, no error statistics.
  const size_t at = pending_.size();
  pending_.resize(at + static_cast<size_t>(channels_));
  int8_t* __restrict q = pending_.data() + at;
  const float s = scale_, q_max = kBufferQMax;
  int32_t clamped = 0;
  for (int64_t c = 0; c < channels_; ++c) {
    const float v = std::nearbyint(token[c] / s);
    clamped += int32_t(v < -q_max) + int32_t(v > q_max);
    q[c] = static_cast<int8_t>(std::min(std::max(v, -q_max), q_max));
  }
  clamped_ += clamped;
  pending_clamped_ += clamped;
  if (size() < n_b_) return false;
  // Flush: the INT8 tokens and the universal scale are the block's q8 and s_K; only Eq. 10 runs.
  ProgressiveBlock block = progressive_compress(pending_.data(), n_b_, channels_, scale_, cache_bits_, rule_);
  block.clamped8 = pending_clamped_;
  flushed_.push_back(std::move(block));
  pending_.clear();
  pending_clamped_ = 0;
  return true;
}

}  // namespace attnlab::quant
