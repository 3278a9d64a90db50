// attnlab core: the generic integer quantizer (TurboAttention §2.3, Eq. 3–4). Readable ground truth:
// every other quantized scheme (progressive blocks, the decode buffer, KIVI) is built on these rules.
//
// Eq. 3 is Q(x) = ⌈(x − z)/s⌋, x̂ = Q(x)·s + z. The paper's Eq. 4 swaps the labels "sym." and "asym.";
// what is implemented here is the usual reading:
//   symmetric   s = max|x| / q_max,              z = 0,     q ∈ [−q_max, q_max]  (q_max = 2^(b−1) − 1
//                                                                                  unless given, e.g. 119)
//   asymmetric  s = (max − min) / (2^b − 1),      z = min,   q ∈ [0, 2^b − 1]
//
// The rules, exactly (a kernel that copies them gets the same integers):
//   - s is computed in FP32: s = a / float(q_max) with a = max(|min|, |max|) of the group (symmetric),
//     s = float(max − min) / float(2^b − 1) (asymmetric), each one correctly rounded FP32 operation.
//   - A group whose s is not a normal FP32 number (all zeros, a constant group under the asymmetric
//     scheme, or a range below q_max·2⁻¹²⁶) gets s = 1: symmetric values quantize to 0 and dequantize
//     within the group's (tiny) range; constants come back exactly through the zero point
//     (q = 0, x̂ = 0·1 + min = x). Scales are therefore always finite and ≥ 2⁻¹²⁶ — never 0, NaN, inf.
//   - q = clamp(rne((x − z) / s), lo, hi): a true FP32 division x/s (not x·(1/s); CUDA's default
//     IEEE `/` gives the same bits), then round-half-to-even — std::nearbyint under the default
//     rounding mode, the same as CUDA's __float2int_rn / cvt.rni. Symmetric: z = 0 and x − 0 = x.
//   - x̂ = q·s + z as two FP32 operations, no FMA (quantize.cpp pins contraction off; a CUDA kernel
//     that wants the same bits uses __fmul_rn / __fadd_rn).
//   - Unclamped values satisfy |x − x̂| ≤ s/2 up to the few FP32 roundings named above.
//   - Asymmetric groups whose max − min overflows FP32 (|x| near 3.4e38) are an InputError.
//   - Groups that do not divide an axis: the last group along that axis is shorter (a tail group),
//     with its own min/max and scale — nothing is padded.
//   - Spec::fp16_params (KIVI keeps its scales and zero points in FP16): s and z are rounded to FP16
//     before use (s then 1 if it underflowed to 0), and the rules above use the rounded values.
#pragma once

#include <cstdint>
#include <vector>

namespace attnlab::quant {

enum class Scheme { symmetric, asymmetric };

// Each granularity is a rectangular tiling of the (rows, cols) = (tokens, channels) matrix; a group is
// one tile of (row_span, col_span) elements (see tile_of):
//   tensor          (rows, cols)     one scale
//   token           (1, cols)        one scale per token (row)
//   channel         (rows, 1)        one scale per channel (column)
//   block           (block_rows, cols)  FlashAttention's tile: B_r tokens × all channels
//   group_tokens    (group, 1)       g consecutive tokens of one channel (KIVI keys)
//   group_channels  (1, group)       g consecutive channels of one token (KIVI values)
// Group order is row-major over the tile grid: group_of(r, c) = (r / row_span)·col_tiles + c / col_span
// with col_tiles = ⌈cols / col_span⌉. So token → g = r; channel → g = c; block → g = r / B_r;
// group_tokens → g = (r / g)·cols + c; group_channels → g = r·⌈cols / g⌉ + c / g.
enum class Granularity { tensor, token, channel, block, group_tokens, group_channels };

struct Spec {
  int bits = 8;  // 2, 4 or 8
  Scheme scheme = Scheme::symmetric;
  Granularity granularity = Granularity::token;
  int64_t block_rows = 64;   // B_r, for block (≥ 1; a shorter last block is a tail)
  int64_t group = 32;        // g, for group_* (≥ 1; a shorter last group is a tail)
  double q_max = 0;          // symmetric only: 0 → 2^(bits−1) − 1 (127, 7, 1); an
                             // integer in [1, 2^(bits−1) − 1] otherwise (119 for
                             // TurboAttention's INT8). Must stay 0 for asymmetric.
  bool fp16_params = false;  // round s and z to FP16 before use (KIVI's storage)
};

struct Stats {
  int64_t clamped = 0;        // values whose rne((x − z)/s) fell outside [lo, hi] and were clamped
  double max_abs_error = 0;   // max |x − x̂|
  double mean_abs_error = 0;  // mean |x − x̂| (summed in FP64)
};

struct Tile {
  int64_t row_span = 1, col_span = 1;  // the shape of one group (the last ones may be shorter)
};

struct Quantized {
  int64_t rows = 0, cols = 0;    // x was (rows, cols) = (tokens, channels), row-major
  Spec spec;                     // as given, with q_max resolved (symmetric: never 0)
  std::vector<int16_t> q;        // (rows, cols): symmetric in [−q_max, q_max], asymmetric in [0, 2^b − 1]
  std::vector<float> scale;      // (groups) s per group, in group order (see Granularity)
  std::vector<float> zero;       // (groups) asymmetric: z = the group's min (Eq. 3); empty if symmetric
  std::vector<float> group_min;  // (groups) min of x over the group, before quantization (probe)
  std::vector<float> group_max;  // (groups) max of x over the group, before quantization (probe)
  Stats stats;

  int64_t groups() const { return static_cast<int64_t>(scale.size()); }
  int64_t group_of(int64_t row, int64_t col) const;
  float dequantized(int64_t row, int64_t col) const;  // x̂ of one element
};

// The tile of a granularity for a (rows, cols) input (the table behind group_of).
// The scale rule above for one group: span (symmetric: max|x|; asymmetric: max − min) over the grid's
// top (q_max, or 2^b − 1) as one FP32 division, or 1 when the quotient is not a normal FP32 number.
// For code that quantizes on the fly inside a tile loop (TurboAttention's P̃) without a Quantized.
float scale_for_span(float span, float top);

Tile tile_of(const Spec& spec, int64_t rows, int64_t cols);
// 2^(bits−1) − 1 when spec.q_max is 0, else spec.q_max (symmetric); 2^bits − 1 (asymmetric): the top
// of the integer range.
double q_top(const Spec& spec);

// x is (rows, cols) = (tokens, channels), row-major. Throws InputError for bits ∉ {2, 4, 8}, empty
// input, block_rows/group < 1, a q_max out of range, NaN/Inf in x (naming the first index).
Quantized quantize(const float* x, int64_t rows, int64_t cols, const Spec& spec);
// out is (rows, cols): x̂ = q·s + z, bit for bit what quantize measured its error against.
void dequantize(const Quantized& q, float* out);

// Throws InputError(where: "element i (row r, col c) is NaN|inf") for the first non-finite value of
// x (rows, cols). Every quantizer here calls it before touching the data.
void require_finite(const float* x, int64_t rows, int64_t cols, const char* where);

// Symmetric quantization of x (rows, cols) with one given scale (the decode buffer's universal scale,
// §3.3): q = clamp(rne(x / scale), −q_max, q_max), counting the clamped values in stats.clamped.
// scale must be a finite normal FP32 number > 0; q_max an integer in [1, 2^(bits−1) − 1].
Quantized quantize_with_scale(const float* x, int64_t rows, int64_t cols, int bits, double q_max,
                              float scale);

}  // namespace attnlab::quant
