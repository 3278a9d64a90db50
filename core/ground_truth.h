// attnlab core: the FP64 ground truth every error is measured against.
//
// Standard attention (notes §2.1, Eq. 4) of the FP32 inputs as given — no storage rounding — with the
// scores, the softmax and both products in double. Causal masking and GQA follow core/problem.h.
#pragma once

#include "core/problem.h"
#include "core/tensor.h"

namespace attnlab {

// q is (B, Hq, Nq, d); k and v are (B, Hkv, Nkv, d); returns O (B, Hq, Nq, d). Heads run in parallel.
TensorF64 attention_fp64(const Problem& p, const QKV& in);

// Optional outputs of the FP64 forward: the logsumexp L = m + log ℓ per row, (B, Hq, Nq, 1).
TensorF64 attention_fp64(const Problem& p, const QKV& in, TensorF64* lse);

}  // namespace attnlab
