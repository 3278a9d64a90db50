// attnlab core: blockwise progressive quantization of one KV block (TurboAttention §2.3 Eq. 6–8,
// §3.1 Eq. 9–10, App. A Alg. 1's last lines and Alg. 2). Readable ground truth for the kernels.
//
// Step 1 (Eq. 9, Alg. 1): the block X (B_c tokens × d channels) → INT8, symmetric, one scale per block:
//   s_K = max|X| / 119, X^q1 = clamp(rne(X / s_K), −127, 127)   (the generic quantizer, quantize.h,
//   granularity tensor, q_max = q_max8). s_K is kept in FP32 — the paper says FP16 scales; one FP32
//   scalar per block costs the cache nothing measurable, and FP32 keeps step 1 identical to quantize().
// Step 2 (Eq. 10, Alg. 1): per channel c of the INT8 block, asymmetric INT4/INT2 in integer arithmetic.
//   With mn, mx the channel's INT8 min and max and L = 2^b − 1:
//     s_int = max(1, rne((mx − mn) / L))
//     z_int = rne(mn / s_int)
//     code  = clamp(rne(X^q1 / s_int − z_int), 0, L) = clamp(rne((X^q1 − z_int·s_int) / s_int), 0, L)
//   Alg. 1 writes s_int from max/min of "K^q2": that must be K^q1, the INT8 block being compressed.
//   IntScale::up replaces the first rule by s_int = max(1, ⌈(mx − mn) / L⌉) (not the paper's): rounding
//   s_int to nearest can make L·s_int up to L/2 short of the channel range, and the values beyond the
//   grid clamp with errors of several s_int/2 (measured, INT4, normal and outlier-channel blocks: max
//   error 1.9–2.0× direct INT4; with up 1.1×, for a mean error 1.05–1.25× vs 1.09–1.29×; printed by the
//   test). With up, L·s_int ≥ mx − mn and every value dequantizes within s_int/2.
//   Every rne here is a rounded integer quotient (div_rne below), ties to even like the FP32 rounding of
//   step 1. (mx − mn)/L never ties: L is odd. mn / s_int and the code quotient can tie when s_int is even.
// Dequantization (Eq. 7–8, Alg. 2) back to INT8, in integers:
//   X̂^q1 = sat₁₂₇((code + z_int)·s_int)
//   Alg. 2 writes K^q2·s_int + z, but Alg. 1 quantized with code = ⌈K^q1/s_int − z_int⌋, whose inverse
//   is (code + z_int)·s_int: z_int counts steps of s_int, not INT8 units. We use that consistent inverse.
// Range (tested exhaustively in tests/core/quant/test_progressive.cpp): an unclamped code dequantizes
// within s_int/2 of X^q1, and every code lies in [z_int·s_int, (z_int + L)·s_int] with
// z_int·s_int ≥ mn − s_int/2, so |X̂^q1| ≤ Q + s_int/2 for |X^q1| ≤ Q. With Q = 119, INT4 has
// s_int ≤ rne(238/15) = 16 and 119 + 8 = 127: always INT8. INT2 has s_int up to rne(238/3) = 79, and
// e.g. mn = −119, mx = 119 gives s_int = 79, z_int = −2, code 0 ↦ −158. The decode buffer's tokens reach
// Q = 127, where INT4 (s_int ≤ 17) can leave INT8 too. Alg. 2 feeds INT8 tensor cores, so the
// dequantized value saturates to [−127, 127] (symmetric INT8, like step 1). Saturation only moves the
// value towards X^q1 ∈ [−127, 127], so it never increases the error; `saturated` counts it.
// s_int ≤ 85 and |z_int| ≤ 127 for any INT8 input, so both fit the INT8 storage the paper describes.
#pragma once

#include <cstdint>
#include <vector>

namespace attnlab::quant {

// How s_int is rounded (step 2): nearest is Alg. 1 as written; up guarantees the grid covers the range.
enum class IntScale { nearest, up };

// One KV block (B_c tokens × d channels) after both steps.
struct ProgressiveBlock {
  int64_t rows = 0, cols = 0;         // (B_c, d) = (tokens, channels)
  int bits = 4;                       // 4 or 2: the cache format of step 2
  IntScale rule = IntScale::nearest;  // the rounding of s_int
  float scale8 = 0;                   // s_K (or s_V) of step 1, FP32
  std::vector<int8_t> q8;             // (rows, cols) X^q1, the INT8 values after step 1
  std::vector<uint8_t> codes;         // (rows, cols) X^q2, the INT4/INT2 codes after step 2, unpacked
  std::vector<int16_t> s_int, z_int;  // (cols) per-channel integer scale and zero point
  // Probes.
  std::vector<int16_t> q8_min, q8_max;  // (cols) each channel's INT8 range, the input of step 2
  int64_t clamped8 = 0;   // step-1 values clamped to ±127 (0 from float input; the decode buffer's count)
  int64_t clamped = 0;    // step-2 quotients rne(X^q1/s_int − z_int) outside [0, L], clamped
  int64_t saturated = 0;  // (code + z_int)·s_int outside [−127, 127], saturated by the dequantization
};

// x is (rows, cols) = (B_c, d), FP32. bits ∈ {2, 4}; q_max8 an integer in [1, 127] (Alg. 1: 119).
ProgressiveBlock progressive_quantize(const float* x, int64_t rows, int64_t cols, int bits,
                                      double q_max8 = 119, IntScale rule = IntScale::nearest);

// Step 2 alone, on an INT8 block that already has its scale (the decode buffer's flush, §3.3):
// q8 is (rows, cols) with values in [−127, 127]; scale8 is kept as the block's s_K.
ProgressiveBlock progressive_compress(const int8_t* q8, int64_t rows, int64_t cols, float scale8, int bits,
                                      IntScale rule = IntScale::nearest);

// Alg. 2: (rows, cols) INT8 values sat₁₂₇((code + z_int)·s_int), exact integer arithmetic.
std::vector<int8_t> progressive_dequantize(const ProgressiveBlock& b);

// Cache bytes of one block as stored: the codes packed to `bits` (formats/pack.h), s_int and z_int as
// INT8 per channel (both fit, see above), and scale8 as FP32.
int64_t progressive_bytes(const ProgressiveBlock& b);

// rne(a / b) for integers, b > 0: the quotient rounded to nearest, ties to even (a may be negative).
int64_t div_rne(int64_t a, int64_t b);
// The same quotient through one FP32 division, equal to div_rne for |a| < 2²², 1 ≤ b < 2²⁴; inline and
// branch-free so step 2's loop vectorizes. Step 2 uses it with |a| < 2¹⁴.
inline int32_t div_rne_small(int32_t a, int32_t b) {
  // a and b are exact in FP32 and the FP32 quotient is within 2⁻²⁴·|a/b| of a/b. A half-integer a/b is
  // representable, so the quotient is exact and the rounding below breaks the tie to even. Any other
  // a/b lies at least 1/(2b) from every half-integer (|2a − odd·b| ≥ 1), and 2⁻²⁴·|a|/b < 1/(2b) for
  // |a| < 2²³: the quotient cannot cross one. Rounding to an integer: q + 1.5·2²³ lands in [2²³, 2²⁴),
  // where the FP32 spacing is 1, so the addition rounds q to nearest even and the subtraction is exact
  // (|q| < 2²²; no FMA contraction: -ffp-contract=off).
  const float q = static_cast<float>(a) / static_cast<float>(b);
  constexpr float kMagic = 0x1.8p23f;
  return static_cast<int32_t>((q + kMagic) - kMagic);
}

}  // namespace attnlab::quant
