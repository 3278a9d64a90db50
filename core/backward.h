// attnlab core: the attention backward pass — readable references, not a fast path.
//
// Given the upstream gradient dO = ∂L/∂O (the notes' z_O), both functions return dQ, dK, dV:
//   - attention_backward_fp64: the standard backward (notes §2.1, Eq. 5) in double, materializing the
//     whole P and z_P of each head. It is the ground truth for gradients, as attention_fp64 is for O.
//   - flash_backward: FlashAttention's backward (notes §2.3 "FlashBackward") in FP32 with Lemma 2.1
//     (u = rowsum(P∘z_P) = rowsum(O∘z_O)) and App. D's logsumexp ξ (P_ij = exp(Q_i K_jᵀ/√d − ξ_i)),
//     tiled B_r × B_c; P is never held beyond one tile.
// Causal masking (bottom-right aligned) and GQA follow core/problem.h. Under GQA the gradient of a KV
// head sums the contributions of every query head of its group.
#pragma once

#include "core/problem.h"
#include "core/tensor.h"

#include <cstdint>

namespace attnlab {

struct Gradients {
  Tensor dq;  // (B, Hq, Nq, d)
  Tensor dk;  // (B, Hkv, Nkv, d)
  Tensor dv;  // (B, Hkv, Nkv, d)
};

struct GradientsF64 {
  TensorF64 dq;  // (B, Hq, Nq, d)
  TensorF64 dk;  // (B, Hkv, Nkv, d)
  TensorF64 dv;  // (B, Hkv, Nkv, d)
};

// Standard backward (Eq. 5) in FP64. in.q is (B, Hq, Nq, d), in.k and in.v are (B, Hkv, Nkv, d);
// d_o is (B, Hq, Nq, d). The forward is recomputed inside (A, P and O in double).
GradientsF64 attention_backward_fp64(const Problem& p, const QKV& in, const Tensor& d_o);

// FlashBackward in FP32. o is (B, Hq, Nq, d) and lse (B, Hq, Nq, 1) come from a forward pass
// (lse = ξ = m + log ℓ, −∞ for rows that see no key); d_o is (B, Hq, Nq, d). block_r = B_r (the notes'
// Γ, query rows per block), block_c = B_c (Λ, keys per KV tile); any N, multiple or not.
Gradients flash_backward(const Problem& p, const QKV& in, const Tensor& o, const Tensor& lse, const Tensor& d_o,
                         int64_t block_r, int64_t block_c);

}  // namespace attnlab
