// attnlab core — reference of `naive`: standard attention in FP32 (notes §2.1, Eq. 4), materializing
// the score matrix S and the probabilities P as a kernel without fusion would:
//   1. read Q, K; write S = QKᵀ/√d          (N_q × N_kv FP32 to HBM)
//   2. read S; write P = softmax(S)          (row max subtracted, exp and sum in FP32)
//   3. read P, V; write O = PV
// The HBM probe counts exactly these transfers, O(N² + Nd) (notes §2.1).
#include "core/variants/variants.h"

#include "core/parallel.h"

#include <cmath>
#include <limits>

namespace attnlab::variants {

namespace {

constexpr double kF32 = 4.0;  // bytes per element; every tensor of this variant is FP32

ReferenceOutput run(const Problem& p, const QKV& in, const ParamValues&, const ProbeRequest&) {
  ReferenceOutput out;
  out.o = Tensor(p.q_shape());
  const float scale = static_cast<float>(p.scale());
  parallel_for(p.batch * p.q_heads, [&](int64_t bh) {
    const int64_t b = bh / p.q_heads, h = bh % p.q_heads, kvh = p.kv_head_of(h);
    const auto Q = in.q.head(b, h);
    const auto K = in.k.head(b, kvh);
    const auto V = in.v.head(b, kvh);
    // Step 1: S = QKᵀ/√d, the whole (N_q, N_kv) matrix.
    RowMatrix<float> S = (Q * K.transpose()) * scale;
    // Step 2: P = softmax(S) per row over the visible keys; masked entries are exactly 0.
    for (int64_t i = 0; i < p.q_len; ++i) {
      const int64_t visible = p.visible_keys(i);
      auto row = S.row(i);
      if (visible < p.kv_len) row.tail(p.kv_len - visible).setZero();
      if (visible == 0) continue;
      auto seen = row.head(visible).array();
      const float m = seen.maxCoeff();
      seen = (seen - m).exp();
      seen /= seen.sum();
    }
    // Step 3: O = PV.
    out.o.head(b, h) = S * V;
  });

  const double heads = double(p.batch * p.q_heads);
  const double q = heads * p.q_len * p.head_dim * kF32;
  const double kv = heads * p.kv_len * p.head_dim * kF32;  // each query head reads its K and V
  const double s = heads * p.q_len * p.kv_len * kF32;       // S written, then read
  out.probes["hbm_bytes"] =
      labelled({"q", "k", "v", "o", "s", "p"}, {q, kv, kv, q, 2 * s, 2 * s}, "bytes",
               "HBM traffic per tensor of unfused attention: S and P are each written once and read once");
  out.kv_cache_bytes = static_cast<int64_t>(2 * p.kv_shape().count() * kF32);  // K and V
  return out;
}

// Storage: FP32 everywhere — Q, K, V read, S and P materialized, O written; the cache is K and V in FP32.
Storage storage(const Problem& p, const ParamValues&) {
  Storage s;
  s.q = s.k = s.v = s.p = s.o = kFp32;
  s.q_in = unscaled(kFp32);
  s.cache.channels = p.head_dim;
  s.cache.classes = {{kOtherHeads, unscaled(kFp32), unscaled(kFp32)}};
  return s;
}

}  // namespace

VariantSpec naive() {
  VariantSpec v;
  v.id = "naive";
  v.title = "standard attention, FP32, S and P materialized";
  v.source = "Efficient Attention notes §2.1, Eq. 4";
  v.phases = {Phase::prefill, Phase::decode};
  v.storage = storage;
  v.reference = run;
  v.working_memory = naive_working_memory;
  return v;
}

}  // namespace attnlab::variants
