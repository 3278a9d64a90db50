// attnlab core: SAS (sas.h states the definition and the choices).
//
// The FP32 kernel is written on the FP32 bit patterns so that GCC vectorizes it (AVX2: vfmadd, vpminsd,
// vcvttps2dq, an emulated gather for the LUT): the clamp of x = −t to [0, −n_r] is an integer min/max on
// the bits (non-negative floats order like their bits; NaN lands on −n_r, so the LUT index is always
// valid), and the threshold and NaN selects are bit masks. Written as ?: on floats, GCC 12 sinks the FP
// work into a branch (FP ops may trap) and gives up on the loop.
#include "core/sas.h"

#include "core/error.h"
#include "core/formats/half.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <stdexcept>

#if defined(__F16C__)
#include <immintrin.h>
#endif

namespace attnlab::sas {

namespace {

// x rounded to FP16 (RNE): the F16C instruction where the CPU has it (branch-free; the same bits as
// formats::round_fp16, tests/core/formats/test_half.cpp), formats::round_fp16 otherwise.
inline float round16(float x) {
#if defined(__F16C__)
  return _cvtsh_ss(_cvtss_sh(x, _MM_FROUND_TO_NEAREST_INT));
#else
  return formats::round_fp16(x);
#endif
}

// d rounded once to FP16 (RNE), for any double d: round to odd into a float (truncate towards zero —
// one step of the bit pattern back when the conversion rounded away from zero — then set the last bit
// if inexact), then RNE to FP16. Rounding to odd at ≥ 11 + 2 bits first makes the final rounding exact
// (Boldo & Melquiond 2008); a plain float(d) could land on an FP16 tie and round twice. Mask
// arithmetic: the conditions are data-dependent coin flips that branches would mispredict.
float fp16_from_double(double d) {
  const float f = static_cast<float>(d);
  const uint32_t away = std::fabs(static_cast<double>(f)) > std::fabs(d);
  const uint32_t inexact = static_cast<double>(f) != d;
  return round16(std::bit_cast<float>((std::bit_cast<uint32_t>(f) - away) | inexact));
}

struct Luts {
  std::array<float, kMaxRange + 1> fp32;  // float(e^{−k})
  std::array<float, kMaxRange + 1> fp16;  // e^{−k} rounded once to FP16
};

const Luts& luts() {
  static const Luts tables = [] {
    Luts l{};
    for (int k = 0; k <= kMaxRange; ++k) {
      l.fp32[k] = static_cast<float>(std::exp(-static_cast<double>(k)));
      l.fp16[k] = fp16_from_double(std::exp(-static_cast<double>(k)));
    }
    return l;
  }();
  return tables;
}

// The per-call constants of the FP32 kernel.
struct Fp32Kernel {
  std::array<float, kMaxRange + 1> lut;  // a copy: a local table provably does not alias the output
  int32_t x_max_bits;  // FP32 bits of −n_r
  float c0, c1, c2, c3;

  explicit Fp32Kernel(const Config& c)
      : lut(luts().fp32),
        x_max_bits(std::bit_cast<int32_t>(static_cast<float>(-c.n_r))),
        c0(static_cast<float>(c.poly[0])),
        c1(static_cast<float>(c.poly[1])),
        c2(static_cast<float>(c.poly[2])),
        c3(static_cast<float>(c.poly[3])) {}

  float operator()(float t) const {
    const uint32_t t_bits = std::bit_cast<uint32_t>(t);
    const int32_t x_bits = std::bit_cast<int32_t>(-t);
    // x = clamp(−t, 0, −n_r) on the bits: t ≥ 0 → 0 (−t ≤ −0 has a sign bit, i.e. negative as int32);
    // −∞ and NaN → −n_r (both selected away below).
    const float x = std::bit_cast<float>(std::min(std::max(x_bits, 0), x_max_bits));
    const int x_int = static_cast<int>(x);  // x ≥ 0: truncation is ⌊x⌋
    const float x_dec = x - static_cast<float>(x_int);  // exact
    const float poly = std::fma(std::fma(std::fma(c3, x_dec, c2), x_dec, c1), x_dec, c0);  // Eq. 15, Horner
    const uint32_t v = std::bit_cast<uint32_t>(lut[x_int] * poly);                      // Eq. 13
    const uint32_t keep = 0u - static_cast<uint32_t>(x_bits <= x_max_bits);  // Eq. 14: t ≥ n_r (t > 0 too)
    const uint32_t nan = 0u - static_cast<uint32_t>((t_bits & 0x7fffffffu) > 0x7f800000u);
    return std::bit_cast<float>((v & keep & ~nan) | (t_bits & nan));
  }
};

// The same definition in emulated FP16 arithmetic (sas.h, "fp16").
struct Fp16Kernel {
  const float* lut;
  float n_r;
  float c0, c1, c2, c3;  // FP16 values

  explicit Fp16Kernel(const Config& c)
      : lut(luts().fp16.data()),
        n_r(static_cast<float>(c.n_r)),
        c0(fp16_from_double(c.poly[0])),
        c1(fp16_from_double(c.poly[1])),
        c2(fp16_from_double(c.poly[2])),
        c3(fp16_from_double(c.poly[3])) {}

  float operator()(float t) const {
    if (std::isnan(t)) return t;
    if (t < n_r) return 0.0f;                          // Eq. 14 (also t = −∞)
    const float x = std::max(-t, 0.0f);                // t > 0 clamps to 0
    const float x_int = std::floor(x);
    const float x_dec = round16(x - x_int);  // may round up to 1.0: POLY(1) ≈ e^{−1}, continuous
    const float poly = hfma(hfma(hfma(c3, x_dec, c2), x_dec, c1), x_dec, c0);
    return round16(lut[static_cast<int>(x_int)] * poly);  // the FP16 product, exact in FP32 first
  }
};

// t (n) ← SAS(t − m). The kernel (and its LUT) is a local copy and t is __restrict, so GCC knows the
// LUT gather cannot read what the loop writes and vectorizes it.
void fp32_loop(float* __restrict t, int64_t n, float m, const Fp32Kernel k) {
  for (int64_t i = 0; i < n; ++i) t[i] = k(t[i] - m);
}

}  // namespace

void validate(const Config& c) {
  if (c.n_r < -kMaxRange || c.n_r > 0)
    fail_input("sas.n_r", fmt::format("must be an integer in [{}, 0] (got {})", -kMaxRange, c.n_r));
  for (size_t k = 0; k < c.poly.size(); ++k)
    if (!std::isfinite(c.poly[k])) fail_input("sas.poly", fmt::format("coefficient c{} is not finite", k));
}

float hfma(float a, float b, float c) {
  // Exact v = a·b + c as s + e: the product of two FP16 values has ≤ 22 significant bits (exact in
  // double), s = fl(p + c) and e its exact error (Knuth's TwoSum); s = 0 implies e = 0.
  const double p = static_cast<double>(a) * static_cast<double>(b);
  const double s = p + static_cast<double>(c);
  const double bb = s - p;
  const double e = (p - (s - bb)) + (static_cast<double>(c) - bb);
  // Round v to odd at double precision: s if exact or already odd, else its neighbour towards v (one
  // step of the bit pattern: up in magnitude when e has the sign of s, down otherwise).
  uint64_t sb = std::bit_cast<uint64_t>(s);
  if (e != 0 && (sb & 1u) == 0) sb = (e > 0) == (s > 0) ? sb + 1 : sb - 1;
  return fp16_from_double(std::bit_cast<double>(sb));
}

float sas_exp(float t, const Config& c) {
  validate(c);
  return c.precision == Precision::fp32 ? Fp32Kernel(c)(t) : Fp16Kernel(c)(t);
}

void sas_exp_inplace(float* t, int64_t n, float m, const Config& c) {
  validate(c);
  if (c.precision == Precision::fp32) {
    fp32_loop(t, n, m, Fp32Kernel(c));
  } else {
    const Fp16Kernel k(c);
    for (int64_t i = 0; i < n; ++i) t[i] = k(t[i] - m);
  }
}

ErrorTable error_table(const Config& c, int samples) {
  validate(c);
  if (samples < 2) throw std::invalid_argument(fmt::format("sas::error_table: samples must be ≥ 2 (got {})", samples));
  ErrorTable e;
  for (auto* v : {&e.t, &e.exact, &e.approx, &e.abs_err, &e.rel_err}) v->resize(static_cast<size_t>(samples));
  for (int i = 0; i < samples; ++i) {
    const auto t = static_cast<float>(c.n_r - c.n_r * (static_cast<double>(i) / (samples - 1)));
    const size_t j = static_cast<size_t>(i);
    e.t[j] = t;
    e.exact[j] = std::exp(static_cast<double>(t));
    e.approx[j] = sas_exp(t, c);
    e.abs_err[j] = std::fabs(e.approx[j] - e.exact[j]);
    e.rel_err[j] = e.abs_err[j] / e.exact[j];
    e.max_abs = std::max(e.max_abs, e.abs_err[j]);
    e.max_rel = std::max(e.max_rel, e.rel_err[j]);
  }
  return e;
}

double zeroed_mass(const float* scores, int64_t n, const Config& c) {
  validate(c);
  double max = -std::numeric_limits<double>::infinity();
  for (int64_t i = 0; i < n; ++i) max = std::max(max, static_cast<double>(scores[i]));
  if (max == -std::numeric_limits<double>::infinity()) return 0.0;  // empty or fully masked row
  double total = 0.0, zeroed = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const double t = static_cast<double>(scores[i]) - max;
    const double w = std::exp(t);
    total += w;
    if (t < c.n_r) zeroed += w;
  }
  return zeroed / total;
}

}  // namespace attnlab::sas
