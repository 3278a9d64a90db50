// attnlab python: SAS, TurboAttention's sparse activated softmax exponential (§4, Eq. 13–15; App. B
// Alg. 3; core/sas.h) on NumPy arrays, with its LUT, polynomial and error curve for teaching.
#include "app/python/blocks.h"
#include "app/python/blocks_args.h"
#include "core/error.h"
#include "core/sas.h"
#include "core/variants/turbo_cache.h"

#include <fmt/format.h>

namespace attnlab::python {

namespace {

using namespace blocks;
using Poly = std::array<double, 4>;

constexpr std::array<Name<sas::Precision>, 2> kPrecisions = {{{"fp32", sas::Precision::fp32},
                                                              {"fp16", sas::Precision::fp16}}};
Poly paper_poly() { return sas::kPaperPoly; }
// The choices of turbo's `poly` parameter: Eq. 15 as printed, or the 100-point refit it rounds from.
constexpr std::array<Name<Poly (*)()>, 2> kPolys = {{{"paper", &paper_poly},
                                                     {"refit", &variants::turbo_detail::refit_polynomial}}};
constexpr int kMaxSamples = 10'000'000;

Poly poly_of(const py::object& poly) {
  if (py::isinstance<py::str>(poly)) return choose(poly.cast<std::string>(), "poly", kPolys)();
  const char* rule = "must be 'paper', 'refit' or four numbers c0, c1, c2, c3";
  if (!py::isinstance<py::sequence>(poly)) fail_input("poly", rule);
  const auto seq = py::reinterpret_borrow<py::sequence>(poly);
  if (py::len(seq) != 4) fail_input("poly", fmt::format("{} (got {} values)", rule, py::len(seq)));
  Poly c{};
  try {
    for (size_t k = 0; k < c.size(); ++k) c[k] = seq[k].cast<double>();
  } catch (const py::cast_error&) {
    fail_input("poly", rule);
  }
  return c;
}

// The engine checks n_r ∈ [−30, 0] and finite coefficients (sas::validate, "sas.n_r: …", "sas.poly: …").
sas::Config config(int n_r, const py::object& poly, const std::string& precision) {
  const sas::Config c{.n_r = n_r, .poly = poly_of(poly), .precision = choose(precision, "precision", kPrecisions)};
  sas::validate(c);
  return c;
}

py::array_t<float> sas_exp(const py::object& t, int n_r, const py::object& poly, const std::string& precision,
                           float m) {
  const sas::Config c = config(n_r, poly, precision);
  return float_array_applied(t, "t", [&](float* v, int64_t n) { sas::sas_exp_inplace(v, n, m, c); });
}

py::dict sas_table(int n_r, const py::object& poly, const std::string& precision, int samples) {
  const sas::Config c = config(n_r, poly, precision);
  if (samples < 2 || samples > kMaxSamples)
    fail_input("samples", fmt::format("must be an integer in [2, {}] (got {})", kMaxSamples, samples));
  // LUT[k] = e^{−k} as the engine holds it (FP32, or FP16 for precision "fp16"). Eq. 13 with the unit
  // polynomial POLY ≡ 1 is LUT[x_int] alone, exactly (x_dec = 0 at t = −k, and × 1 rounds nothing): the
  // engine's own table, read through its own function.
  sas::Config unit = c;
  unit.poly = {1.0, 0.0, 0.0, 0.0};
  py::array_t<float> lut(Shape{-n_r + 1});
  for (int k = 0; k <= -n_r; ++k) lut.mutable_data()[k] = sas::sas_exp(static_cast<float>(-k), unit);
  sas::ErrorTable e;
  {
    py::gil_scoped_release release;
    e = sas::error_table(c, samples);
  }
  const Shape s{samples};
  py::dict d;
  d["n_r"] = c.n_r;
  d["poly"] = to_array<double>(Shape{4}, c.poly.data());
  d["precision"] = name_of(c.precision, kPrecisions);
  d["lut"] = lut;
  d["t"] = to_array<double>(s, e.t.data());
  d["exact"] = to_array<double>(s, e.exact.data());
  d["approx"] = to_array<double>(s, e.approx.data());
  d["abs_err"] = to_array<double>(s, e.abs_err.data());
  d["rel_err"] = to_array<double>(s, e.rel_err.data());
  d["max_abs"] = e.max_abs;
  d["max_rel"] = e.max_rel;
  return d;
}

py::array_t<double> sas_zeroed_mass(const py::object& scores, int n_r) {
  const sas::Config c = config(n_r, py::str("paper"), "fp32");  // only n_r matters here
  const py::array_t<float> s = float_array(scores, "scores");
  if (s.ndim() < 1) fail_input("scores", "must be at least 1-D (..., n): rows of scores");
  const Shape lead(s.shape(), s.shape() + s.ndim() - 1);
  const int64_t n = s.shape(s.ndim() - 1);
  py::array_t<double> out(lead);
  double* o = out.mutable_data();
  const float* v = s.data();
  const int64_t rows = out.size();
  {
    py::gil_scoped_release release;
    for (int64_t r = 0; r < rows; ++r) o[r] = sas::zeroed_mass(v + r * n, n, c);
  }
  return out;
}

}  // namespace

void bind_sas(py::module_& m) {
  m.def("sas_exp", &sas_exp, py::arg("t"), py::arg("n_r") = -6, py::arg("poly") = "paper",
        py::arg("precision") = "fp32", py::arg("m") = 0.0f,
        R"(SAS(t − m), TurboAttention's approximation of e^(t − m) (§4, Eq. 13–15; core/sas.h).

With x = −(t − m) clamped to [0, −n_r], x_int = ⌊x⌋, x_dec = x − x_int:
  SAS = LUT[x_int] · POLY(x_dec)   for n_r ≤ t − m   (Eq. 13; LUT[k] = e^{−k}, t − m > 0 acts as 0)
      = 0                          for t − m < n_r   (Eq. 14, −∞ included); NaN stays NaN
  POLY(x) = c0 + c1·x + c2·x² + c3·x³ ≈ e^{−x} on [0, 1]   (Eq. 15, by Horner).
On [−1, 0] SAS is POLY itself (LUT[0] = 1).

t: float32 or float16 array, any shape (scores minus the row max).
n_r: the threshold, an integer in [−30, 0] (the paper uses −6).
poly: "paper" (Eq. 15 as printed: 0.9996, −0.9922, 0.4626, −0.1025), "refit" (the 100-point
    least-squares cubic those digits round from) or four numbers c0…c3.
precision: "fp32" (FP32 with FMA) or "fp16" (LUT, coefficients and every Horner step rounded to FP16,
    as the FP16 tensor-core evaluation the paper intends).
m: subtracted from t in FP32 first, as the online softmax calls it per row.
Returns float32 of t's shape.)");

  m.def("sas_table", &sas_table, py::arg("n_r") = -6, py::arg("poly") = "paper", py::arg("precision") = "fp32",
        py::arg("samples") = 121,
        R"(The pieces of SAS (Eq. 13–15; core/sas.h) and its error against e^t over [n_r, 0].

Arguments as attnlab.sas_exp; samples ≥ 2 points t_i evenly over [n_r, 0] (rounded to FP32; the turbo
variant's probes sas.curve.* use 121).
Returns a dict: "lut" float32 (1 − n_r,) the engine's LUT[k] = e^{−k}, k = 0 … −n_r (FP16 values for
precision "fp16"); "poly" float64 (4,) c0…c3; "n_r", "precision"; float64 (samples,) arrays "t",
"exact" (e^t in FP64), "approx" (SAS(t)), "abs_err", "rel_err"; and their maxima "max_abs", "max_rel".)");

  m.def("sas_zeroed_mass", &sas_zeroed_mass, py::arg("scores"), py::arg("n_r") = -6,
        R"(The softmax mass SAS drops in each row (Eq. 14; core/sas.h): Σ_{t < n_r} e^t / Σ e^t with
t = s − max(s), in FP64.

scores: float32 or float16 (..., n), rows of scores; −∞ entries are masked (no mass), an empty or fully
    masked row gives 0, a row holding NaN or +∞ gives NaN.
n_r: the threshold, an integer in [−30, 0].
Returns float64 (...).)");
}

}  // namespace attnlab::python
