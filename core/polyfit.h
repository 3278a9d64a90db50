// attnlab core: weighted least-squares polynomial fit of a function on an interval — how TurboAttention
// §4 obtains the cubic of Eq. 15 ("using the least squares method to determine the coefficients").
// Used to check that polynomial and to fit alternatives for probes and teaching.
//
// The fit: samples points x_i = lo + i·(hi − lo)/(samples − 1), i = 0 … samples−1 (both ends included),
// and the coefficients c_0 … c_degree of p(x) = Σ_k c_k x^k that minimize
//   Σ_i w(x_i)·(p(x_i) − f(x_i))²,   w = 1 (Weighting::uniform) or w = 1/f(x_i)² (Weighting::relative,
//                                     i.e. the squared relative error).
// Many uniform samples approximate the continuous L2 fit ∫(p − f)² dx. Solved by Householder QR of the
// √w-weighted Vandermonde matrix in long double (no normal equations: their condition number is the
// square of the Vandermonde's).
//
// Bad arguments (degree outside 1–4, samples ≤ degree, lo ≥ hi or not finite, a non-finite f value, or
// f = 0 under relative weighting) throw std::invalid_argument: these are programming errors.
#pragma once

#include <functional>
#include <vector>

namespace attnlab {

enum class Weighting { uniform, relative };  // relative: minimize relative error (w = 1/f²)

// Returns {c_0, …, c_degree}.
std::vector<double> polyfit(const std::function<double(double)>& f, int degree, double lo, double hi, int samples,
                            Weighting w);

// p(x) = Σ_k c[k]·x^k by Horner's rule in double.
double polyval(const std::vector<double>& c, double x);

}  // namespace attnlab
