// attnlab core: context parallelism — which GPU computes which attention block at which ring step.
//
// Ring attention (Liu et al., 2023) splits one problem's sequence over the P GPUs of a host: GPU r holds a
// shard of the queries and a shard of K/V; over P steps the K/V shards travel around the ring (GPU r sends
// what it holds to r + 1 and receives from r − 1) while every GPU attends its queries to the shard in hand,
// and the partial results (O, logsumexp) merge by log-sum-exp. With a causal mask a contiguous split is
// unbalanced: the last GPU's queries see every key, the first's almost none. Striped / zig-zag ring attention
// (Brandon et al., 2023; zig-zag as in ring-flash-attention) cuts the sequence into 2P chunks and gives GPU r
// chunks r and 2P − 1 − r, so that every GPU holds one early and one late chunk.
//
// These are pure functions: the kernels' ring, the cost model (sim/) and the views read one RingPlan, so they
// cannot disagree about who computes what. The choices:
//   - alignment: every chunk boundary is a multiple of `align` (a variant's quantization block, whose scale
//     is shared by its tokens, must not straddle two GPUs); the last chunk ends at the length;
//   - chunk rule: boundary i of a split into n parts is round-down-to-align(i·len/n), as even as the
//     alignment allows; queries and keys are split the same way (2P chunks each for zigzag, P contiguous);
//   - every (own query chunk, held K/V chunk) pair is listed at every step, masked blocks included with
//     0 pairs (the cost model and a ring kernel skip them);
//   - the causal mask is bottom-right aligned as in core/problem.h: query row i sees keys
//     j < i + 1 + offset, offset = Nkv − Nq.
#pragma once

#include "core/problem.h"  // kMaxGpus: the GPUs of one host, which the ring runs over

#include <cstdint>
#include <vector>

namespace attnlab::cp {

// The 128-token alignment of every shard boundary, for the kernels' ring and the cost model alike: a multiple of every
// cache block and quantization group the variants keep (TurboAttention's 64-token blocks, KIVI's groups of 32 to 128,
// the kernels' 64- and 128-key tiles), so no block straddles two GPUs and each shard is stored exactly as the one-GPU
// cache stores those tokens.
inline constexpr int64_t kShardAlign = 128;

// The merge of partial results (kernels/context_parallel/lse_merge.h), in HBM bytes per query row of d values — one
// account for the kernels' ring and the cost model. A partial is what a block's kernel leaves and what a decode rank
// sends to rank 0: O in FP16 and its logsumexp in FP32. The running result is O and L in FP32. Each block's partial
// joins its query chunk's result by its place among the chunk's visible blocks (MergeRole, below): the only one is the
// result (its kernel writes the chunk's output: no merge); the first of several becomes the running result (read the
// partial, write the running result); a middle one merges into it (read the partial, read and write the running
// result); the last merges and stores the output at once (read both, write O in FP16 and L). One launch each. A chunk
// no block sees is cleared and stored: with q_len = kv_len only an empty one (0 rows: N 300 on 3 GPUs leaves some).
inline constexpr int64_t partial_bytes_per_row(int64_t d) { return 2 * d + 4; }
inline constexpr int64_t running_bytes_per_row(int64_t d) { return 4 * d + 4; }
inline constexpr int64_t merge_first_bytes_per_row(int64_t d) {
  return partial_bytes_per_row(d) + running_bytes_per_row(d);
}
inline constexpr int64_t merge_add_bytes_per_row(int64_t d) {
  return partial_bytes_per_row(d) + 2 * running_bytes_per_row(d);
}
inline constexpr int64_t merge_last_bytes_per_row(int64_t d) {
  return running_bytes_per_row(d) + 2 * partial_bytes_per_row(d);
}
inline constexpr int64_t merge_clear_bytes_per_row(int64_t d) { return running_bytes_per_row(d); }
inline constexpr int64_t merge_store_bytes_per_row(int64_t d) {
  return running_bytes_per_row(d) + partial_bytes_per_row(d);
}
// A decode's merge on GPU 0 (lse_merge_parts): every part's partial read once, the result written in the partial's
// format (O in FP16 or BF16, L in FP32); one launch.
inline constexpr int64_t merge_parts_bytes_per_row(int64_t d, int64_t parts) {
  return (parts + 1) * partial_bytes_per_row(d);
}

// How the sequence is cut into the GPUs' shards.
enum class Balance {
  contiguous,  // P chunks, GPU r gets chunk r (balanced without a mask)
  zigzag,      // 2P chunks, GPU r gets chunks r and 2P − 1 − r (balanced with a causal mask)
};
const char* to_string(Balance b);
// zigzag for causal attention, contiguous otherwise.
Balance default_balance(bool causal);
// The split `gpus` GPUs get when `b` is asked for: one GPU holds everything as one chunk, whatever the balance.
Balance balance_on(int gpus, Balance b);

// A half-open range of token positions [begin, end).
struct Span {
  int64_t begin = 0, end = 0;
  int64_t size() const { return end - begin; }
  bool operator==(const Span&) const = default;
};

// `parts` consecutive spans covering [0, n): boundary i = round-down-to-align(i·n/parts), the last span ends
// at n. Boundaries are multiples of `align` (≥ 1) so that a quantization block never straddles two GPUs.
// Spans may be empty when n is small against parts·align (n = 7, 4 parts, align 16: three empty spans and
// [0, 7) last); an empty span holds no work.
std::vector<Span> split(int64_t n, int parts, int64_t align);

// One GPU's chunks, in increasing order of position: 1 for contiguous (and for any balance on one GPU), 2 for zigzag.
struct Shards {
  std::vector<Span> q;   // query rows of [0, q_len)
  std::vector<Span> kv;  // keys / values of [0, kv_len)
};

// The shards of every GPU, [gpu]. Queries and keys are split the same way, each over its own length.
std::vector<Shards> shard(int64_t q_len, int64_t kv_len, int gpus, Balance b, int64_t align);

// The (row, key) pairs of the block q × kv that the mask keeps, in closed form (rows can be 1M):
// every pair without a mask; with one, row i sees keys j < i + 1 + offset, offset = Nkv − Nq.
int64_t visible_pairs(Span q, Span kv, int64_t offset, bool causal);

enum class BlockKind {
  full,     // every pair visible: no mask needed
  partial,  // the diagonal crosses the block: the mask is applied
  masked,   // no pair visible (or an empty span): the block is skipped
};
const char* to_string(BlockKind k);
BlockKind kind_of(Span q, Span kv, int64_t offset, bool causal);

// One block a GPU computes in one step: its own query chunk against one chunk of the held K/V shard.
struct RingBlock {
  int q_chunk = 0;   // index into the GPU's own Shards::q
  int kv_chunk = 0;  // index into the held shard's Shards::kv (the shard of RingStep::kv_owner)
  Span q, kv;
  BlockKind kind = BlockKind::masked;
  int64_t pairs = 0;  // visible (row, key) pairs, 0 when masked
};

// What GPU `gpu` does at ring step `step`: at step s GPU r holds the K/V shard of GPU (r − s) mod P (it
// arrived from r − 1 at the end of step s − 1) and forwards it to r + 1 during step s when s < P − 1.
struct RingStep {
  int gpu = 0, step = 0, kv_owner = 0;
  std::vector<RingBlock> blocks;  // every (own q chunk, held kv chunk), q chunk major; masked ones included
  int64_t pairs = 0;              // Σ blocks' pairs
  int64_t kv_tokens = 0;          // tokens of the held shard: what is sent to r + 1 during this step
};

struct RingPlan {
  int gpus = 1;
  Balance balance = Balance::contiguous;
  bool causal = false;
  int64_t q_len = 0, kv_len = 0;
  std::vector<Shards> shards;               // [gpu]
  std::vector<std::vector<RingStep>> steps;  // [step][gpu], P steps

  int64_t pairs_of(int gpu) const;  // visible pairs GPU `gpu` computes over all steps
  int64_t total_pairs() const;      // = the problem's attended pairs (one head)
  double imbalance() const;         // max over GPUs of pairs ÷ their mean; 1 = balanced
};

// How a block's partial joins its query chunk's result (the account above): by its place among the chunk's visible
// blocks in the ring's order — steps, then a step's blocks.
enum class MergeRole {
  none,    // masked: no partial
  only,    // the chunk's one visible block: its kernel writes the chunk's output and logsumexp
  first,   // the first of several: its partial becomes the running result
  middle,  // merged into the running result
  last,    // merged, and the chunk's output stored in the same pass
};
const char* to_string(MergeRole r);

struct MergePlan {
  std::vector<std::vector<std::vector<MergeRole>>> roles;  // [step][gpu][block] for every block of plan.steps
  std::vector<std::vector<bool>> unseen;                   // [gpu][query chunk]: no block sees it (cleared, stored)
};
MergePlan merge_plan(const RingPlan& plan);

// The ring over `gpus` GPUs. Throws InputError naming the argument when gpus is outside [1, kMaxGpus],
// a length is < 1 or align < 1. P = 1 is one step with one GPU holding everything, as one chunk whatever the balance.
RingPlan plan_ring(int64_t q_len, int64_t kv_len, bool causal, int gpus, Balance b, int64_t align = 1);

// Decode with the cache sharded by tokens: GPU r attends the contiguous span [r] of [0, kv_len) and the
// partial (O, logsumexp) merge across GPUs. Same rule and checks as plan_ring.
std::vector<Span> decode_shards(int64_t kv_len, int gpus, int64_t align);

}  // namespace attnlab::cp
