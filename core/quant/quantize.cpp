// attnlab core: the generic quantizer (quantize.h states the rules). Two passes over x, both written
// as straight loops over a row that the compiler vectorizes (AVX2: vminps/vmaxps, vdivps, vroundps):
//   pass 1  the min and max of every group (elementwise into per-column accumulators, folded over the
//           column span when a row of tiles ends);
//   pass 2  per row: the scale and zero point of each column's group expanded into two row arrays,
//           then q, x̂ and |x − x̂| for the whole row at once.
//
// FP contraction is pinned off here: GCC 12 with -std=c++20 still defaults to -ffp-contract=fast (only
// the ISO C modes turn it off), which fuses q·s + z into an FMA in the vectorized loops but not always in
// scalar code, so x̂ would depend on the loop it came from; clang contracts within an expression by
// default. quantize.h promises two roundings.
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include "core/quant/quantize.h"

#include "core/error.h"
#include "core/formats/half.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

namespace attnlab::quant {

namespace {

constexpr float kNormalMin = std::numeric_limits<float>::min();  // 2⁻¹²⁶
constexpr int kLanes = 8;  // independent accumulators in the reductions (one AVX2 register of floats)

void require_bits(int bits, const char* where) {
  if (bits != 2 && bits != 4 && bits != 8) fail_input(where, fmt::format("must be 2, 4 or 8 (got {})", bits));
}

void require_shape(int64_t rows, int64_t cols) {
  if (rows < 1 || cols < 1)
    fail_input("quant.x", fmt::format("must not be empty (got rows = {}, cols = {})", rows, cols));
}

// q_max of the symmetric scheme: 0 → 2^(bits−1) − 1, else an integer in [1, 2^(bits−1) − 1].
double resolve_q_max(double q_max, int bits) {
  const double natural = double((1 << (bits - 1)) - 1);
  if (q_max == 0) return natural;
  if (!(q_max >= 1 && q_max <= natural) || q_max != std::floor(q_max))
    fail_input("quant.q_max", fmt::format("must be 0 (→ {}) or an integer in [1, {}] for {} bits (got {})",
                                          natural, natural, bits, q_max));
  return q_max;
}

Spec validated(Spec spec, int64_t rows, int64_t cols) {
  require_bits(spec.bits, "quant.bits");
  require_shape(rows, cols);
  if (spec.granularity == Granularity::block && spec.block_rows < 1)
    fail_input("quant.block_rows", fmt::format("must be ≥ 1 (got {})", spec.block_rows));
  if ((spec.granularity == Granularity::group_tokens || spec.granularity == Granularity::group_channels) &&
      spec.group < 1)
    fail_input("quant.group", fmt::format("must be ≥ 1 (got {})", spec.group));
  if (spec.scheme == Scheme::asymmetric) {
    if (spec.q_max != 0) fail_input("quant.q_max", "applies to the symmetric scheme only (must be 0)");
  } else {
    spec.q_max = resolve_q_max(spec.q_max, spec.bits);
  }
  return spec;
}

// The bounds [lo, hi] of q.
struct Range {
  float lo, hi;
};
Range range_of(const Spec& spec) {
  const float top = static_cast<float>(q_top(spec));
  return spec.scheme == Scheme::symmetric ? Range{-top, top} : Range{0.0f, top};
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// min of lo[0, n) and max of hi[0, n), n ≥ 1, with kLanes independent accumulators so the loop
// vectorizes (lo and hi may be the same array).
void min_max(const float* lo, const float* hi, int64_t n, float& mn, float& mx) {
  float lmin[kLanes], lmax[kLanes];
  for (int k = 0; k < kLanes; ++k) lmin[k] = lo[0], lmax[k] = hi[0];
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int k = 0; k < kLanes; ++k) {
      lmin[k] = std::min(lmin[k], lo[i + k]);
      lmax[k] = std::max(lmax[k], hi[i + k]);
    }
  for (; i < n; ++i) {
    lmin[0] = std::min(lmin[0], lo[i]);
    lmax[0] = std::max(lmax[0], hi[i]);
  }
  mn = *std::min_element(lmin, lmin + kLanes);
  mx = *std::max_element(lmax, lmax + kLanes);
}

// Σ e and max e over e[0, n) (errors ≥ 0), the sum over kLanes partial sums.
void sum_max(const double* e, int64_t n, double& sum, double& mx) {
  double lsum[kLanes] = {}, lmax[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int k = 0; k < kLanes; ++k) {
      lsum[k] += e[i + k];
      lmax[k] = std::max(lmax[k], e[i + k]);
    }
  for (; i < n; ++i) {
    lsum[0] += e[i];
    lmax[0] = std::max(lmax[0], e[i]);
  }
  for (int k = 0; k < kLanes; ++k) {
    sum += lsum[k];
    mx = std::max(mx, lmax[k]);
  }
}

// Pass 1: group_min / group_max of every group of the tiling.
void group_ranges(const float* x, int64_t rows, int64_t cols, const Tile& t, Quantized& out) {
  const int64_t row_tiles = ceil_div(rows, t.row_span), col_tiles = ceil_div(cols, t.col_span);
  out.group_min.assign(row_tiles * col_tiles, 0.0f);
  out.group_max.assign(row_tiles * col_tiles, 0.0f);
  std::vector<float> acc_min(cols), acc_max(cols);  // elementwise over the rows of one tile row
  for (int64_t tr = 0; tr < row_tiles; ++tr) {
    const int64_t r0 = tr * t.row_span, r1 = std::min(rows, r0 + t.row_span);
    const float* lo = x + r0 * cols;  // a one-row tile row folds straight from x
    const float* hi = lo;
    if (r1 - r0 > 1) {
      std::copy(lo, lo + cols, acc_min.begin());
      std::copy(lo, lo + cols, acc_max.begin());
      for (int64_t r = r0 + 1; r < r1; ++r) {
        const float* xr = x + r * cols;
        for (int64_t c = 0; c < cols; ++c) {
          acc_min[c] = std::min(acc_min[c], xr[c]);
          acc_max[c] = std::max(acc_max[c], xr[c]);
        }
      }
      lo = acc_min.data();
      hi = acc_max.data();
    }
    for (int64_t tc = 0; tc < col_tiles; ++tc) {
      const int64_t c0 = tc * t.col_span, n = std::min(cols, c0 + t.col_span) - c0;
      min_max(lo + c0, hi + c0, n, out.group_min[tr * col_tiles + tc], out.group_max[tr * col_tiles + tc]);
    }
  }
}

// Eq. 4 (read with the labels the right way round) from each group's range, with the rules of
// quantize.h: FP32 arithmetic, s = 1 for a scale that is not a normal number, optional FP16 storage.
void group_params(Quantized& out) {
  const Spec& spec = out.spec;
  const int64_t G = static_cast<int64_t>(out.group_min.size());
  const float top = static_cast<float>(q_top(spec));
  const bool sym = spec.scheme == Scheme::symmetric;
  out.scale.assign(G, 1.0f);
  if (!sym) out.zero.assign(G, 0.0f);
  for (int64_t g = 0; g < G; ++g) {
    const float mn = out.group_min[g], mx = out.group_max[g];
    const float span = sym ? std::max(std::fabs(mn), std::fabs(mx)) : mx - mn;
    if (std::isinf(span))
      fail_input("quant.x", fmt::format("group {}: max − min = {} − ({}) overflows FP32", g, mx, mn));
    float s = scale_for_span(span, top);
    float z = sym ? 0.0f : mn;
    if (spec.fp16_params) {
      s = formats::round_fp16(s);
      z = formats::round_fp16(z);
      if (s == 0.0f) s = 1.0f;
      if (std::isinf(s) || std::isinf(z))
        fail_input("quant.x", fmt::format("group {}: scale {} or zero point {} overflows FP16", g, s, z));
    }
    out.scale[g] = s;
    if (!sym) out.zero[g] = z;
  }
}

// The scale and zero point of every column of tile row tr, expanded from the groups.
void expand_row(const Quantized& q, const Tile& t, int64_t tr, float* rs, float* rz) {
  const int64_t col_tiles = ceil_div(q.cols, t.col_span);
  for (int64_t tc = 0; tc < col_tiles; ++tc) {
    const int64_t c0 = tc * t.col_span, c1 = std::min(q.cols, c0 + t.col_span);
    const int64_t g = tr * col_tiles + tc;
    std::fill(rs + c0, rs + c1, q.scale[g]);
    std::fill(rz + c0, rz + c1, q.zero.empty() ? 0.0f : q.zero[g]);
  }
}

// Pass 2: q = clamp(rne((x − z)/s), lo, hi) and the error stats, with out.scale / out.zero set.
void quantize_rows(const float* x, Quantized& out) {
  const int64_t rows = out.rows, cols = out.cols;
  const Tile t = tile_of(out.spec, rows, cols);
  const Range range = range_of(out.spec);
  const float lo = range.lo, hi = range.hi;
  out.q.resize(rows * cols);
  std::vector<float> rs(cols), rz(cols);
  std::vector<double> err(cols);  // |x − x̂| in FP64: the FP32 subtraction would round the error
  int64_t clamped = 0;
  double sum = 0, worst = 0;
  for (int64_t r = 0; r < rows; ++r) {
    if (r % t.row_span == 0) expand_row(out, t, r / t.row_span, rs.data(), rz.data());
    const float* xr = x + r * cols;
    int16_t* qr = out.q.data() + r * cols;
    int32_t row_clamped = 0;
    for (int64_t c = 0; c < cols; ++c) {
      const float v = std::nearbyint((xr[c] - rz[c]) / rs[c]);  // Eq. 3: ⌈(x − z)/s⌋, ties to even
      row_clamped += int32_t(v < lo) + int32_t(v > hi);
      const float qv = std::min(std::max(v, lo), hi);
      qr[c] = static_cast<int16_t>(qv);
      const float xhat = qv * rs[c] + rz[c];  // Eq. 3: x̂ = Q(x)·s + z
      err[c] = std::fabs(double(xr[c]) - double(xhat));
    }
    clamped += row_clamped;
    sum_max(err.data(), cols, sum, worst);
  }
  out.stats.clamped = clamped;
  out.stats.max_abs_error = worst;
  out.stats.mean_abs_error = sum / double(rows * cols);
}

}  // namespace

float scale_for_span(float span, float top) {
  const float s = span / top;
  return s >= kNormalMin ? s : 1.0f;
}

Tile tile_of(const Spec& spec, int64_t rows, int64_t cols) {
  switch (spec.granularity) {
    case Granularity::tensor: return {rows, cols};
    case Granularity::token: return {1, cols};
    case Granularity::channel: return {rows, 1};
    case Granularity::block: return {spec.block_rows, cols};
    case Granularity::group_tokens: return {spec.group, 1};
    case Granularity::group_channels: return {1, spec.group};
  }
  return {rows, cols};
}

double q_top(const Spec& spec) {
  if (spec.scheme == Scheme::asymmetric) return double((1 << spec.bits) - 1);
  return spec.q_max != 0 ? spec.q_max : double((1 << (spec.bits - 1)) - 1);
}

int64_t Quantized::group_of(int64_t row, int64_t col) const {
  const Tile t = tile_of(spec, rows, cols);
  return (row / t.row_span) * ceil_div(cols, t.col_span) + col / t.col_span;
}

float Quantized::dequantized(int64_t row, int64_t col) const {
  const int64_t g = group_of(row, col);
  return float(q[row * cols + col]) * scale[g] + (zero.empty() ? 0.0f : zero[g]);
}

void require_finite(const float* x, int64_t rows, int64_t cols, const char* where) {
  const int64_t n = rows * cols;
  int32_t bad = 0;  // a branch-free scan first (vectorizes); the index is looked up only on failure
  for (int64_t i = 0; i < n; ++i)
    bad |= int32_t((std::bit_cast<uint32_t>(x[i]) & 0x7f800000u) == 0x7f800000u);
  if (!bad) return;
  for (int64_t i = 0; i < n; ++i)
    if (!std::isfinite(x[i]))
      fail_input(where, fmt::format("element {} (row {}, col {}) is {}", i, i / cols, i % cols,
                                    std::isnan(x[i]) ? "NaN" : "inf"));
}

Quantized quantize(const float* x, int64_t rows, int64_t cols, const Spec& spec) {
  Quantized out;
  out.spec = validated(spec, rows, cols);
  out.rows = rows;
  out.cols = cols;
  require_finite(x, rows, cols, "quant.x");
  group_ranges(x, rows, cols, tile_of(out.spec, rows, cols), out);
  group_params(out);
  quantize_rows(x, out);
  return out;
}

void dequantize(const Quantized& q, float* out) {
  const Tile t = tile_of(q.spec, q.rows, q.cols);
  std::vector<float> rs(q.cols), rz(q.cols);
  for (int64_t r = 0; r < q.rows; ++r) {
    if (r % t.row_span == 0) expand_row(q, t, r / t.row_span, rs.data(), rz.data());
    const int16_t* qr = q.q.data() + r * q.cols;
    float* o = out + r * q.cols;
    for (int64_t c = 0; c < q.cols; ++c) o[c] = float(qr[c]) * rs[c] + rz[c];
  }
}

Quantized quantize_with_scale(const float* x, int64_t rows, int64_t cols, int bits, double q_max,
                              float scale) {
  require_bits(bits, "quant.bits");
  require_shape(rows, cols);
  if (q_max == 0) fail_input("quant.q_max", "must be given (an integer ≥ 1) with a fixed scale");
  if (!(scale >= kNormalMin) || std::isinf(scale))
    fail_input("quant.scale", fmt::format("must be a finite normal FP32 number > 0 (got {})", scale));
  Quantized out;
  out.spec = validated(
      Spec{.bits = bits, .scheme = Scheme::symmetric, .granularity = Granularity::tensor, .q_max = q_max},
      rows, cols);
  out.rows = rows;
  out.cols = cols;
  require_finite(x, rows, cols, "quant.x");
  group_ranges(x, rows, cols, tile_of(out.spec, rows, cols), out);
  out.scale = {scale};
  quantize_rows(x, out);
  return out;
}

}  // namespace attnlab::quant
