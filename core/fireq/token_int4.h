// attnlab core, FireQ: per-token symmetric INT4 quantization of K and V (FireQ §2.1 Eq. 1, §3.2.1
// "Post-RoPE quantization"), with the scale stored in FP32 or, as FireQ does, in FP8 E4M3 (§3.1, App. B).
// Readable ground truth, not a fast path.
//
// One scale per token (row) of x (tokens, d):
//   σ = maxᵢ|xᵢ| / 7                     (Eq. 1 with b = 4: 2^(b−1) − 1 = 7), computed in double, then
//   σ_s = the stored scale: float(σ), or formats::round_fp8(float(σ), E4M3, saturate) (round to nearest
//         even; the double → float → E4M3 path could round differently from double → E4M3 only at a
//         float-rounded E4M3 tie, which needs σ within 2⁻²⁴ relative of one)
//   x̂ᵢ = clamp(⌊xᵢ / σ_s⌉, −8, 7)       round half to even (std::nearbyint in the default mode), in
//                                         double; the INT4 range of Eq. 1, {−2^(b−1), …, 2^(b−1) − 1}
//   xᵢ ≈ σ_s · x̂ᵢ                        in float: exact for an E4M3 σ_s (4 + 4 significant bits),
//                                         one rounding (≤ 2⁻²⁴ relative) for an FP32 σ_s
// With an FP32 scale no element is clamped (|x|/σ_s ≤ 7·(1 + 2⁻²⁴)) unless σ is an FP32 subnormal.
// With an E4M3 scale, σ_s may be below σ: rounding to a normal E4M3 value errs by ≤ 2⁻⁴ relative, so
// |x|/σ_s ≤ 7/(1 − 2⁻⁴) < 7.5 still rounds to 7; clamping happens only for subnormal (σ < 2⁻⁶) or
// saturated scales, and is counted.
//
// Edge cases (choices; the paper's Lemma B.1 describes the E4M3 scale flushing to 0 and the whole token
// with it):
//   - an all-zero token stores σ_s = 0 and x̂ = 0 (exact; nothing to count);
//   - a non-zero token whose σ is below the format's smallest positive value (E4M3: the subnormal 2⁻⁹,
//     Lemma B.1's threshold, max|x| < 7·2⁻⁹; FP32: 2⁻¹⁴⁹) stores that smallest value instead, so no
//     token is zeroed and x/σ_s never divides by zero (no NaN); such tokens count in underflow_tokens;
//   - a token whose σ exceeds the E4M3 maximum 448 stores 448 (saturate) and counts in saturated_tokens;
//     its elements beyond 7·448 are clamped.
#pragma once

#include <cstdint>
#include <vector>

namespace attnlab::fireq {

enum class ScaleFormat { fp32, fp8_e4m3 };

struct TokenInt4 {
  int64_t tokens = 0, d = 0;
  std::vector<int8_t> q;           // (tokens, d): INT4 values in [−8, 7], one per int8
  std::vector<float> scale;        // (tokens): σ_s, an FP32 or E4M3 value held in a float
  int64_t clamped = 0;             // elements whose ⌊x/σ_s⌉ left [−8, 7]
  int64_t underflow_tokens = 0;    // non-zero tokens whose σ was below the format's smallest positive
  int64_t saturated_tokens = 0;    // tokens whose σ exceeded the format's largest value (E4M3: 448)
};

// x is (tokens, d), finite.
TokenInt4 quantize_token_int4(const float* x, int64_t tokens, int64_t d, ScaleFormat f);
// out is (t.tokens, t.d): out = σ_s · x̂ row by row.
void dequantize_token_int4(const TokenInt4& t, float* out);

}  // namespace attnlab::fireq
