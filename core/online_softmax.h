// attnlab core: the online softmax of one query row block (notes §1.1 and App. D, FlashAttention-2).
//
// State per row r of the block: running max m_r, running sum ℓ_r, and the unnormalized output G_r
// (App. D: G⁽ʲ⁾ = u⁽ʲ⁾ ∘ G⁽ʲ⁻¹⁾ + P̃ⱼVⱼ, O = G / ℓ at the end). One step consumes the scores of one
// KV tile. The exponential is a parameter so that variants with an approximate exp (SAS) reuse the
// same state machine; here it is exp in FP32.
#pragma once

#include "core/tensor.h"

#include <Eigen/Core>

#include <cmath>
#include <cstdint>
#include <limits>

namespace attnlab {

struct OnlineSoftmax {
  Eigen::VectorXf m;   // (B_r) running max, −∞ before any visible key
  Eigen::VectorXf l;   // (B_r) running sum ℓ
  RowMatrix<float> G;  // (B_r, d) unnormalized output accumulator

  void reset(int64_t rows, int64_t d) {
    m.setConstant(rows, -std::numeric_limits<float>::infinity());
    l.setZero(rows);
    G.setZero(rows, d);
  }

  // S (rows, cols) holds the scaled scores of tile j; visible(r) gives how many leading columns of
  // row r are unmasked. On return S holds P̃ = exp(S − m_new) (masked entries exactly 0), ℓ and m are
  // updated, and G is rescaled by exp(m_old − m_new) — the caller then adds P̃ⱼVⱼ to G.
  // Alg. (App. D): m_new = max(m, rowmax S); ℓ = e^{m − m_new} ℓ + rowsum P̃; G = e^{m − m_new} G.
  template <class Visible, class Exp>
  void step(RowMatrix<float>& S, Visible visible, Exp exp_fn) {
    for (int64_t r = 0; r < S.rows(); ++r) {
      const int64_t vis = visible(r);
      auto row = S.row(r);
      if (vis < S.cols()) row.tail(S.cols() - vis).setZero();
      if (vis == 0) continue;  // this row sees nothing in this tile: state unchanged
      auto seen = row.head(vis);
      const float m_new = std::max(m[r], seen.maxCoeff());
      const float alpha = std::isinf(m[r]) ? 0.0f : exp_fn(m[r] - m_new);
      exp_fn.apply(seen, m_new);
      l[r] = alpha * l[r] + seen.sum();
      G.row(r) *= alpha;
      m[r] = m_new;
    }
  }

  // O_r = G_r / ℓ_r, zero for rows that saw no key; L_r = m_r + log ℓ_r (FA2's logsumexp ξ). A NaN or
  // infinite ℓ (scores that overflowed the variant's formats; ℓ ≤ N otherwise) gives a NaN row, which the
  // runner reports, instead of a zero row that would pass for a row without keys.
  template <class OutRows>
  void finish(OutRows&& O, float* lse) const {
    for (int64_t r = 0; r < G.rows(); ++r) {
      if (!std::isfinite(l[r])) {
        O.row(r).setConstant(std::numeric_limits<float>::quiet_NaN());
        if (lse) lse[r] = std::numeric_limits<float>::quiet_NaN();
      } else if (l[r] > 0) {
        O.row(r) = G.row(r) / l[r];
        if (lse) lse[r] = m[r] + std::log(l[r]);
      } else {
        O.row(r).setZero();
        if (lse) lse[r] = -std::numeric_limits<float>::infinity();
      }
    }
  }
};

// exp in FP32, vectorized by Eigen (≈1 ulp), the exponential of FlashAttention-2.
struct ExpF32 {
  float operator()(float x) const { return std::exp(x); }
  template <class Row>
  void apply(Row&& seen, float m_new) const {
    seen = (seen.array() - m_new).exp().matrix();
  }
};

}  // namespace attnlab
