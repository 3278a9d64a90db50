// attnlab kernels: the merge of partial attention results by their logsumexp — a ring step's block into its query
// chunk's running result, a decode rank's part into rank 0's. The split-KV decode merge (chain_merge.cuh) over two
// operands: for a row with partials (O_a, L_a) and (O_b, L_b), m = max(L_a, L_b),
//   O = (e^{L_a − m}·O_a + e^{L_b − m}·O_b) / (e^{L_a − m} + e^{L_b − m}),   L = m + log(e^{L_a − m} + e^{L_b − m}),
// a partial that saw no key (L = −∞) weighing 0. The running O stays in FP32; each block's O arrives in FP16 (or
// BF16: fireq's kernels store O in BF16, FireQ §3.2.2) as the kernels store it, so the ring's output differs from
// the one-GPU kernel's by those roundings (the tests bound it).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

namespace attnlab::kernels {

// The 16-bit type a kernel stores O in: what the merge reads and what the ring's result is stored in.
enum class OutputElement { fp16, bf16 };

// rows × d running values to O = 0, L = −∞.
cudaError_t lse_merge_clear(float* o_acc, float* l_acc, size_t rows, int d, cudaStream_t stream);
// (o_acc, l_acc) ← (o_acc, l_acc) merged with (o, l): rows × d values of type `element` and rows logsumexps.
cudaError_t lse_merge_add(float* o_acc, float* l_acc, const void* o, OutputElement element, const float* l, size_t rows,
                          int d, cudaStream_t stream);
// The running result rounded to `element` (round to nearest even) into o, and its logsumexp into l.
cudaError_t lse_merge_store(const float* o_acc, const float* l_acc, void* o, OutputElement element, float* l,
                            size_t rows, int d, cudaStream_t stream);

}  // namespace attnlab::kernels
