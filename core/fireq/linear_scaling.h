// attnlab core, FireQ: the two scalings of an INT4 × FP8 linear layer (FireQ §3.1.2, App. B, C.1, E.3).
// Readable ground truth, not a fast path; reductions accumulate in double.
//
// In FireQ a linear layer Y = X·Wᵀ (Eq. 3) keeps W (out, in) in INT4, groups of g along `in`, each group
// with one FP8 E4M3 scale σ = max|ω|/7 (Eq. 1), and X in FP8. Two offline scalings protect it:
//   - CAS (Def. 3.1): W̄ = W·Λ, λⁱ = ω̄ / absmean(ωⁱ) for every input channel i (column i of W); the
//     inverse goes to the activation, Y = (X·Λ⁻¹)_FP8 · (Λᵀ·Wᵀ)_INT4 = X·Wᵀ (Eq. 7).
//   - PTS (Def. 3.2): W is multiplied by δ = 2ⁿ before quantization and the GEMM output by δ⁻¹, with n
//     the smallest non-negative integer meeting one of two conditions: the underflow score
//     S(W·2ⁿ) stops changing (Eq. 8), or the largest element enters the band just below the E4M3
//     overflow threshold 448 (Eq. 9).
// Lemma B.1: a group whose max |ω| is below 7·2⁻⁹ has σ below the smallest E4M3 subnormal 2⁻⁹; the
// paper counts such groups as underflowed (E.3, Figure 12's y-axis), which underflow_fraction measures.
#pragma once

#include <cstdint>
#include <vector>

namespace attnlab::fireq {

// Lemma B.1: 7 · 2⁻⁹ — an INT4 group whose max |ω| is below it has an FP8 scale below 2⁻⁹.
inline constexpr double kUnderflowThreshold = 7.0 * 0x1p-9;
// App. C.1: the E4M3 overflow threshold 1.75 · 2⁸ = 448 for δ·|ω| (the largest LUT entry 7σ = max|ω|
// must stay an E4M3 value); Eq. 9's band is [1.75·2⁷, 1.75·2⁸) = [224, 448).
inline constexpr double kOverflowThreshold = 1.75 * 0x1p8;

// ---- Definition 3.1, CAS -------------------------------------------------------------------------
// λ (in): λⁱ = ω̄ / absmean(ωⁱ), ωⁱ = column i of w (all weights reading input channel i), absmean in
// double. w is (out, in) row-major; target_absmean = ω̄ > 0.
// Choice (the paper leaves it open): an all-zero column has no absmean to normalize; its λ is 1.
// Note: Def. 3.1 defines λ from the weights, not from calibration activations; we follow the paper.
std::vector<float> cas_factors(const float* w, int64_t out, int64_t in, double target_absmean);

// A default ω̄ (the paper names no value): the mean over input channels of absmean(ωⁱ), so CAS moves
// every column to the average column magnitude and leaves the overall magnitude of W about where it was.
// Zero columns are left out of the mean; 0 if W is all zero.
double cas_default_target(const float* w, int64_t out, int64_t in);

// W̄ = W·Λ: column i of w (out, in) multiplied by λⁱ, in place. lambda is (in).
void cas_scale_weights(float* w, int64_t out, int64_t in, const std::vector<float>& lambda);
// X·Λ⁻¹ (Eq. 7): channel i of x (tokens, in) divided by λⁱ, in place. lambda is (in).
void cas_scale_activations(float* x, int64_t tokens, int64_t in, const std::vector<float>& lambda);

// ---- Definition 3.2, PTS -------------------------------------------------------------------------
// Eq. 8: S(W·2ⁿ) = Σ_{ω∈W} max(0, 7·2⁻⁹ − 2ⁿ·|ω|), in double (2ⁿ·|ω| is exact there). w is (out, in);
// n may be any integer in [−200, 200]. S is an element sum, groupless, exactly as the paper defines it.
double underflow_score(const float* w, int64_t out, int64_t in, int n = 0);

// n of δ = 2ⁿ (Def. 3.2): the smallest n ≥ 0 meeting condition 1 or condition 2. w is (out, in).
//   Condition 1, S(W·2ⁿ) = S(W·2ⁿ⁺ⁱ) for all i ∈ ℕ, holds exactly when every non-zero |ω| has
//   2ⁿ·|ω| ≥ 7·2⁻⁹: a non-zero element below the threshold would lower S at some larger scale, and
//   once none is below, every term is constant (zeros contribute 7·2⁻⁹ at any scale). So it is decided
//   from the smallest non-zero |ω|, exactly, without summing an infinite family.
//   Condition 2, ∃ω: 7·2⁵⁻ⁿ ≤ |ω| < 7·2⁶⁻ⁿ, i.e. 224 ≤ 2ⁿ·|ω| < 448. Choice: we test it on the largest
//   |ω| only. While max|W| < 448 this is the literal condition (the largest element is the first to
//   enter the band as n grows); when max|W| ≥ 448 already, a literal reading would pick the n at which a
//   smaller element enters the band, an upscaling that overflows the largest, against App. C.1's intent
//   ("no element exceeds the overflow threshold"); we return 0 (PTS never scales down: n ≥ 0).
// Consequently 2ⁿ·max|W| < 448 whenever max|W| < 448. All-zero W: 0 (condition 1 holds at n = 0).
int pts_exponent(const float* w, int64_t out, int64_t in);

// W·2ⁿ in place (exact in float unless it leaves the float range). w is (count).
void pts_scale(float* w, int64_t count, int n);

// App. E.3 (Figure 12's y-axis): the fraction of quantization groups — g consecutive weights along `in`
// of one output row — whose max |ω| is below 7·2⁻⁹ (Lemma B.1). w is (out, in); group divides in.
// With round-to-nearest, σ ∈ (2⁻¹⁰, 2⁻⁹) rounds up to 2⁻⁹ rather than to 0, so only groups below
// 7·2⁻¹⁰ are actually zeroed; we count the paper's threshold (all of these groups lose their scale's
// precision: σ is at or below the E4M3 subnormal spacing).
double underflow_fraction(const float* w, int64_t out, int64_t in, int64_t group);

}  // namespace attnlab::fireq
