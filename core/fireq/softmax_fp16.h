// attnlab core — FireQ §3.2.2's FP16 softmax (the `fireq` variant's softmax_precision = fp16): "we reduce the
// precision of the accumulated S_ij values and the row-wise maximum values m_i from FP32 to FP16, utilizing FP16
// exponential instructions ... We retain FP32 precision only for critical intermediate accumulations (s_i, l_i,
// and O_i)". Alg. 1 l. 12 (S = mask(τS)), l. 13 (m, s = exp(m_old − m), ℓ = s·ℓ) and l. 15 (P = exp(S − m),
// ℓ += rowsum P) on one KV tile, in those formats.
//
// Choices (the paper leaves them open):
//   - S is accumulated in FP32 and rounded to FP16 after its scale. Stage 1's "results accumulated in FP16"
//     would hold the unscaled E4M3 products, and |q̂·k̂| reaches 448²·d (2.6·10⁷ at d = 128; ~2.5·10⁵ for
//     Gaussian rows) against FP16's 65 504: aligned queries and keys would overflow. Scaled, S is a logit.
//   - Log₂ units. FP16's exponential instruction is ex2 (PTX ex2.approx.f16x2), so S enters FP16 already
//     multiplied by log₂e (folded into the FP32 scale): S₂ = fp16(S·log₂e), m₂ = max S₂, P̃ = 2^{S₂ − m₂}.
//     S₂'s rounding moves a score by ≤ 2⁻¹¹·|S₂| in log₂ units, P̃ by ≤ ln 2·2⁻¹¹·|S₂| relative: 0.5% at
//     |S₂| = 16, under half of E4M3's 2⁻⁴ step of P̂ while |S₂| < 45.
//   - The FP32 factors in an order a kernel can follow at one multiply per score: x = fl(S·fl(g_c·c_r)) with
//     K's per-column factor g_c = fl(k_c·τ) (β_K or σ_K of key c) and the row's c_r = fl(β_r·log₂e) — where K's
//     scale is one per KV tile, fl(g·c_r) is one product per row and tile; with no per-column factor,
//     x = fl(S·c_r) with c_r = fl(fl(β_r·τ)·log₂e). Then S₂ = fp16(x), one RNE rounding (cvt.rn.f16x2.f32).
//   - S₂ − m₂ is rounded to FP16 (one FP16 subtraction), P̃ = fp16(2^{S₂ − m₂}) correctly rounded (a kernel's
//     ex2.approx.f16x2 errs by its own bound, which its test allows). P̃ keeps FP16's subnormals
//     (2⁻²⁴ … 2⁻¹⁴): they reach ℓ; P̂ = E4M3(P̃) flushes them (below E4M3's 2⁻¹⁰).
//   - s = 2^{m₂_old − m₂} in FP32 from the FP32 difference of the two FP16 maxima; ℓ = s·ℓ + Σ P̃ in FP32
//     (FP16 values summed in FP32), G = s·G — the paper's FP32 s, ℓ and O.
//   - A row whose visible scores are all −∞ (masked, or below −65 504 in log₂ units) keeps m₂ = −∞ and gets
//     P̃ = 0 (a kernel subtracts 0 there, not −∞); a score that overflowed to +∞ makes m₂ = +∞ and P̃ NaN, the
//     NaN row the runner reports.
#pragma once

#include "core/online_softmax.h"
#include "core/tensor.h"

#include <cstdint>

namespace attnlab::fireq {

inline constexpr float kLog2e = 1.4426950408889634f;  // log₂e rounded to FP32, the factor a kernel folds in
inline constexpr float kLn2 = 0.6931471805599453f;    // ln 2 rounded to FP32

// The row factor c_r: fl(β·log₂e) when K's scale is applied per column (g_c), fl(fl(β·τ)·log₂e) when not.
float fp16_row_factor(float beta, float tau, bool per_column);

// One tile's scores S (rows, cols), FP32, in place to S₂ = fp16(fl(S·fl(g_c·c_r))) (g holds fl(k_c·τ) for
// each column) or fp16(fl(S·c_r)) (g == nullptr), as floats holding FP16 values.
void scores_to_fp16_log2(RowMatrix<float>& s, const float* g, const float* c);

// One KV tile's online-softmax step in FireQ's formats (head comment). state.m holds m₂ (log₂ units, FP16
// values), ℓ and G FP32; visible[r] is how many leading columns of row r are unmasked. On return s holds P̃
// (FP16 values; masked entries exactly 0), m₂ and ℓ are updated and G is rescaled by s = 2^{m₂_old − m₂} —
// the caller then adds P̂·V to G. A row with visible[r] = 0 leaves the state unchanged.
void softmax_step_fp16(OnlineSoftmax& state, RowMatrix<float>& s, const int64_t* visible);

// The state's maxima back in natural units, m = fl(m₂·ln 2), for the logsumexp L = m + log ℓ and the probes.
void maxima_to_natural(OnlineSoftmax& state);

}  // namespace attnlab::fireq
