// attnlab core: one attention problem — shapes, masking, phase, softmax scale.
//
// Causal masking convention (a choice; the notes' footnote 1 only defines the square case): masks are
// aligned bottom-right, as FlashAttention-2 ≥ 2.1 does, so query row i of Nq sees keys
// j < i + 1 + (Nkv − Nq). Decode (Nq = 1) therefore sees every key; a prefill chunk sees the cache
// before it. Rows that see no key at all (possible only when Nq > Nkv) produce an all-zero output row.
#pragma once

#include "core/tensor.h"

#include <cstdint>
#include <string>

namespace attnlab {

enum class Phase { prefill, decode };
const char* to_string(Phase p);

struct Problem {
  int64_t batch = 1;
  int64_t q_heads = 8;
  int64_t kv_heads = 8;  // must divide q_heads (grouped-query attention, notes §3.1)
  int64_t q_len = 1024;
  int64_t kv_len = 1024;
  int64_t head_dim = 128;
  bool causal = false;
  Phase phase = Phase::prefill;
  double softmax_scale = 0.0;  // 0 means the default 1/√d
  // GPUs of one host the problem is split across by its sequence (context parallelism, core/context_parallel.h):
  // 1 runs on one GPU. The function attended is the same at any count; the kernels' merge of the GPUs' partial
  // results rounds differently, and the cost model adds the links (sim/context_parallel_model.h).
  int64_t gpus = 1;

  double scale() const;
  int64_t group() const { return q_heads / kv_heads; }          // R, query heads per KV head
  int64_t kv_head_of(int64_t h) const { return h / group(); }  // notes §3.1: h ↦ ⌈h/R⌉ (0-based)
  // Number of keys visible to query row i: all kv_len, or the causal prefix (bottom-right aligned).
  int64_t visible_keys(int64_t row) const;
  // Number of (query, key) pairs that are not masked, over one head.
  int64_t attended_pairs() const;
  // Operations of attention, 4·d per attended pair (two matrix products), over all heads.
  double flops() const;

  Shape4 q_shape() const { return {batch, q_heads, q_len, head_dim}; }
  Shape4 kv_shape() const { return {batch, kv_heads, kv_len, head_dim}; }
};

// The limits the tools accept; bad values throw InputError naming "problem.<field>".
inline constexpr int64_t kMinHeadDim = 16;
inline constexpr int64_t kMaxHeadDim = 256;
inline constexpr int64_t kHeadDimMultiple = 16;  // what tensor-core tiles and RoPE pairs need
// B·Hq·Nq·d, B·Hkv·Nkv·d and B·Hq·Nq·Nkv must each stay within 2^60 (checked without overflow), so that
// every count, and its bytes at 8 per element, fits int64; the memory check refuses far smaller ones.
inline constexpr int64_t kMaxElements = int64_t{1} << 60;
inline constexpr int64_t kMaxGpus = 8;  // the GPUs one host's NVLink domain joins (an HGX board)
void validate(const Problem& p);

}  // namespace attnlab
