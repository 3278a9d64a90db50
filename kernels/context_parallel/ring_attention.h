// attnlab kernels: context-parallel attention — one problem across the ranks of a RingTransport (ring_transport.h),
// following core/context_parallel.h's plan, which the cost model reads too.
//
// Prefill (ring attention; Liu et al. 2023, zig-zag balanced for a causal mask): rank r holds its query chunks and
// its K/V shard; at step s it attends its chunks to the shard in hand (owner (r − s) mod P) while, on its own
// stream, the shard goes on to r + 1 and the next arrives from r − 1 into the other of two buffers. Each (query
// chunk, key chunk) block is the variant's one-GPU kernel on the two chunks — causal where the block crosses the
// diagonal, skipped where it is masked — and merges into the chunk's running (O, logsumexp) (lse_merge.h).
// Decode: the cache split by tokens (cp::decode_shards), every rank attends the queries to its shard, rank 0
// gathers the partial (O, logsumexp) and merges them all in one pass, in rank order (lse_merge_parts).
//
// What travels is the variant's own storage format (RingVariant::pack_shard): FP16 K/V for flash2, the compressed
// tiles and caches for the others. The choices: a prefill across ranks is a self-attention prefill (q_len = kv_len,
// so a block the diagonal crosses is a diagonal block and the kernels' causal mask is its own); a decode has one
// query row. Shards are aligned to cp::kShardAlign tokens.
#pragma once

#include "core/context_parallel.h"
#include "core/context_parallel_trace.h"
#include "core/problem.h"
#include "core/tensor.h"
#include "kernels/context_parallel/lse_merge.h"
#include "kernels/context_parallel/ring_transport.h"

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <span>
#include <string>
#include <vector>

namespace attnlab::kernels {

// One variant's part of the ring: its storage format for a shard and its kernel on one block. A variant with a
// kernel takes part by one implementation of this (kernel_table.h's `ring` column).
class RingVariant {
 public:
  virtual ~RingVariant() = default;
  // Device bytes of K and V over the chunks `spans` (a rank's shard), in the variant's storage format; these bytes
  // are what the ring sends.
  virtual size_t shard_bytes(std::span<const cp::Span> spans) const = 0;
  // Those bytes, on the host.
  virtual std::vector<std::byte> pack_shard(std::span<const cp::Span> spans) const = 0;
  // The query rows `rows` (positions of [0, q_len)) in the kernel's input format, on the host.
  virtual std::vector<std::byte> pack_queries(cp::Span rows) const = 0;
  // Scratch the kernel needs for `q_rows` query rows against `kv_len` keys (its KV-split workspace).
  virtual size_t workspace_bytes(int64_t q_rows, int64_t kv_len) const = 0;
  // Queries `q` (pack_queries of q_rows) against chunk `chunk` of a shard (`shard`, pack_shard of `spans`) — causal
  // or not — into o (B, Hq, q_rows, d) of output_element() and lse (B, Hq, q_rows), on `stream`.
  virtual void attend(const void* q, cp::Span q_rows, const void* shard, std::span<const cp::Span> spans, int chunk,
                      bool causal, void* o, float* lse, void* workspace, cudaStream_t stream) const = 0;
  // The type the variant's kernel stores O in; the ring's result is stored in it too.
  virtual OutputElement output_element() const { return OutputElement::fp16; }
};

// A shard laid out chunk after chunk, chunk_bytes(span) bytes for the chunk of tokens `span` (what every
// RingVariant's pack_shard writes): the bytes of the chunks before `chunk` (all of them for chunk = spans.size(): the
// shard's size).
template <class ChunkBytes>
size_t chunk_offset(std::span<const cp::Span> spans, size_t chunk, ChunkBytes&& chunk_bytes) {
  size_t bytes = 0;
  for (size_t c = 0; c < chunk; ++c) bytes += chunk_bytes(spans[c]);
  return bytes;
}

// Why the ring cannot run p ("" when it can): a prefill needs q_len = kv_len, a decode one query row.
std::string ring_refusal(const Problem& p);

struct RingRun {
  Tensor o;                // (B, Hq, Nq, d), values of the variant's output element, as the one-GPU kernel's output
  std::vector<float> lse;  // (B, Hq, Nq)
  std::vector<float> ms;   // one time per timed run (empty when not timed)
  std::vector<float> merge_ms;  // decode: per timed run, rank 0's merge of the partials (all arrived → stored)
  // One more run after the timed ones, traced: what each rank did at each step (core/context_parallel_trace.h), the
  // measured counterpart of the cost model's timeline. Empty when not timed.
  std::vector<cp::TraceSlot> trace;
  double wire_bytes = 0;   // bytes the transport moved in one run: the shards around the ring, or the partials
  double io_bytes = 0;     // the inputs once in their storage format (every query, every shard) and the output once
  int ranks = 1;
  std::string transport;
};

// p across t's ranks with variant v's kernels (v built for p and its inputs). timed: after the correctness run,
// kWarmupRuns and kTimedRuns runs of the whole ring, each from a start event every rank's streams wait on to the
// point where rank 0 has seen every rank finish (timing.h's counts), then one traced run (RingRun::trace).
RingRun run_ring(const Problem& p, const RingVariant& v, RingTransport& t, bool timed);

}  // namespace attnlab::kernels
