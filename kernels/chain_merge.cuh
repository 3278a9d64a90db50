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

// Row `row` of `rows` (blockDim.x = d threads, thread = channel), written to o (FP16 or BF16) and lse.
template <class Out>
__device__ __forceinline__ void merge_chains_row(const float* workspace, int chains, size_t rows, int d, size_t row,
                                                 Out* o, float* lse) {
  const float* lse_c = workspace + size_t(chains) * rows * d;
  float top = -INFINITY;
  for (int c = 0; c < chains; ++c) top = fmaxf(top, lse_c[c * rows + row]);
  float total = 0.f, acc = 0.f;
  for (int c = 0; c < chains; ++c) {
    const float w = top == -INFINITY ? 0.f : expf(lse_c[c * rows + row] - top);
    total += w;
    acc += w * workspace[(c * rows + row) * d + threadIdx.x];
  }
  store_merged(o + row * d + threadIdx.x, total > 0.f ? acc / total : 0.f);
  if (threadIdx.x == 0) lse[row] = total > 0.f ? top + logf(total) : -INFINITY;
}

}  // namespace attnlab::kernels
