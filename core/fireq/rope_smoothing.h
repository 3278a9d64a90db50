// attnlab core, FireQ: RoPE-aware two-stage outlier smoothing of the key matrix (FireQ §3.2.1,
// Theorem 3.1 with its proof in App. C.2, App. E.1–E.2). Readable ground truth, not a fast path;
// reductions accumulate in double.
//
// RoPE (Eq. 5) rotates each channel pair (i, j = i + d/2) of a token at position t by θᵢᵗ. FireQ splits
// the d/2 pairs of one KV head into two disjoint sets:
//   - outlier pairs (the top_k, E.1 uses 8): Channel-wise RoPE Scaling, CRS, post-RoPE, one factor per
//     channel, tᵢ = β·maxₙ|kᵢⁿ| (tᵢ and tⱼ computed independently);
//   - regular pairs (the rest): RoPE-preserving Normalization, RPN, pre-RoPE, one factor per pair,
//     sᵢ = sⱼ = α·maxₙ‖(kᵢⁿ, kⱼⁿ)‖₂ (Eq. 10), which bounds every post-RoPE pair norm by 1/α (Thm 3.1).
// The sets are disjoint, as §3.2.1 ("CRS post-RoPE to the first group, and RPN pre-RoPE to the second")
// and E.2 (with all 64 pairs marked outliers "the key matrix remains unchanged after RPN") read.
// The key is divided by the factors (k ← k/s) and the query multiplied (q ← q·s), so q·kᵀ is unchanged
// (the inverses N⁻¹, S⁻¹ go to the query side).
//
// Why RPN shares one factor within a pair. RoPE multiplies the row vector (kᵢ, kⱼ) by a rotation R(θ).
// A common scale commutes with it, (c·k)·R = c·(k·R), so dividing by s before RoPE equals dividing after,
// at every position, and a rotation keeps the norm: ‖(kᵢ/s, kⱼ/s)·R‖ = ‖(kᵢ, kⱼ)‖/s ≤ 1/α. Different
// scales do not commute: diag(a, b)·R ≠ R·diag(a, b) unless a = b, so a pre-RoPE per-channel scale would
// leave, after RoPE, a position-dependent mix of the two factors that no fixed post-RoPE inverse on the
// query undoes. Pair sharing is what lets RPN be fused into W_k (and N⁻¹ into W_q) offline.
//
// Why CRS is post-RoPE and its inverse still folds into Q. RoPE mixes the distributions of the two
// channels of a pair, so a pair with an outlier channel spreads it over both channels after RoPE, and
// the per-token INT4 quantizer sees the post-RoPE values. CRS measures those (tᵢ from post-RoPE kᵢ) and
// applies per-channel factors after RoPE, where no rotation follows: K̃ = K_post·S⁻¹ and
// Q̃ = Q_post·S give Q̃·K̃ᵀ = Q_post·Kᵀ_post exactly (up to float rounding), because both operands are
// post-RoPE. The price is a small online cost (the paper's choice of 8 pairs keeps it negligible), and
// S must be applied to the post-RoPE query, not fused into W_q: fusing pre-RoPE is exact only where
// tᵢ = tⱼ (the test "CRS factors applied pre-RoPE break q·kᵀ" shows this).
//
// Our data is post-RoPE already. RPN's factor is the same whether computed pre- or post-RoPE (the pair
// norm is rotation invariant), and applying it "pre-RoPE" to post-RoPE data — un-rotate with
// apply_rope_inverse, divide, re-rotate with apply_rope — equals dividing the post-RoPE pair directly,
// because the factor is pair-shared and commutes with R. Both equivalences are tested.
#pragma once

#include <cstdint>
#include <vector>

namespace attnlab::fireq {

// The paper's calibration (App. E.1, Figure 10): α = 8, β = 8, 8 outlier pairs.
// Note for E4M3 per-token scales (token_int4.h): after smoothing with α = β = 8 every |k| ≤ 1/8, so a
// token's σ = max|k|/7 ≤ 1/56, just above E4M3's smallest normal 2⁻⁶ = 1/64; tokens whose max is below
// 7/64 get subnormal scales (steps of 2⁻⁹), which costs accuracy (see the INT4 test's printout).
struct SmoothingParams {
  int top_k = 8;       // outlier pairs handled by CRS; 0 ≤ top_k ≤ d/2
  double alpha = 8.0;  // RPN, Thm 3.1: post-RoPE pair norms ≤ 1/α
  double beta = 8.0;   // CRS: tᵢ = β·maxₙ|kᵢⁿ|
};

struct PairScales {
  std::vector<float> per_channel;  // (d): key channel c is divided by per_channel[c], the query multiplied
};

// The top_k outlier pairs of k (tokens, d), as pair indices i ∈ [0, d/2) (the pair is (i, i + d/2)),
// largest first. Choice (the paper does not say how outliers are ranked): by maxₙ‖(kᵢⁿ, kⱼⁿ)‖₂, the
// pair's largest L2 norm over tokens. It is rotation invariant, so the ranking is the same on pre- and
// post-RoPE data and is the quantity RPN would otherwise normalize. Ties: the lower index first.
std::vector<int64_t> select_outlier_pairs(const float* k, int64_t tokens, int64_t d, int top_k);

// Stage 1, RPN (Eq. 10): for every pair not in skip_pairs, sᵢ = sⱼ = α·maxₙ‖(kᵢⁿ, kⱼⁿ)‖₂ (in double,
// rounded once to float); skipped pairs (the outlier pairs, left to CRS) get 1. k is (tokens, d), pre-
// or post-RoPE (same factors, up to rounding). Choice: an all-zero pair gets 1 (nothing to normalize).
PairScales rpn_scales(const float* k, int64_t tokens, int64_t d, double alpha,
                      const std::vector<int64_t>& skip_pairs = {});

// Stage 2, CRS: for both channels c ∈ {i, i + d/2} of every listed pair, t_c = β·maxₙ|k_cⁿ| (each channel
// its own factor); every other channel 1. k_post_rope is (tokens, d). Choice: an all-zero channel gets 1.
PairScales crs_scales(const float* k_post_rope, int64_t tokens, int64_t d, const std::vector<int64_t>& pairs,
                      double beta);
// The same on the top_k pairs that select_outlier_pairs ranks on k_post_rope.
PairScales crs_scales(const float* k_post_rope, int64_t tokens, int64_t d, int top_k, double beta);

// Both stages on one post-RoPE key head k (tokens, d): outlier pairs chosen on k, RPN on the other pairs
// (computed from post-RoPE k: equal to the pre-RoPE factors, see above), CRS on the outlier pairs. The
// sets are disjoint, so `combined` = rpn ⊙ crs holds exactly one non-unit source per channel.
struct TwoStageScales {
  std::vector<int64_t> outlier_pairs;  // (top_k)
  PairScales rpn, crs, combined;       // each (d)
};
TwoStageScales two_stage_scales(const float* k_post_rope, int64_t tokens, int64_t d, const SmoothingParams& p);

// x (tokens, d) ← x / s channelwise (the key side) and x ← x · s (the query side: N⁻¹, S⁻¹ folded in).
void divide_channels(float* x, int64_t tokens, int64_t d, const PairScales& s);
void multiply_channels(float* x, int64_t tokens, int64_t d, const PairScales& s);

struct ChannelStats {
  std::vector<float> min, max;  // (d): per channel over tokens
  double max_over_mean_ratio;   // max_c absmax_c / mean_c absmax_c (1 when x is all zero)
};
// x is (tokens, d).
ChannelStats channel_stats(const float* x, int64_t tokens, int64_t d);

}  // namespace attnlab::fireq
