// attnlab core: weighted least-squares polynomial fit (polyfit.h states the problem).
#include "core/polyfit.h"

#include <Eigen/Dense>
#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

namespace attnlab {

std::vector<double> polyfit(const std::function<double(double)>& f, int degree, double lo, double hi, int samples,
                            Weighting w) {
  if (degree < 1 || degree > 4)
    throw std::invalid_argument(fmt::format("polyfit: degree must be 1–4 (got {})", degree));
  if (samples <= degree)
    throw std::invalid_argument(fmt::format("polyfit: samples must exceed degree {} (got {})", degree, samples));
  if (!std::isfinite(lo) || !std::isfinite(hi) || !(lo < hi))
    throw std::invalid_argument(fmt::format("polyfit: need finite lo < hi (got [{}, {}])", lo, hi));

  using Matrix = Eigen::Matrix<long double, Eigen::Dynamic, Eigen::Dynamic>;
  using Vector = Eigen::Matrix<long double, Eigen::Dynamic, 1>;
  Matrix A(samples, degree + 1);  // (samples, degree + 1): √w_i · x_i^k
  Vector b(samples);              // (samples): √w_i · f(x_i)
  for (int i = 0; i < samples; ++i) {
    // The sample point as the double f sees; the matrix uses the same point.
    const double xd = static_cast<double>(lo + (static_cast<long double>(hi) - lo) * i / (samples - 1));
    const long double x = xd;
    const double fx = f(xd);
    if (!std::isfinite(fx)) throw std::invalid_argument(fmt::format("polyfit: f({}) is not finite", xd));
    if (w == Weighting::relative && fx == 0)
      throw std::invalid_argument(fmt::format("polyfit: relative weighting needs f ≠ 0, but f({}) = 0", xd));
    const long double sqrt_w = w == Weighting::relative ? 1.0L / std::fabs(static_cast<long double>(fx)) : 1.0L;
    long double xk = 1.0L;
    for (int k = 0; k <= degree; ++k, xk *= x) A(i, k) = sqrt_w * xk;
    b(i) = sqrt_w * fx;
  }
  const Vector c = A.colPivHouseholderQr().solve(b);
  std::vector<double> out(static_cast<size_t>(degree + 1));
  for (int k = 0; k <= degree; ++k) out[static_cast<size_t>(k)] = static_cast<double>(c(k));
  return out;
}

double polyval(const std::vector<double>& c, double x) {
  double p = 0.0;
  for (auto it = c.rbegin(); it != c.rend(); ++it) p = p * x + *it;
  return p;
}

}  // namespace attnlab
