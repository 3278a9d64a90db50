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

// A ring's query chunk takes its blocks' partials by their role (core/context_parallel.h's MergeRole): the only block's
// kernel writes the result itself; the first becomes the running result (lse_merge_first), a middle one merges into it
// (lse_merge_add), the last merges and stores the result in one pass (lse_merge_last) — one launch each, and the
// numbers of a clear, pairwise merges and a store (the same operations in the same order) on every row some block
// sees; a row no block sees is O = 0, L = −∞ as before, except under the only block, whose kernel's output it is
// (the ring's prefill attends a sequence to itself: every row sees its own key). A chunk no block sees is cleared
// and stored.
// rows × d running values to O = 0, L = −∞.
cudaError_t lse_merge_clear(float* o_acc, float* l_acc, size_t rows, int d, cudaStream_t stream);
// (o_acc, l_acc) ← (o, l): rows × d values of type `element` and rows logsumexps.
cudaError_t lse_merge_first(float* o_acc, float* l_acc, const void* o, OutputElement element, const float* l,
                            size_t rows, int d, cudaStream_t stream);
// (o_acc, l_acc) ← (o_acc, l_acc) merged with (o, l).
cudaError_t lse_merge_add(float* o_acc, float* l_acc, const void* o, OutputElement element, const float* l, size_t rows,
                          int d, cudaStream_t stream);
// (out, l_out) ← (o_acc, l_acc) merged with (o, l), rounded to `element` (round to nearest even); the running result is
// left as it was.
cudaError_t lse_merge_last(float* o_acc, float* l_acc, const void* o, OutputElement element, const float* l, void* out,
                           float* l_out, size_t rows, int d, cudaStream_t stream);
// The running result rounded to `element` (round to nearest even) into o, and its logsumexp into l.
cudaError_t lse_merge_store(const float* o_acc, const float* l_acc, void* o, OutputElement element, float* l,
                            size_t rows, int d, cudaStream_t stream);

// A decode's partials, gathered on rank 0: up to kMaxMergeParts of them (the GPUs of a host), each rows × d values of
// the output element and rows logsumexps, in rank order.
inline constexpr int kMaxMergeParts = 8;
struct MergeParts {
  const void* o[kMaxMergeParts] = {};
  const float* l[kMaxMergeParts] = {};
  int count = 0;
};
// Every part merged at once, in one launch, into o (`element`) and l: per row M = max_r L_r, w_r = e^{L_r − M},
//   O = (Σ_r w_r·O_r) / Σ_r w_r,   L = M + log Σ_r w_r   (sums in rank order; a part with L = −∞ weighs 0)
// — the pairwise merge above over all parts, with one division instead of one per part, and none of its running
// result's FP32 reads and writes or its launches per part (a decode merges rows of one query each: its cost was the
// 2 + 2P launches). Fails with cudaErrorInvalidValue for no part or more than kMaxMergeParts.
cudaError_t lse_merge_parts(const MergeParts& parts, void* o, OutputElement element, float* l, size_t rows, int d,
                            cudaStream_t stream);

}  // namespace attnlab::kernels
