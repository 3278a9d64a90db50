// attnlab kernels: the merge of split-KV decode chains (kivi and fireq decode), flash2's decode merge: each
// chain c left its normalized O_c (d FP32 values per output row) and its logsumexp L_c in a workspace —
// chains × rows × d values, then chains × rows logsumexps — and one output row is
// O = Σ_c e^{L_c − L}·O_c, L = log Σ_c e^{L_c}, weighted from the largest L_c (a row no chain saw: O = 0, L = −∞).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstddef>

namespace attnlab::kernels {

__device__ __forceinline__ void store_merged(__half* p, float x) { *p = __float2half_rn(x); }
__device__ __forceinline__ void store_merged(__nv_bfloat16* p, float x) { *p = __float2bfloat16_rn(x); }

// Row `row` of `rows` (blockDim.x = d threads, thread = channel), written to o (FP16 or BF16) and lse. The
// chains are read 8 at a time, every load of a batch in flight together (before, each chain's loads waited
// on the previous chain's maximum: a memory latency per chain, 12 of them at fireq's GQA decode), the weights
// taken from the running largest L_c and the sums rescaled when a later batch raises it — for ≤ 8 chains
// exactly the one-pass sums from the largest.
template <class Out>
__device__ __forceinline__ void merge_chains_row(const float* workspace, int chains, size_t rows, int d, size_t row,
                                                 Out* o, float* lse) {
  constexpr int kBatch = 8;
  const float* lse_c = workspace + size_t(chains) * rows * d;
  float top = -INFINITY, total = 0.f, acc = 0.f;
  for (int c0 = 0; c0 < chains; c0 += kBatch) {
    float L[kBatch], x[kBatch];
#pragma unroll
    for (int i = 0; i < kBatch; ++i) {
      const int c = c0 + i;
      L[i] = c < chains ? lse_c[c * rows + row] : -INFINITY;
      x[i] = c < chains ? workspace[(c * rows + row) * d + threadIdx.x] : 0.f;
    }
    float next = top;
#pragma unroll
    for (int i = 0; i < kBatch; ++i) next = fmaxf(next, L[i]);
    if (next == -INFINITY) continue;  // no chain so far saw a key
    if (next != top) {
      const float rescale = top == -INFINITY ? 0.f : expf(top - next);
      total *= rescale, acc *= rescale;
    }
#pragma unroll
    for (int i = 0; i < kBatch; ++i) {
      const float w = L[i] == -INFINITY ? 0.f : expf(L[i] - next);
      total += w;
      acc += w * x[i];
    }
    top = next;
  }
  store_merged(o + row * d + threadIdx.x, total > 0.f ? acc / total : 0.f);
  if (threadIdx.x == 0) lse[row] = total > 0.f ? top + logf(total) : -INFINITY;
}

}  // namespace attnlab::kernels
