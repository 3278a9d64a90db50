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
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <stdexcept>

#if defined(__F16C__) || defined(__AVX2__)
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

struct Luts {
  std::array<float, kMaxRange + 1> fp32;  // float(e^{−k})
  std::array<float, kMaxRange + 1> fp16;  // e^{−k} rounded once to FP16
};

const Luts& luts() {
  static const Luts tables = [] {
    Luts l{};
    for (int k = 0; k <= kMaxRange; ++k) {
      l.fp32[k] = static_cast<float>(std::exp(-static_cast<double>(k)));
      l.fp16[k] = formats::round_fp16_from_double(std::exp(-static_cast<double>(k)));
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
        c0(formats::round_fp16_from_double(c.poly[0])),
        c1(formats::round_fp16_from_double(c.poly[1])),
        c2(formats::round_fp16_from_double(c.poly[2])),
        c3(formats::round_fp16_from_double(c.poly[3])) {}

  float operator()(float t) const {
    if (std::isnan(t)) return t;
    if (t < n_r) return 0.0f;                          // Eq. 14 (also t = −∞)
    const float x = std::max(-t, 0.0f);                // t > 0 clamps to 0
    const float x_int = std::floor(x);
    const float x_dec = round16(x - x_int);  // may round up to 1.0: POLY(1) ≈ e^{−1}, continuous
    return round16(lut[static_cast<int>(x_int)] * poly(x_dec));  // the FP16 product, exact in FP32 first
  }

  // POLY16(x_dec), Eq. 15 by Horner, each step one HFMA.
  float poly(float x_dec) const { return hfma(hfma(hfma(c3, x_dec, c2), x_dec, c1), x_dec, c0); }
};

// t (n) ← SAS(t − m). The kernel (and its LUT) is a local copy and t is __restrict, so GCC knows the
// LUT gather cannot read what the loop writes and vectorizes it.
void fp32_loop(float* __restrict t, int64_t n, float m, const Fp32Kernel k) {
  for (int64_t i = 0; i < n; ++i) t[i] = k(t[i] - m);
}

// The FP16 path by table. In Fp16Kernel, POLY16 depends on t only through x_dec, an FP16 value in
// [0, 1]: 15361 possible inputs (bit patterns 0x0000 … 0x3C00). Tabulating POLY16 for all of them once
// per coefficient set turns three emulated HFMAs into one load; x_dec's FP16 bit pattern is the index
// (F16C's vcvtps2ph gives it directly). The table is built with Fp16Kernel's own hfma chain, so both
// paths agree bit for bit by construction; tests/core/test_sas.cpp checks every FP16 x_dec anyway.
constexpr uint32_t kOneFp16 = 0x3C00u;  // FP16 bits of 1.0, the largest x_dec

struct Poly16Table {
  std::array<uint64_t, 4> key;  // the coefficients' double bit patterns
  std::vector<float> poly16;    // (kOneFp16 + 1): POLY16(x_dec) by x_dec's FP16 bits
};

std::array<uint64_t, 4> poly_key(const Config& c) {
  std::array<uint64_t, 4> k{};
  for (size_t i = 0; i < k.size(); ++i) k[i] = std::bit_cast<uint64_t>(c.poly[i]);
  return k;
}

// One table per distinct coefficient set (60 KB each), built on first use and kept for the process:
// a sweep over refits makes a handful. Each thread remembers the last table it used, so the online
// softmax, which calls per tile row, takes the lock only when the coefficients change.
const float* poly16_table(const Config& c, const Fp16Kernel& k) {
  const auto key = poly_key(c);
  thread_local const Poly16Table* last = nullptr;
  if (last != nullptr && last->key == key) return last->poly16.data();
  static std::mutex mutex;
  static std::vector<std::unique_ptr<Poly16Table>> tables;
  const std::lock_guard lock(mutex);
  auto it = std::find_if(tables.begin(), tables.end(), [&](const auto& t) { return t->key == key; });
  if (it == tables.end()) {
    auto t = std::make_unique<Poly16Table>();
    t->key = key;
    t->poly16.resize(kOneFp16 + 1);
    for (uint32_t h = 0; h <= kOneFp16; ++h) t->poly16[h] = k.poly(formats::fp16_value(static_cast<uint16_t>(h)));
    tables.push_back(std::move(t));
    it = tables.end() - 1;
  }
  last = it->get();
  return last->poly16.data();
}

// One element of the table path: the steps of Fp16Kernel::operator() with POLY16 looked up.
inline float fp16_by_table(float t, float n_r, float x_max, const float* lut, const float* poly16) {
  if (std::isnan(t)) return t;
  if (t < n_r) return 0.0f;
  const float x = std::min(std::max(-t, 0.0f), x_max);
  const float x_int = std::floor(x);
  const uint16_t dec_bits = formats::fp16_bits(x - x_int);
  return round16(lut[static_cast<int>(x_int)] * poly16[dec_bits]);
}

// t (n) ← SAS16(t − m). AVX2 + F16C: eight lanes per step, the two tables read by gathers; the selects
// for dropped (t < n_r → 0) and NaN (→ t) lanes are blends. x is clamped to [0, −n_r] before the
// indexing (vmaxps returns its second operand, 0, for a NaN lane), so every gather index is in range.
void fp16_loop(float* __restrict t, int64_t n, float m, const Fp16Kernel& k, const float* poly16) {
  const float x_max = -k.n_r;
  int64_t i = 0;
#if defined(__AVX2__) && defined(__F16C__)
  const __m256 vm = _mm256_set1_ps(m), vn_r = _mm256_set1_ps(k.n_r), vx_max = _mm256_set1_ps(x_max);
  const __m256 zero = _mm256_setzero_ps(), sign = _mm256_set1_ps(-0.0f);
  for (; i + 8 <= n; i += 8) {
    const __m256 tv = _mm256_sub_ps(_mm256_loadu_ps(t + i), vm);
    const __m256 is_nan = _mm256_cmp_ps(tv, tv, _CMP_UNORD_Q);
    const __m256 dropped = _mm256_cmp_ps(tv, vn_r, _CMP_LT_OQ);
    const __m256 x = _mm256_min_ps(_mm256_max_ps(_mm256_xor_ps(tv, sign), zero), vx_max);
    const __m256 x_int = _mm256_floor_ps(x);
    const __m128i dec_bits = _mm256_cvtps_ph(_mm256_sub_ps(x, x_int), _MM_FROUND_TO_NEAREST_INT);
    const __m256 poly = _mm256_i32gather_ps(poly16, _mm256_cvtepu16_epi32(dec_bits), 4);
    const __m256 lut = _mm256_i32gather_ps(k.lut, _mm256_cvttps_epi32(x_int), 4);
    const __m256 v = _mm256_cvtph_ps(_mm256_cvtps_ph(_mm256_mul_ps(lut, poly), _MM_FROUND_TO_NEAREST_INT));
    _mm256_storeu_ps(t + i, _mm256_blendv_ps(_mm256_blendv_ps(v, zero, dropped), tv, is_nan));
  }
#endif
  for (; i < n; ++i) t[i] = fp16_by_table(t[i] - m, k.n_r, x_max, k.lut, poly16);
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
  return formats::round_fp16_from_double(std::bit_cast<double>(sb));
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
    fp16_loop(t, n, m, k, poly16_table(c, k));
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
