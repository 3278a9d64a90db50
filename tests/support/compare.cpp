#include "tests/support/compare.h"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

namespace attnlab::test {

namespace {

CloseReport check(const TensorF64& ref, const Tensor& out, const std::vector<double>* per, double atol, double rtol) {
  if (!(ref.shape() == out.shape()))
    throw std::invalid_argument("check_close: shapes " + ref.shape().str() + " and " + out.shape().str());
  CloseReport r;
  const Shape4 s = ref.shape();
  for (int64_t i = 0; i < ref.size(); ++i) {
    const double a = per ? (*per)[i] : atol;
    const double bound = a + rtol * std::abs(ref.data()[i]);
    const double err = std::abs(ref.data()[i] - double(out.data()[i]));
    const double ratio = bound > 0 ? err / bound : (err > 0 ? INFINITY : 0.0);
    if (!(ratio <= r.worst_ratio)) r.worst_ratio = std::isnan(ratio) ? INFINITY : ratio;
    if (err <= bound) continue;  // NaN fails here too
    if (r.failures < 5) {
      const int64_t c = i % s.dim, n = i / s.dim % s.len, h = i / s.head_count() % s.heads,
                    b = i / (s.head_count() * s.heads);
      r.message += fmt::format("  [{}] (b={}, h={}, n={}, c={}): ref {:.9g} out {:.9g} |diff| {:.3g} > bound {:.3g}\n",
                               i, b, h, n, c, ref.data()[i], out.data()[i], err, bound);
    }
    ++r.failures;
  }
  r.ok = r.failures == 0;
  r.message = r.ok ? fmt::format("all {} elements within bounds (worst ratio {:.3f})", ref.size(), r.worst_ratio)
                   : fmt::format("{} of {} elements out of bounds; first:\n{}", r.failures, ref.size(), r.message);
  return r;
}

}  // namespace

CloseReport check_close(const TensorF64& ref, const Tensor& out, double atol, double rtol) {
  return check(ref, out, nullptr, atol, rtol);
}

CloseReport check_close(const TensorF64& ref, const Tensor& out, const std::vector<double>& atol, double rtol) {
  if (static_cast<int64_t>(atol.size()) != ref.size()) throw std::invalid_argument("check_close: atol size");
  return check(ref, out, &atol, 0.0, rtol);
}

}  // namespace attnlab::test
