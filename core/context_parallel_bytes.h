// attnlab core: the bytes of context parallelism that follow from a variant's storage declaration (core/storage.h) —
// what one K/V shard puts on the links, and the least device memory one GPU of the ring holds. The cost model's link
// term (sim/context_parallel_model.h) and the kernel backend's memory check (kernels/common/device_memory.h) read
// them, so a problem split across GPUs is refused or admitted by the memory each GPU needs, not the whole problem's.
#pragma once

#include "core/config.h"
#include "core/problem.h"

#include <cstdint>

namespace attnlab::cp {

// Bytes of K and V for `tokens` tokens of every sequence and KV head as the ring sends them: in a prefill as the
// storage declaration's kv_wire (TurboAttention: Alg. 1's INT8 tiles), else its kv_in (as the prefill reads them:
// FireQ App. D's E4M3 operands, FP16) where it has one; else as the variant stores them (its cache). 0 for no tokens.
// Throws InputError for a variant without a storage declaration.
double wire_bytes(const Problem& p, const VariantRequest& v, int64_t tokens);

// The least device memory one GPU of p's ring (p.gpus of them) holds at once, the most over the GPUs
// (kernels/context_parallel/ring_attention.cpp's buffers): a prefill's query chunks as the kernel reads Q (the
// declaration's q_in), their FP32 running result and FP16 output with the logsumexps, the largest block's partial,
// and three K/V shards (its own and the two it receives into); a decode's queries, its shard and its partial — and
// on GPU 0 every other GPU's partial and the merged output. Without the variant's scratch.
double rank_device_bytes(const Problem& p, const VariantRequest& v);

}  // namespace attnlab::cp
