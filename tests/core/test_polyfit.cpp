// Least-squares polynomial fit (core/polyfit.h): exact recovery of polynomials, and the finding recorded
// next to Eq. 15 in core/sas.h — which least-squares fit of e^{−x} on [0, 1] gives the paper's cubic.
#include "core/polyfit.h"
#include "core/sas.h"
#include "tests/catch.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

namespace attnlab {
namespace ATTNLAB_FILE_LOCAL {

double exp_neg(double x) { return std::exp(-x); }

// max_k |c_k − paper_k| over the four coefficients of Eq. 15.
double max_coeff_diff(const std::vector<double>& c) {
  double d = 0;
  for (size_t k = 0; k < 4; ++k) d = std::max(d, std::fabs(c[k] - sas::kPaperPoly[k]));
  return d;
}

// Whether every coefficient rounds to the paper's printed 4 decimals.
bool rounds_to_paper(const std::vector<double>& c) {
  for (size_t k = 0; k < 4; ++k)
    if (std::round(c[k] * 1e4) != std::round(sas::kPaperPoly[k] * 1e4)) return false;
  return true;
}

// max over a fine grid of [0, 1] of |p(x) − e^{−x}| (relative: divided by e^{−x}).
double max_error(const std::vector<double>& c, bool relative) {
  double m = 0;
  for (int i = 0; i <= 20000; ++i) {
    const double x = i / 20000.0, f = exp_neg(x);
    m = std::max(m, std::fabs(polyval(c, x) - f) / (relative ? f : 1.0));
  }
  return m;
}

TEST_CASE("polyfit recovers a polynomial of its degree exactly", "[polyfit]") {
  const std::vector<double> p = {2.0, -3.0, 0.5, 0.25};
  const auto f = [&](double x) { return polyval(p, x); };
  for (Weighting w : {Weighting::uniform, Weighting::relative}) {
    for (int samples : {4, 11, 1000}) {
      INFO("samples = " << samples);
      const std::vector<double> c = polyfit(f, 3, 0.0, 1.0, samples, w);
      REQUIRE(c.size() == 4);
      for (size_t k = 0; k < 4; ++k) CHECK(c[k] == Approx(p[k]).margin(1e-12));
    }
    // One degree more: the extra coefficient is zero.
    const std::vector<double> c4 = polyfit(f, 4, -2.0, 3.0, 50, w);
    for (size_t k = 0; k < 4; ++k) CHECK(c4[k] == Approx(p[k]).margin(1e-10));
    CHECK(c4[4] == Approx(0.0).margin(1e-10));
  }
  const std::vector<double> line = polyfit([](double x) { return 1 - 2 * x; }, 1, -1.0, 1.0, 2, Weighting::uniform);
  CHECK(line[0] == Approx(1.0).margin(1e-14));
  CHECK(line[1] == Approx(-2.0).margin(1e-14));
}

TEST_CASE("polyfit rejects bad arguments", "[polyfit]") {
  CHECK_THROWS_AS(polyfit(exp_neg, 0, 0, 1, 10, Weighting::uniform), std::invalid_argument);
  CHECK_THROWS_AS(polyfit(exp_neg, 5, 0, 1, 10, Weighting::uniform), std::invalid_argument);
  CHECK_THROWS_AS(polyfit(exp_neg, 3, 0, 1, 3, Weighting::uniform), std::invalid_argument);
  CHECK_THROWS_AS(polyfit(exp_neg, 3, 1, 0, 10, Weighting::uniform), std::invalid_argument);
  CHECK_THROWS_AS(polyfit([](double x) { return x; }, 3, 0, 1, 10, Weighting::relative), std::invalid_argument);
}

// The finding recorded next to kPaperPoly in core/sas.h.
TEST_CASE("Eq. 15 is the discrete least-squares cubic of e^-x on ~100 uniform points of [0, 1]", "[polyfit]") {
  // n = 100 (numpy's linspace(0, 1, 100)) and n = 101 (step 0.01) both round to the printed digits.
  for (int n : {100, 101}) {
    const std::vector<double> c = polyfit(exp_neg, 3, 0.0, 1.0, n, Weighting::uniform);
    INFO("n = " << n << ": " << c[0] << ", " << c[1] << ", " << c[2] << ", " << c[3]);
    CHECK(rounds_to_paper(c));
    CHECK(max_coeff_diff(c) < 4e-5);
  }
  // The band of sample counts that reproduces the paper is 84 … 125.
  CHECK_FALSE(rounds_to_paper(polyfit(exp_neg, 3, 0.0, 1.0, 83, Weighting::uniform)));
  CHECK(rounds_to_paper(polyfit(exp_neg, 3, 0.0, 1.0, 84, Weighting::uniform)));
  CHECK(rounds_to_paper(polyfit(exp_neg, 3, 0.0, 1.0, 125, Weighting::uniform)));
  CHECK_FALSE(rounds_to_paper(polyfit(exp_neg, 3, 0.0, 1.0, 126, Weighting::uniform)));

  // The other natural choices miss the printed digits by more than their rounding (5e-5).
  const std::vector<double> l2 = polyfit(exp_neg, 3, 0.0, 1.0, 100001, Weighting::uniform);  // ≈ continuous L2
  const std::vector<double> few = polyfit(exp_neg, 3, 0.0, 1.0, 11, Weighting::uniform);
  const std::vector<double> rel = polyfit(exp_neg, 3, 0.0, 1.0, 101, Weighting::relative);
  const std::vector<double> wide = polyfit(exp_neg, 3, 0.0, 1.1, 101, Weighting::uniform);
  INFO("continuous L2: " << l2[0] << ", " << l2[1] << ", " << l2[2] << ", " << l2[3]);
  CHECK_FALSE(rounds_to_paper(l2));
  CHECK(max_coeff_diff(l2) > 1.4e-4);
  CHECK_FALSE(rounds_to_paper(few));
  CHECK(max_coeff_diff(few) > 1e-3);
  CHECK_FALSE(rounds_to_paper(rel));
  CHECK(max_coeff_diff(rel) > 5e-3);
  CHECK(max_coeff_diff(wide) > 5e-3);
  // e^{x} on [−1, 0] is the mirrored problem: c_k ↦ (−1)^k c_k.
  const auto exp_pos = [](double x) { return std::exp(x); };
  const std::vector<double> mirrored = polyfit(exp_pos, 3, -1.0, 0.0, 100, Weighting::uniform);
  const std::vector<double> c100 = polyfit(exp_neg, 3, 0.0, 1.0, 100, Weighting::uniform);
  for (size_t k = 0; k < 4; ++k) CHECK(mirrored[k] * (k % 2 ? -1.0 : 1.0) == Approx(c100[k]).margin(1e-12));

  // Approximation error on [0, 1]: the printed polynomial pays for rounding c0 = 0.99964 down to 0.9996.
  const std::vector<double> paper(sas::kPaperPoly.begin(), sas::kPaperPoly.end());
  WARN("max |POLY − e^-x| on [0,1]: paper " << max_error(paper, false) << ", refit n=100 " << max_error(c100, false)
                                            << ", continuous L2 " << max_error(l2, false) << "; max relative: paper "
                                            << max_error(paper, true) << ", refit " << max_error(c100, true));
  CHECK(max_error(paper, false) == Approx(4.0e-4).margin(1e-6));  // at x = 0: 1 − c0
  CHECK(max_error(paper, true) == Approx(1.03e-3).margin(1e-5));  // at x = 1
  CHECK(max_error(c100, false) < 3.7e-4);
  CHECK(max_error(c100, true) < 9.0e-4);
}

}  // namespace
}  // namespace attnlab
