#include "core/ground_truth.h"

#include "core/parallel.h"

#include <cmath>
#include <limits>

namespace attnlab {

TensorF64 attention_fp64(const Problem& p, const QKV& in) { return attention_fp64(p, in, nullptr); }

TensorF64 attention_fp64(const Problem& p, const QKV& in, TensorF64* lse) {
  TensorF64 out(p.q_shape());
  if (lse) *lse = TensorF64({p.batch, p.q_heads, p.q_len, 1});
  const double scale = p.scale();
  parallel_for(p.batch * p.q_heads, [&](int64_t bh) {
    const int64_t b = bh / p.q_heads, h = bh % p.q_heads, kvh = p.kv_head_of(h);
    const RowMatrix<double> Q = in.q.head(b, h).cast<double>();
    const RowMatrix<double> K = in.k.head(b, kvh).cast<double>();
    const RowMatrix<double> V = in.v.head(b, kvh).cast<double>();
    // Eq. 4: A = QKᵀ/√d, P = softmax(A) row-wise (stable: subtract the row max), O = PV.
    RowMatrix<double> A = (Q * K.transpose()) * scale;
    auto O = out.head(b, h);
    for (int64_t i = 0; i < p.q_len; ++i) {
      const int64_t visible = p.visible_keys(i);
      if (visible == 0) {
        A.row(i).setZero();
        if (lse) lse->at(b, h, i, 0) = -std::numeric_limits<double>::infinity();
        continue;
      }
      const double m = A.row(i).head(visible).maxCoeff();
      double l = 0;
      for (int64_t j = 0; j < visible; ++j) l += (A(i, j) = std::exp(A(i, j) - m));
      A.row(i).head(visible) /= l;
      A.row(i).tail(p.kv_len - visible).setZero();
      if (lse) lse->at(b, h, i, 0) = m + std::log(l);
    }
    O = A * V;
  });
  return out;
}

}  // namespace attnlab
