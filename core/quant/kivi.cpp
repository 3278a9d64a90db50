// attnlab core: the KIVI baseline (kivi.h states the split and the number formats).
#include "core/quant/kivi.h"

#include "core/error.h"
#include "core/formats/pack.h"
#include "core/formats/round.h"

#include <fmt/format.h>

#include <algorithm>

namespace attnlab::quant {

namespace {

constexpr int64_t kFp16Bytes = 2;

std::vector<float> fp16_copy(const float* x, int64_t n) {
  std::vector<float> r(x, x + n);
  formats::round_fp16_inplace(r.data(), n);
  return r;
}

}  // namespace

KiviCache kivi_quantize(const float* k, const float* v, int64_t tokens, int64_t channels, int bits,
                        int64_t group, int64_t residual) {
  if (bits != 2 && bits != 4 && bits != 8)
    fail_input("kivi.bits", fmt::format("must be 2, 4 or 8 (got {})", bits));
  if (group < 1) fail_input("kivi.group", fmt::format("must be ≥ 1 (got {})", group));
  if (residual < 0) fail_input("kivi.residual", fmt::format("must be ≥ 0 (got {})", residual));
  if (tokens < 1 || channels < 1)
    fail_input("kivi.x", fmt::format("must not be empty (got tokens = {}, channels = {})", tokens, channels));
  require_finite(k, tokens, channels, "kivi.k");
  require_finite(v, tokens, channels, "kivi.v");

  KiviCache c;
  c.tokens = tokens;
  c.channels = channels;
  c.bits = bits;
  c.group = group;
  c.residual = residual;
  c.quantized_tokens = tokens > residual ? (tokens - residual) / group * group : 0;

  // The cache holds FP16 keys and values (KIVI's inputs).
  const std::vector<float> k16 = fp16_copy(k, tokens * channels), v16 = fp16_copy(v, tokens * channels);
  require_finite(k16.data(), tokens, channels, "kivi.k (rounded to FP16, max 65504)");
  require_finite(v16.data(), tokens, channels, "kivi.v (rounded to FP16, max 65504)");
  const int64_t nq = c.quantized_tokens * channels;
  if (c.quantized_tokens > 0) {
    const Spec keys{.bits = bits,
                    .scheme = Scheme::asymmetric,
                    .granularity = Granularity::group_tokens,
                    .group = group,
                    .fp16_params = true};
    const Spec values{.bits = bits,
                      .scheme = Scheme::asymmetric,
                      .granularity = Granularity::group_channels,
                      .group = group,
                      .fp16_params = true};
    c.keys = quantize(k16.data(), c.quantized_tokens, channels, keys);
    c.values = quantize(v16.data(), c.quantized_tokens, channels, values);
  }
  c.k_residual.assign(k16.begin() + nq, k16.end());
  c.v_residual.assign(v16.begin() + nq, v16.end());
  return c;
}

void kivi_dequantize(const KiviCache& c, float* k_out, float* v_out) {
  const int64_t nq = c.quantized_tokens * c.channels;
  if (c.quantized_tokens > 0) {
    dequantize(c.keys, k_out);
    dequantize(c.values, v_out);
    formats::round_fp16_inplace(k_out, nq);
    formats::round_fp16_inplace(v_out, nq);
  }
  std::copy(c.k_residual.begin(), c.k_residual.end(), k_out + nq);
  std::copy(c.v_residual.begin(), c.v_residual.end(), v_out + nq);
}

int64_t kivi_cache_bytes(const KiviCache& c) {
  const int64_t nq = c.quantized_tokens * c.channels;
  const int64_t codes = 2 * formats::packed_bytes(nq, c.bits);                    // K and V codes
  const int64_t params = 2 * kFp16Bytes * (c.keys.groups() + c.values.groups());  // s and z per group
  const int64_t full = 2 * kFp16Bytes * c.residual_tokens() * c.channels;         // K and V residual
  return codes + params + full;
}

}  // namespace attnlab::quant
