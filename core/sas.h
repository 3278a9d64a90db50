// attnlab core: SAS — Sparse Activated Softmax, the exponential of TurboAttention (§4, Eq. 13–15;
// App. B, Alg. 3). Readable ground truth for the kernels' SAS, plus the statistics the probes print.
//
// Definition, for a score minus the running max t ≤ 0, with x = −t ≥ 0 (Eq. 13–14, Alg. 3 steps 2–4):
//   SAS(t) = 0                                  if t < n_r            (Eq. 14, the sparsity threshold)
//          = LUT[x_int] × POLY(x_dec)           if n_r ≤ t ≤ 0        (Eq. 13)
//   x_int = ⌊x⌋ ∈ {0, …, −n_r},  x_dec = x − x_int ∈ [0, 1),  LUT[k] = e^{−k} for k = 0 … −n_r,
//   POLY(x) = c0 + c1·x + c2·x² + c3·x³ ≈ e^{−x} on [0, 1]   (Eq. 15).
// Choices the paper leaves open, fixed here:
//   - t == n_r is kept: x_int = −n_r, x_dec = 0, SAS = e^{n_r}·c0 (Eq. 14 says "x ≥ n_r"). Alg. 3 step 2
//     writes X[X < n_r] = n_r + 1 with T[n_r + 1] = 0, i.e. it sends the dropped inputs to a LUT slot
//     holding 0; a select to 0 is the same thing.
//   - t > 0 cannot occur when t = s − rowmax(s); should it (a stale max), t is clamped to 0 and
//     SAS(t) = SAS(0) = c0, never more than c0.
//   - t = −∞ (a masked score) gives 0; t = NaN gives NaN (an upstream bug stays visible).
//   - n_r is an integer in [−kMaxRange, 0]; the polynomial's coefficients must be finite (InputError).
//
// Precision (Config::precision):
//   fp32: LUT entries float(e^{−k}); x_int, x_dec in FP32 (x − ⌊x⌋ is exact); POLY by Horner with one
//         fmaf per step; LUT × POLY one FP32 multiply.
//   fp16: the FP16 tensor-core/HFMA evaluation the paper intends ("the polynomial operation can be done
//         solely in GPU Tensor Cores in FP16", §4): LUT entries and c0…c3 stored in FP16 (each rounded
//         once, RNE, from its double value), x_dec rounded to FP16, each Horner step one FMA rounded
//         once to FP16 (hfma below), LUT × POLY rounded to FP16 (the product of two FP16 values is
//         exact in FP32 first); the result is returned as a float. For k ≥ 10 the FP16 LUT entries are
//         subnormal (e^{−10} < 2⁻¹⁴) and coarse, which only matters for n_r < −9.
//
// The online-softmax rescale (Alg. 1/2: ℓ^{(j)} = SAS(m^{(j−1)} − m^{(j)})·ℓ^{(j−1)} + rowsum(P̃^{(j)}))
// is sas_exp(m_old − m_new). Note SAS(0) = POLY(0) = c0 = 0.9996 ≠ 1: every tile whose max does not
// change multiplies ℓ and O by 0.9996 while the new tile's P̃ enters unscaled, so after T_c tiles the
// first tile's keys weigh 0.9996^{T_c − 1} relative to the last (≈ 0.975 for 4096 keys at B_c = 64) —
// a systematic recency bias worth a probe. (Alg. 1/2's O line prints diag(SAS(m^{j−1} − m^j))^{−1}·O^{(j−1)},
// as FlashAttention-2's Alg. 1 also prints it; the factor must multiply O^{(j−1)} exactly as it multiplies
// ℓ — read with the inverse, the output is wrong whenever the max changes.)
//
// SAS is not monotone at the LUT boundaries, even in exact arithmetic: just right of t = −k the value is
// LUT[k−1]·POLY(1⁻) = e^{−k}·e·POLY(1) = e^{−k}·0.99898, at t = −k it is LUT[k]·POLY(0) = e^{−k}·0.9996,
// so SAS rises by a relative c0/(e·POLY(1)) − 1 ≈ 6.3·10⁻⁴ as t decreases through each integer in
// [n_r, −1]. Within each unit segment it is non-decreasing in t (POLY′ < 0 on [0, 1]: its discriminant
// is negative), and the FP32 path keeps that. The FP16 path does not: its Horner roundings make POLY16
// rise by one FP16 ulp at 69 of the 15360 FP16 inputs in [0, 1), so within a segment SAS16 can rise by
// up to 2⁻⁹ relative as t decreases (one ulp from POLY16, one from rounding LUT × POLY), while at the
// LUT boundaries the rounding mostly hides the jump. tests/core/test_sas.cpp asserts these bounds.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

namespace attnlab::sas {

enum class Precision { fp32, fp16 };

inline constexpr int kMaxRange = 30;  // n_r ≥ −30: the LUT holds e^{−k} for k = 0 … 30

// Eq. 15's coefficients, and where they come from. Of the least-squares cubic fits of e^{−x} on [0, 1]
// tried (core/polyfit.h), only a DISCRETE fit on n uniformly spaced points with both ends reproduces all
// four printed digits, for n = 84 … 125 — e.g. n = 100 (numpy's linspace(0, 1, 100)) gives
// (0.999637, −0.992176, 0.462620, −0.102528), max |Δc| = 3.7·10⁻⁵ against the rounded paper values.
// The other natural choices do not round to them:
//   continuous L2 (100001 points)  (0.999614, −0.992049, 0.462469, −0.102500)  max |Δc| 1.5·10⁻⁴
//   11 points                      (0.999809, −0.993092, 0.463683, −0.102699)  max |Δc| 1.1·10⁻³
//   relative weighting, 101 points (0.999438, −0.990002, 0.457507, −0.099263)  max |Δc| 5.1·10⁻³
//   domain [0, 1.1], [0, 0.9]                                                   max |Δc| ≥ 5.9·10⁻³
// (a fit of e^{x} on [−1, 0] is the same problem mirrored: c_k ↦ (−1)^k c_k, identical numbers).
// Max |POLY(x) − e^{−x}| on [0, 1]: paper 4.0·10⁻⁴ (at x = 0, from c0 = 0.9996), refit n = 100
// 3.6·10⁻⁴, continuous L2 3.9·10⁻⁴; max relative error: paper 1.03·10⁻³ (at x = 1), refit 8.9·10⁻⁴.
// tests/core/test_polyfit.cpp asserts this finding.
inline constexpr std::array<double, 4> kPaperPoly = {0.9996, -0.9922, 0.4626, -0.1025};

struct Config {
  int n_r = -6;                                  // threshold: inputs below n_r become 0 (paper uses −6, §5.2)
  std::array<double, 4> poly = kPaperPoly;       // c0 + c1·x + c2·x² + c3·x³, Eq. 15 (≈ e^{−x} on [0, 1])
  Precision precision = Precision::fp32;
};

// Throws InputError ("sas.n_r: …", "sas.poly: …") when c breaks the rules above.
void validate(const Config& c);

float sas_exp(float t, const Config& c);  // t ≤ 0 (a score minus the running max); SAS(t) ≈ e^t
// t (n) ← SAS(t − m) elementwise, what the online softmax calls per tile row (t − m in FP32). The FP32
// path is one branch-free loop the compiler vectorizes; both paths equal sas_exp bit for bit.
void sas_exp_inplace(float* t, int64_t n, float m, const Config& c);

// The exponential policy of OnlineSoftmax::step (core/online_softmax.h): operator() gives the rescale
// SAS(m_old − m_new), apply(row, m_new) turns a contiguous row of scores into P̃ = SAS(S − m_new).
struct SasExp {
  Config c;
  float operator()(float t) const { return sas_exp(t, c); }
  template <class Row>
  void apply(Row&& seen, float m_new) const {
    sas_exp_inplace(seen.data(), static_cast<int64_t>(seen.size()), m_new, c);
  }
};

// The FP16 FMA of the fp16 path: a·b + c for FP16 values a, b, c (held in floats), rounded once to FP16
// (RNE), as one HFMA instruction does. Computing the FMA in double and rounding that to FP16 would round
// twice; instead the exact a·b + c is kept as a double s plus its TwoSum error e (a·b is exact in
// double: 11 × 11 ≤ 22 bits), rounded to odd at double and then at float precision, and only then to
// nearest-even FP16: rounding to odd at ≥ 11 + 2 bits first makes the final rounding exact (Boldo &
// Melquiond 2008), for any FP16 operands, subnormals and overflow included. (In SAS's Horner steps the
// exact value fits in 37 bits, so e = 0 there; the float step still matters.) Tested against binary128.
float hfma(float a, float b, float c);

// Statistics for probes and teaching.
struct ErrorTable {
  std::vector<double> t, exact, approx, abs_err, rel_err;  // (samples) each; t_i evenly over [n_r, 0]
  double max_abs = 0, max_rel = 0;
};
// samples ≥ 2 points t_i = n_r − n_r·i/(samples − 1) rounded to float (t_0 = n_r, t_last = 0);
// exact = e^{t_i} in double, approx = sas_exp(t_i), rel_err = abs_err / exact.
ErrorTable error_table(const Config& c, int samples);

// The softmax mass SAS throws away in one row: Σ_{t < n_r} e^t / Σ e^t with t = s − max(s), in double.
// scores is one row (n); −∞ entries (masked) carry no mass; an empty or fully masked row gives 0; a NaN
// or +∞ score gives NaN.
double zeroed_mass(const float* scores, int64_t n, const Config& c);

}  // namespace attnlab::sas
