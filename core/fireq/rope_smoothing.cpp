// FireQ §3.2.1: RPN (Thm 3.1) and CRS on one key head. See rope_smoothing.h.
#include "core/fireq/rope_smoothing.h"

#include "core/error.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

namespace attnlab::fireq {

namespace {

void check_matrix(const char* where, const float* x, int64_t tokens, int64_t d) {
  if (tokens <= 0 || d <= 0)
    fail_input(where, "empty input (" + std::to_string(tokens) + " x " + std::to_string(d) + ")");
  if (x == nullptr) fail_input(where, "null data pointer");
  for (int64_t i = 0; i < tokens * d; ++i)
    if (!std::isfinite(x[i])) fail_input(where, "non-finite value at index " + std::to_string(i));
}

// RoPE pairs channel i with i + d/2 (Eq. 5), so d must be even.
void check_rope_matrix(const char* where, const float* x, int64_t tokens, int64_t d) {
  check_matrix(where, x, tokens, d);
  if (d % 2 != 0) fail_input(where, "head dimension d = " + std::to_string(d) + " must be even (RoPE pairs)");
}

void check_factor(const char* where, double f) {
  if (!(std::isfinite(f) && f > 0.0)) fail_input(where, "must be finite and > 0");
}

// Pair indices must lie in [0, d/2) and be distinct.
void check_pairs(const char* where, const std::vector<int64_t>& pairs, int64_t d) {
  std::vector<bool> seen(static_cast<size_t>(d / 2), false);
  for (int64_t i : pairs) {
    if (i < 0 || i >= d / 2) fail_input(where, "pair index " + std::to_string(i) + " outside [0, d/2)");
    if (seen[i]) fail_input(where, "pair index " + std::to_string(i) + " listed twice");
    seen[i] = true;
  }
}

void check_scales(const char* where, const PairScales& s, int64_t d) {
  if (static_cast<int64_t>(s.per_channel.size()) != d)
    fail_input(where, "has " + std::to_string(s.per_channel.size()) + " factors, expected d = " + std::to_string(d));
  for (float f : s.per_channel)
    if (!(std::isfinite(f) && f > 0.0f)) fail_input(where, "every factor must be finite and > 0");
}

// maxₙ‖(kᵢⁿ, kⱼⁿ)‖₂ for every pair i ∈ [0, d/2), in double. k is (tokens, d).
std::vector<double> max_pair_norms(const float* k, int64_t tokens, int64_t d) {
  const int64_t h = d / 2;
  std::vector<double> m(static_cast<size_t>(h), 0.0);
  for (int64_t n = 0; n < tokens; ++n)
    for (int64_t i = 0; i < h; ++i) m[i] = std::max(m[i], std::hypot(double(k[n * d + i]), double(k[n * d + i + h])));
  return m;
}

// maxₙ|k_cⁿ| for every channel c. k is (tokens, d).
std::vector<double> channel_absmax(const float* k, int64_t tokens, int64_t d) {
  std::vector<double> m(static_cast<size_t>(d), 0.0);
  for (int64_t n = 0; n < tokens; ++n)
    for (int64_t c = 0; c < d; ++c) m[c] = std::max(m[c], std::abs(double(k[n * d + c])));
  return m;
}

float to_factor(double f) { return f > 0.0 ? static_cast<float>(f) : 1.0f; }  // zero channel or pair: 1

}  // namespace

std::vector<int64_t> select_outlier_pairs(const float* k, int64_t tokens, int64_t d, int top_k) {
  check_rope_matrix("select_outlier_pairs.k", k, tokens, d);
  if (top_k < 0 || top_k > d / 2) fail_input("fireq.top_k", "must lie in [0, d/2 = " + std::to_string(d / 2) + "]");
  const std::vector<double> norm = max_pair_norms(k, tokens, d);
  std::vector<int64_t> order(norm.size());
  std::iota(order.begin(), order.end(), int64_t{0});
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return norm[a] > norm[b]; });
  order.resize(static_cast<size_t>(top_k));
  return order;
}

PairScales rpn_scales(const float* k, int64_t tokens, int64_t d, double alpha, const std::vector<int64_t>& skip_pairs) {
  check_rope_matrix("rpn_scales.k", k, tokens, d);
  check_factor("alpha", alpha);
  check_pairs("rpn_scales.skip_pairs", skip_pairs, d);
  const int64_t h = d / 2;
  const std::vector<double> norm = max_pair_norms(k, tokens, d);
  PairScales s{std::vector<float>(static_cast<size_t>(d), 1.0f)};
  std::vector<bool> skip(static_cast<size_t>(h), false);
  for (int64_t i : skip_pairs) skip[i] = true;
  for (int64_t i = 0; i < h; ++i) {
    if (skip[i]) continue;
    const float f = to_factor(alpha * norm[i]);  // Eq. 10: sᵢ = sⱼ = α·maxₙ‖(kᵢⁿ, kⱼⁿ)‖₂
    s.per_channel[i] = s.per_channel[i + h] = f;
  }
  for (float f : s.per_channel)
    if (!std::isfinite(f)) fail_input("alpha", "gives a factor outside the float range");
  return s;
}

PairScales crs_scales(const float* k_post_rope, int64_t tokens, int64_t d, const std::vector<int64_t>& pairs,
                      double beta) {
  check_rope_matrix("crs_scales.k", k_post_rope, tokens, d);
  check_factor("beta", beta);
  check_pairs("crs_scales.pairs", pairs, d);
  const int64_t h = d / 2;
  const std::vector<double> absmax = channel_absmax(k_post_rope, tokens, d);
  PairScales s{std::vector<float>(static_cast<size_t>(d), 1.0f)};
  for (int64_t i : pairs)
    for (int64_t c : {i, i + h}) s.per_channel[c] = to_factor(beta * absmax[c]);  // t_c = β·maxₙ|k_cⁿ|
  for (float f : s.per_channel)
    if (!std::isfinite(f)) fail_input("beta", "gives a factor outside the float range");
  return s;
}

PairScales crs_scales(const float* k_post_rope, int64_t tokens, int64_t d, int top_k, double beta) {
  return crs_scales(k_post_rope, tokens, d, select_outlier_pairs(k_post_rope, tokens, d, top_k), beta);
}

TwoStageScales two_stage_scales(const float* k_post_rope, int64_t tokens, int64_t d, const SmoothingParams& p) {
  TwoStageScales r;
  r.outlier_pairs = select_outlier_pairs(k_post_rope, tokens, d, p.top_k);
  r.rpn = rpn_scales(k_post_rope, tokens, d, p.alpha, r.outlier_pairs);
  // RPN leaves the outlier pairs at 1, so their post-RoPE values are the same before and after stage 1.
  r.crs = crs_scales(k_post_rope, tokens, d, r.outlier_pairs, p.beta);
  r.combined.per_channel.resize(static_cast<size_t>(d));
  for (int64_t c = 0; c < d; ++c) r.combined.per_channel[c] = r.rpn.per_channel[c] * r.crs.per_channel[c];
  return r;
}

void divide_channels(float* x, int64_t tokens, int64_t d, const PairScales& s) {
  check_matrix("divide_channels.x", x, tokens, d);
  check_scales("divide_channels.s", s, d);
  for (int64_t n = 0; n < tokens; ++n)
    for (int64_t c = 0; c < d; ++c) x[n * d + c] /= s.per_channel[c];
}

void multiply_channels(float* x, int64_t tokens, int64_t d, const PairScales& s) {
  check_matrix("multiply_channels.x", x, tokens, d);
  check_scales("multiply_channels.s", s, d);
  for (int64_t n = 0; n < tokens; ++n)
    for (int64_t c = 0; c < d; ++c) x[n * d + c] *= s.per_channel[c];
}

ChannelStats channel_stats(const float* x, int64_t tokens, int64_t d) {
  check_matrix("channel_stats.x", x, tokens, d);
  ChannelStats st{std::vector<float>(static_cast<size_t>(d), INFINITY),
                  std::vector<float>(static_cast<size_t>(d), -INFINITY), 1.0};
  for (int64_t n = 0; n < tokens; ++n)
    for (int64_t c = 0; c < d; ++c) {
      st.min[c] = std::min(st.min[c], x[n * d + c]);
      st.max[c] = std::max(st.max[c], x[n * d + c]);
    }
  double top = 0.0, sum = 0.0;
  for (int64_t c = 0; c < d; ++c) {
    const double a = std::max(std::abs(double(st.min[c])), std::abs(double(st.max[c])));
    top = std::max(top, a);
    sum += a;
  }
  if (sum > 0.0) st.max_over_mean_ratio = top / (sum / double(d));
  return st;
}

}  // namespace attnlab::fireq
