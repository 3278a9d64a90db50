// The K and V operands of one fireq KV head. See fireq_cache.h, and fireq.cpp's head comment.
#include "core/variants/fireq_cache.h"

#include "core/variants/fireq_quantize.h"

#include "core/error.h"
#include "core/fireq/int4_lut.h"
#include "core/fireq/token_fp8.h"
#include "core/quant/head_priority.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

namespace attnlab::variants::fireq_detail {

namespace {

// Tokens whose stored scale is a subnormal of its format (E4M3: below 2⁻⁶, fewer than 4 significant
// bits; FP32: below 2⁻¹²⁶), all-zero tokens (σ = 0) excluded.
int64_t subnormal_scales(const std::vector<float>& scale, fireq::ScaleFormat f) {
  const float normal = f == fireq::ScaleFormat::fp8_e4m3 ? 0x1p-6f : std::numeric_limits<float>::min();
  return std::count_if(scale.begin(), scale.end(), [&](float s) { return s > 0.0f && s < normal; });
}

// §3.1.1 Step 1: the operand rows of one INT4 tensor. lut: FP8(code·σ) from the 16-entry table of each
// token (int4_lut.h); otherwise the codes themselves (fold = false, K) or σ·code in FP32 (fold = true, V).
// Rows N … N + kPad − 1 are 0. Counts the elements whose LUT entry is a LUT event (saturated to ±448, or a
// non-zero code flushed to 0).
RowMatrix<float> operand(const fireq::TokenInt4& t, bool lut, bool fold, int64_t& lut_events) {
  RowMatrix<float> m(t.tokens + kPad, t.d);
  m.bottomRows(kPad).setZero();
  std::array<float, 16> table{};
  std::array<bool, 16> event{};
  for (int64_t n = 0; n < t.tokens; ++n) {
    const float sigma = t.scale[n];
    if (lut) {
      table = fireq::int4_fp8_lut(sigma);
      event = fireq::int4_fp8_lut_events(sigma);
    } else {
      for (int c = -8; c < 8; ++c) table[c + 8] = fold ? float(c) * sigma : float(c);  // exact for an E4M3 σ
    }
    const int8_t* q = t.q.data() + n * t.d;
    float* row = m.data() + n * t.d;
    for (int64_t c = 0; c < t.d; ++c) {
      row[c] = table[q[c] + 8];
      lut_events += event[q[c] + 8];
    }
  }
  return m;
}

// App. D's FP8 operand rows of one tensor x (n, d), K̃ or V: x̂ = FP8(x/β) with one β per `block` tokens
// (token_fp8.h), rows N … N + kPad − 1 zero. Refuses non-finite input as quantize_token_int4 does for the
// INT4 cache.
RowMatrix<float> fp8_operand(const float* x, int64_t n, int64_t d, int64_t block, fireq::TokenFp8& t) {
  for (int64_t i = 0; i < n * d; ++i)
    if (!std::isfinite(x[i])) fail_input("quantize_token_fp8.x", fmt::format("non-finite value at index {}", i));
  RowMatrix<float> m(n + kPad, d);
  m.topRows(n) = Eigen::Map<const RowMatrix<float>>(x, n, d);
  m.bottomRows(kPad).setZero();
  t = fireq::quantize_block_fp8(m.data(), n, d, block);
  return m;
}
}  // namespace

KvHead prepare_kv(const float* k, const float* v, int64_t n, int64_t d, const Settings& st) {
  KvHead x;
  // §3.2.1: the smoothing factors of this head (the fireq functions also reject non-finite keys).
  SmoothedKeys sk = smooth_keys(k, n, d, st);  // §3.2.1 (fireq_quantize.h)
  x.s = std::move(sk.s);
  x.outliers = std::move(sk.outliers);
  std::vector<float> ks = std::move(sk.k);

  if (st.fp8_kv) {
    // App. D: K̃ in E4M3 with Eq. 2's BF16 β per token (or per KV tile: fp8_k_scale), V with one per KV tile
    // (head comment); V̂ stays unscaled, attend() multiplies tile j's P̂·V̂ by β_V,j.
    fireq::TokenFp8 fk, fv;
    x.k = fp8_operand(ks.data(), n, d, st.k_scale_block(), fk);
    x.v = fp8_operand(v, n, d, st.block_c, fv);
    x.s_k = fk.scale, x.s_v = fv.scale;
    x.clamped_k = fk.saturated, x.clamped_v = fv.saturated;
    x.under_k = fk.fallback_scales, x.under_v = fv.fallback_scales;
  } else {
    // Eq. 1: per-token INT4 with E4M3 (or FP32) scales (quantize_token_int4 rejects non-finite input).
    const fireq::TokenInt4 qk = fireq::quantize_token_int4(ks.data(), n, d, st.format);
    const fireq::TokenInt4 qv = fireq::quantize_token_int4(v, n, d, st.format);
    x.s_k = qk.scale, x.s_v = qv.scale;
    x.clamped_k = qk.clamped, x.clamped_v = qv.clamped;
    x.under_k = qk.underflow_tokens, x.under_v = qv.underflow_tokens;
    x.sat_k = qk.saturated_tokens, x.sat_v = qv.saturated_tokens;
    x.sub_k = subnormal_scales(qk.scale, st.format), x.sub_v = subnormal_scales(qv.scale, st.format);
    x.k = operand(qk, st.lut, false, x.lut_k);
    x.v = operand(qv, st.lut, true, x.lut_v);
  }
  if (st.k_scale_per_column()) {
    x.k_col = Eigen::VectorXf::Zero(n + kPad);
    for (int64_t t = 0; t < n; ++t) x.k_col[t] = x.s_k[t / st.k_scale_block()];
  }
  quant::HeadRange smoothed = quant::head_range(ks.data(), n, d);  // for the probes
  x.ks_min = std::move(smoothed.channel_min), x.ks_max = std::move(smoothed.channel_max);
  return x;
}

}  // namespace attnlab::variants::fireq_detail
