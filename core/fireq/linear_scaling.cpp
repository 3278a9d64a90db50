// FireQ §3.1.2: CAS (Def. 3.1) and PTS (Def. 3.2) for INT4 × FP8 linear layers. See linear_scaling.h.
#include "core/fireq/linear_scaling.h"

#include "core/error.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace attnlab::fireq {

namespace {

// Shapes and values every entry point checks: a non-empty (rows, cols) matrix of finite floats.
void check_matrix(const char* where, const float* x, int64_t rows, int64_t cols) {
  if (rows <= 0 || cols <= 0)
    fail_input(where, "empty input (" + std::to_string(rows) + " x " + std::to_string(cols) + ")");
  if (x == nullptr) fail_input(where, "null data pointer");
  for (int64_t i = 0; i < rows * cols; ++i)
    if (!std::isfinite(x[i])) fail_input(where, "non-finite value at index " + std::to_string(i));
}

void check_lambda(const char* where, const std::vector<float>& lambda, int64_t in) {
  if (static_cast<int64_t>(lambda.size()) != in)
    fail_input(where, "lambda has " + std::to_string(lambda.size()) + " entries, expected " + std::to_string(in));
  for (float l : lambda)
    if (!(std::isfinite(l) && l > 0.0f)) fail_input(where, "every lambda must be finite and > 0");
}

// absmean(ωⁱ) of every column i of w (out, in), in double.
std::vector<double> column_absmeans(const float* w, int64_t out, int64_t in) {
  std::vector<double> sum(static_cast<size_t>(in), 0.0);
  for (int64_t o = 0; o < out; ++o)
    for (int64_t i = 0; i < in; ++i) sum[i] += std::abs(double(w[o * in + i]));
  for (double& s : sum) s /= double(out);
  return sum;
}

}  // namespace

std::vector<float> cas_factors(const float* w, int64_t out, int64_t in, double target_absmean) {
  check_matrix("cas_factors.w", w, out, in);
  if (!(std::isfinite(target_absmean) && target_absmean > 0.0))
    fail_input("cas_factors.target_absmean", "must be finite and > 0");
  const std::vector<double> absmean = column_absmeans(w, out, in);
  std::vector<float> lambda(static_cast<size_t>(in));
  for (int64_t i = 0; i < in; ++i)  // Eq. 6: λⁱ = ω̄ / absmean(ωⁱ); a zero column keeps λ = 1
    lambda[i] = absmean[i] > 0.0 ? static_cast<float>(target_absmean / absmean[i]) : 1.0f;
  for (float l : lambda)
    if (!(std::isfinite(l) && l > 0.0f))
      fail_input("cas_factors.target_absmean", "gives a lambda outside the float range");
  return lambda;
}

double cas_default_target(const float* w, int64_t out, int64_t in) {
  check_matrix("cas_default_target.w", w, out, in);
  double sum = 0.0;
  int64_t nonzero = 0;
  for (double a : column_absmeans(w, out, in))
    if (a > 0.0) sum += a, ++nonzero;
  return nonzero > 0 ? sum / double(nonzero) : 0.0;
}

void cas_scale_weights(float* w, int64_t out, int64_t in, const std::vector<float>& lambda) {
  check_matrix("cas_scale_weights.w", w, out, in);
  check_lambda("cas_scale_weights.lambda", lambda, in);
  for (int64_t o = 0; o < out; ++o)
    for (int64_t i = 0; i < in; ++i) w[o * in + i] *= lambda[i];  // W̄ = W·Λ
}

void cas_scale_activations(float* x, int64_t tokens, int64_t in, const std::vector<float>& lambda) {
  check_matrix("cas_scale_activations.x", x, tokens, in);
  check_lambda("cas_scale_activations.lambda", lambda, in);
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t i = 0; i < in; ++i) x[t * in + i] /= lambda[i];  // X·Λ⁻¹ (Eq. 7)
}

double underflow_score(const float* w, int64_t out, int64_t in, int n) {
  check_matrix("underflow_score.w", w, out, in);
  if (n < -200 || n > 200) fail_input("underflow_score.n", "must lie in [-200, 200]");
  double s = 0.0;  // Eq. 8
  for (int64_t i = 0; i < out * in; ++i)
    s += std::max(0.0, kUnderflowThreshold - std::ldexp(std::abs(double(w[i])), n));
  return s;
}

int pts_exponent(const float* w, int64_t out, int64_t in) {
  check_matrix("pts_exponent.w", w, out, in);
  double min_nonzero = INFINITY, max_abs = 0.0;
  for (int64_t i = 0; i < out * in; ++i) {
    const double a = std::abs(double(w[i]));
    max_abs = std::max(max_abs, a);
    if (a > 0.0) min_nonzero = std::min(min_nonzero, a);
  }
  if (max_abs == 0.0) return 0;                    // S(W·2ⁿ) is constant: condition 1 at n = 0
  if (max_abs >= kOverflowThreshold) return 0;     // already beyond E4M3: never scale up (see header)
  // Scanning n upward, the first n meeting either condition; both are met by n ≤ 160 (floats ≥ 2⁻¹⁴⁹).
  for (int n = 0;; ++n) {
    const bool stable = std::ldexp(min_nonzero, n) >= kUnderflowThreshold;      // condition 1 (Eq. 8)
    const double top = std::ldexp(max_abs, n);
    const bool band = top >= kOverflowThreshold / 2 && top < kOverflowThreshold;  // condition 2 (Eq. 9)
    if (stable || band) return n;
  }
}

void pts_scale(float* w, int64_t count, int n) {
  check_matrix("pts_scale.w", w, 1, count);
  if (n < -200 || n > 200) fail_input("pts_scale.n", "must lie in [-200, 200]");
  for (int64_t i = 0; i < count; ++i) w[i] = std::ldexp(w[i], n);
}

double underflow_fraction(const float* w, int64_t out, int64_t in, int64_t group) {
  check_matrix("underflow_fraction.w", w, out, in);
  if (group <= 0 || in % group != 0)
    fail_input("underflow_fraction.group", "must be > 0 and divide in (" + std::to_string(in) + ")");
  int64_t at_risk = 0;
  for (int64_t o = 0; o < out; ++o)
    for (int64_t g0 = 0; g0 < in; g0 += group) {
      float m = 0.0f;
      for (int64_t i = g0; i < g0 + group; ++i) m = std::max(m, std::abs(w[o * in + i]));
      if (double(m) < kUnderflowThreshold) ++at_risk;  // Lemma B.1
    }
  return double(at_risk) / double(out * (in / group));
}

}  // namespace attnlab::fireq
