// attnlab core: the KIVI baseline (kivi.h states the split and the number formats).
#include "core/quant/kivi.h"

#include "core/error.h"
#include "core/formats/pack.h"
#include "core/formats/round.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

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

namespace {

// Rows [begin, end) of q with their groups (begin and end on q's row tiles).
Quantized rows_of(const Quantized& q, int64_t begin, int64_t end) {
  const Tile t = tile_of(q.spec, q.rows, q.cols);
  const int64_t per_row_tile = (q.cols + t.col_span - 1) / t.col_span;
  const int64_t g0 = begin / t.row_span * per_row_tile, g1 = end / t.row_span * per_row_tile;
  Quantized s;
  s.rows = end - begin, s.cols = q.cols, s.spec = q.spec;
  s.q.assign(q.q.begin() + begin * q.cols, q.q.begin() + end * q.cols);
  auto groups = [&](const std::vector<float>& v) {
    return v.empty() ? std::vector<float>{} : std::vector<float>(v.begin() + g0, v.begin() + g1);
  };
  s.scale = groups(q.scale), s.zero = groups(q.zero), s.group_min = groups(q.group_min), s.group_max = groups(q.group_max);
  return s;
}

}  // namespace

KiviCache kivi_slice(const KiviCache& c, int64_t begin, int64_t end) {
  const int64_t qt = c.quantized_tokens;
  if (begin < 0 || end > c.tokens || begin >= end)
    throw std::invalid_argument(fmt::format("kivi_slice: tokens [{}, {}) of a {}-token cache", begin, end, c.tokens));
  if ((begin < qt && begin % c.group != 0) || (end < qt && end % c.group != 0))
    throw std::invalid_argument(fmt::format("kivi_slice: [{}, {}) cuts a key group of {} tokens", begin, end, c.group));
  KiviCache s;
  s.tokens = end - begin, s.channels = c.channels, s.bits = c.bits, s.group = c.group;
  const int64_t qb = std::min(begin, qt), qe = std::min(end, qt);
  s.quantized_tokens = qe - qb;
  s.residual = s.tokens - s.quantized_tokens;
  if (s.quantized_tokens > 0) s.keys = rows_of(c.keys, qb, qe), s.values = rows_of(c.values, qb, qe);
  const int64_t r0 = (std::max(begin, qt) - qt) * c.channels, r1 = (end - qt) * c.channels;
  if (end > qt) {
    s.k_residual.assign(c.k_residual.begin() + r0, c.k_residual.begin() + r1);
    s.v_residual.assign(c.v_residual.begin() + r0, c.v_residual.begin() + r1);
  }
  return s;
}

int64_t kivi_cache_bytes(const KiviCache& c) {
  const int64_t nq = c.quantized_tokens * c.channels;
  const int64_t codes = 2 * formats::packed_bytes(nq, c.bits);                    // K and V codes
  const int64_t params = 2 * kFp16Bytes * (c.keys.groups() + c.values.groups());  // s and z per group
  const int64_t full = 2 * kFp16Bytes * c.residual_tokens() * c.channels;         // K and V residual
  return codes + params + full;
}

}  // namespace attnlab::quant
