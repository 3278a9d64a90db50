// attnlab core: the attention backward references (notes §2.1 Eq. 5, §2.3 FlashBackward, App. D).
//
// Notation of the notes: z_X = ∂L/∂X; A = QKᵀ/√d (here ·scale), P = softmax(A), z_P = z_O Vᵀ,
// z_A = P ∘ (z_P − u) with u = rowsum(P ∘ z_P). In code: dO = z_O, dP = z_P, dS = z_A.
#include "core/backward.h"

#include "core/parallel.h"

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace attnlab {

namespace {

void require_shape(const char* what, const Shape4& got, const Shape4& want) {
  if (!(got == want))
    throw std::invalid_argument(std::string("attention backward: ") + what + " is " + got.str() + ", expected " +
                                want.str());
}

void check_operands(const Problem& p, const QKV& in, const Tensor& d_o) {
  require_shape("q", in.q.shape(), p.q_shape());
  require_shape("k", in.k.shape(), p.kv_shape());
  require_shape("v", in.v.shape(), p.kv_shape());
  require_shape("d_o", d_o.shape(), p.q_shape());
}

}  // namespace

GradientsF64 attention_backward_fp64(const Problem& p, const QKV& in, const Tensor& d_o) {
  check_operands(p, in, d_o);
  GradientsF64 g{TensorF64(p.q_shape()), TensorF64(p.kv_shape()), TensorF64(p.kv_shape())};
  const double scale = p.scale();
  const int64_t R = p.group();
  // One work item per (batch, KV head): the item owns dK, dV of its KV head and dQ of the R query heads
  // of its group, so the GQA sums over the group need no synchronization.
  parallel_for(p.batch * p.kv_heads, [&](int64_t bg) {
    const int64_t b = bg / p.kv_heads, kvh = bg % p.kv_heads;
    const RowMatrix<double> K = in.k.head(b, kvh).cast<double>();  // (Nkv, d)
    const RowMatrix<double> V = in.v.head(b, kvh).cast<double>();  // (Nkv, d)
    auto dK = g.dk.head(b, kvh);                                    // (Nkv, d), starts at zero
    auto dV = g.dv.head(b, kvh);
    for (int64_t h = kvh * R; h < (kvh + 1) * R; ++h) {
      const RowMatrix<double> Q = in.q.head(b, h).cast<double>();    // (Nq, d)
      const RowMatrix<double> dO = d_o.head(b, h).cast<double>();    // (Nq, d)
      // Eq. 4 forward: A = QKᵀ/√d, P = softmax(A) row-wise over the visible keys (masked entries 0).
      RowMatrix<double> P = (Q * K.transpose()) * scale;  // (Nq, Nkv)
      for (int64_t i = 0; i < p.q_len; ++i) {
        const int64_t visible = p.visible_keys(i);
        auto row = P.row(i);
        if (visible < p.kv_len) row.tail(p.kv_len - visible).setZero();
        if (visible == 0) continue;  // a row that sees no key has P = 0 and contributes nothing
        auto seen = row.head(visible);
        const double m = seen.maxCoeff();
        seen = (seen.array() - m).exp().matrix();
        seen /= seen.sum();
      }
      // Eq. 5: z_V += Pᵀ z_O.
      dV.noalias() += P.transpose() * dO;
      // z_P = z_O Vᵀ; z_A = P ∘ (z_P − (P ∘ z_P).sum(2)) — u straight from P, not from Lemma 2.1.
      const RowMatrix<double> dP = dO * V.transpose();           // (Nq, Nkv)
      const Eigen::VectorXd u = P.cwiseProduct(dP).rowwise().sum();  // (Nq)
      const RowMatrix<double> dS = P.cwiseProduct(dP.colwise() - u);
      // Eq. 5: z_Q = z_A K/√d, z_K += z_Aᵀ Q/√d.
      g.dq.head(b, h).noalias() = scale * dS * K;
      dK.noalias() += scale * dS.transpose() * Q;
    }
  });
  return g;
}

Gradients flash_backward(const Problem& p, const QKV& in, const Tensor& o, const Tensor& lse, const Tensor& d_o,
                         int64_t block_r, int64_t block_c) {
  check_operands(p, in, d_o);
  require_shape("o", o.shape(), p.q_shape());
  require_shape("lse", lse.shape(), {p.batch, p.q_heads, p.q_len, 1});
  if (block_r <= 0 || block_c <= 0)
    throw std::invalid_argument("flash_backward: block sizes must be positive, got B_r = " + std::to_string(block_r) +
                                ", B_c = " + std::to_string(block_c));

  Gradients g{Tensor(p.q_shape()), Tensor(p.kv_shape()), Tensor(p.kv_shape())};
  const int64_t Br = block_r, Bc = block_c, d = p.head_dim, R = p.group();
  const int64_t Tr = (p.q_len + Br - 1) / Br;   // T_r query row blocks (the notes' B batches of Γ rows)
  const int64_t Tc = (p.kv_len + Bc - 1) / Bc;  // T_c KV tiles (the notes' C chunks of Λ keys)
  const float scale = static_cast<float>(p.scale());

  // One work item per (batch, KV head), as on the GPU one CTA per KV tile column would own z_K,j, z_V,j:
  // the group's R query heads are walked inside, so dK, dV of the KV head sum over them without races,
  // and dQ of those heads is touched by this item only.
  parallel_for(p.batch * p.kv_heads, [&](int64_t bg) {
    const int64_t b = bg / p.kv_heads, kvh = bg % p.kv_heads;
    const auto K = in.k.head(b, kvh);  // (Nkv, d) in "HBM"
    const auto V = in.v.head(b, kvh);
    RowMatrix<float> S, dP, dKj, dVj;  // on-chip tiles: S/P (B_r, B_c), dP/dS (B_r, B_c), dKj/dVj (B_c, d)
    Eigen::VectorXf u;                 // (B_r)
    for (int64_t j = 0; j < Tc; ++j) {  // FlashBackward 2: for j = 1 … C
      const int64_t col0 = j * Bc, cols = std::min(Bc, p.kv_len - col0);
      const auto Kj = K.middleRows(col0, cols);  // FlashBackward 2(a): load K_j, V_j
      const auto Vj = V.middleRows(col0, cols);
      dKj.setZero(cols, d);                      // FlashBackward 2(a): z_K,j = 0, z_V,j = 0
      dVj.setZero(cols, d);
      // GQA: the query heads of the group are further row blocks attending to the same K_j, V_j.
      for (int64_t h = kvh * R; h < (kvh + 1) * R; ++h) {
        const auto Q = in.q.head(b, h), O = o.head(b, h), dO = d_o.head(b, h);  // (Nq, d)
        auto dQ = g.dq.head(b, h);
        const float* xi = lse.data() + lse.offset(b, h);  // ξ = c + log π (App. D), (Nq)
        for (int64_t i = 0; i < Tr; ++i) {  // FlashBackward 2(b): for i = 1 … B
          const int64_t row0 = i * Br, rows = std::min(Br, p.q_len - row0);
          // Causal (FA2): the last row of the block sees the most keys; if even it sees none of tile j,
          // the whole tile (i, j) is masked and skipped.
          if (p.visible_keys(row0 + rows - 1) <= col0) continue;
          // FlashBackward 2(b)i: load Q_i, O_i, z_O,i, z_Q,i (and ξ_i).
          const auto Qi = Q.middleRows(row0, rows);
          const auto Oi = O.middleRows(row0, rows);
          const auto dOi = dO.middleRows(row0, rows);
          auto dQi = dQ.middleRows(row0, rows);
          // FlashBackward 2(b)ii: A_ij = Q_i K_jᵀ/√d, then App. D: P_ij = exp(A_ij − ξ_i), masked entries 0.
          S.noalias() = Qi * Kj.transpose();
          S *= scale;
          for (int64_t r = 0; r < rows; ++r) {
            const int64_t vis = std::clamp<int64_t>(p.visible_keys(row0 + r) - col0, 0, cols);
            auto row = S.row(r);
            // A row with ξ = −∞ saw no key in the forward: its P is 0 (guards exp(+∞) on bad inputs).
            if (vis == 0 || std::isinf(xi[row0 + r])) {
              row.setZero();
              continue;
            }
            if (vis < cols) row.tail(cols - vis).setZero();
            row.head(vis) = (row.head(vis).array() - xi[row0 + r]).exp().matrix();
          }
          // FlashBackward 2(b)ii: z_V,j += P_ijᵀ z_O,i.
          dVj.noalias() += S.transpose() * dOi;
          // FlashBackward 2(b)ii: z_P,ij = z_O,i V_jᵀ.
          dP.noalias() = dOi * Vj.transpose();
          // FlashBackward 2(b)ii, Lemma 2.1: u_i = (O_i ∘ z_O,i).sum(2), no row of P needed.
          // (FA2 computes it once per row in a pre-pass; the notes recompute it per tile, as here.)
          u = Oi.cwiseProduct(dOi).rowwise().sum();
          // FlashBackward 2(b)ii: z_A,ij = P_ij ∘ (z_P,ij − u_i), in place of z_P,ij.
          dP = S.cwiseProduct(dP.colwise() - u);
          // FlashBackward 2(b)ii: z_Q,i += z_A,ij K_j/√d; then 2(b)iii: write z_Q,i (it lives in dQ).
          dQi.noalias() += scale * dP * Kj;
          // FlashBackward 2(b)ii: z_K,j += z_A,ijᵀ Q_i/√d (the notes print Q_j; the chain rule gives Q_i).
          dKj.noalias() += scale * dP.transpose() * Qi;
        }
      }
      // FlashBackward 2(c): write z_K,j, z_V,j.
      g.dk.head(b, kvh).middleRows(col0, cols) = dKj;
      g.dv.head(b, kvh).middleRows(col0, cols) = dVj;
    }
  });
  return g;
}

}  // namespace attnlab
