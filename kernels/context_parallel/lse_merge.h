// attnlab kernels: the merge of partial attention results by their logsumexp — a ring step's block into its query
// chunk's running result, a decode rank's part into rank 0's. The split-KV decode merge (chain_merge.cuh) over two
// operands: for a row with partials (O_a, L_a) and (O_b, L_b), m = max(L_a, L_b),
//   O = (e^{L_a − m}·O_a + e^{L_b − m}·O_b) / (e^{L_a − m} + e^{L_b − m}),   L = m + log(e^{L_a − m} + e^{L_b − m}),
// a partial that saw no key (L = −∞) weighing 0. The running O stays in FP32; each block's O arrives in FP16 as the
// kernels store it, so the ring's output differs from the one-GPU kernel's by those roundings (the tests bound it).
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstddef>

namespace attnlab::kernels {

// rows × d running values to O = 0, L = −∞.
cudaError_t lse_merge_clear(float* o_acc, float* l_acc, size_t rows, int d, cudaStream_t stream);
// (o_acc, l_acc) ← (o_acc, l_acc) merged with (o, l): rows × d FP16 values and rows logsumexps.
cudaError_t lse_merge_add(float* o_acc, float* l_acc, const __half* o, const float* l, size_t rows, int d,
                          cudaStream_t stream);
// The running result rounded to FP16 into o, and its logsumexp into l.
cudaError_t lse_merge_store(const float* o_acc, const float* l_acc, __half* o, float* l, size_t rows, int d,
                            cudaStream_t stream);

}  // namespace attnlab::kernels
