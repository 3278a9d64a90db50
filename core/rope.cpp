#include "core/rope.h"

#include "core/data/random.h"
#include "core/parallel.h"

#include <cmath>
#include <stdexcept>
#include <string>

// No fused multiply-adds (core/data/random.h says why): GCC keeps contraction off under -std=c++20
// without GNU extensions; Clang needs telling.
#if defined(__clang__)
#pragma clang fp contract(off)
#endif

namespace attnlab {

double rope_frequency(int64_t i, int64_t dim, double base) {
  // base^(−2i/d) = exp(−(2i/d)·ln base), with the portable exp and log.
  const double exponent = -(double(2 * i) / double(dim));
  return data::portable_exp(exponent * data::portable_log(base));
}

std::vector<int64_t> rope_positions(int64_t count, int64_t first) {
  std::vector<int64_t> out(static_cast<size_t>(count > 0 ? count : 0));
  for (size_t n = 0; n < out.size(); ++n) out[n] = first + static_cast<int64_t>(n);
  return out;
}

namespace {

void rotate(Tensor& x, const std::vector<int64_t>& positions, double base, bool inverse) {
  const Shape4& s = x.shape();
  if (s.dim % 2 != 0)
    throw std::invalid_argument("apply_rope: head dimension " + std::to_string(s.dim) + " is odd");
  if (static_cast<int64_t>(positions.size()) != s.len)
    throw std::invalid_argument("apply_rope: " + std::to_string(positions.size()) + " positions for " +
                                std::to_string(s.len) + " tokens");
  if (!(base > 0.0) || !std::isfinite(base))
    throw std::invalid_argument("apply_rope: base must be a finite number > 0");
  if (x.empty()) return;
  const int64_t half = s.dim / 2;

  std::vector<double> theta(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i) theta[i] = rope_frequency(i, s.dim, base);

  // cos and sin of p·θ_i for every token and pair, shared by all batch entries and heads.
  std::vector<double> cos_t(static_cast<size_t>(s.len * half)), sin_t(cos_t.size());
  parallel_for(s.len, [&](int64_t n) {
    const double p = double(positions[n]);
    for (int64_t i = 0; i < half; ++i) {
      double sn = 0.0, cs = 0.0;
      data::portable_sincos(p * theta[i], sn, cs);
      cos_t[n * half + i] = cs;
      sin_t[n * half + i] = inverse ? -sn : sn;
    }
  });

  parallel_for(s.batch * s.heads, [&](int64_t bh) {
    float* head = x.data() + bh * s.len * s.dim;
    for (int64_t n = 0; n < s.len; ++n) {
      float* row = head + n * s.dim;
      const double* c = cos_t.data() + n * half;
      const double* sn = sin_t.data() + n * half;
      for (int64_t i = 0; i < half; ++i) {
        const double a = row[i], b = row[i + half];
        row[i] = static_cast<float>(a * c[i] - b * sn[i]);
        row[i + half] = static_cast<float>(b * c[i] + a * sn[i]);
      }
    }
  });
}

}  // namespace

void apply_rope(Tensor& x, const std::vector<int64_t>& positions, double base) {
  rotate(x, positions, base, false);
}

void apply_rope_inverse(Tensor& x, const std::vector<int64_t>& positions, double base) {
  rotate(x, positions, base, true);
}

}  // namespace attnlab
