// attnlab core: the bytes of context parallelism (context_parallel_bytes.h).
#include "core/context_parallel_bytes.h"

#include "core/context_parallel.h"
#include "core/error.h"
#include "core/registry.h"
#include "core/storage.h"

#include <fmt/format.h>

#include <algorithm>

namespace attnlab::cp {

namespace {

Storage storage_of(const Problem& p, const VariantRequest& v) {
  const VariantSpec* spec = find_variant(v.id);
  if (!spec || !spec->storage) fail_input("model", fmt::format("no storage declaration for variant '{}'", v.id));
  return spec->storage(p, v.params);
}

// Q's rows [rows) of every (batch, query head) as the kernel reads them (the declaration's q_in).
double query_bytes(const Problem& p, const Storage& st, int64_t rows) {
  return double(p.batch * p.q_heads) * tensor_bytes(st.q_in, rows, p.head_dim).total();
}

}  // namespace

double wire_bytes(const Problem& p, const VariantRequest& v, int64_t tokens) {
  if (tokens <= 0) return 0;
  Problem shard = p;
  shard.kv_len = tokens;
  const Storage st = storage_of(shard, v);
  if (p.phase == Phase::prefill && (st.kv_wire || st.kv_in))
    return double(p.batch * p.kv_heads) * 2 * tensor_bytes(st.kv_wire ? *st.kv_wire : *st.kv_in, tokens, p.head_dim).total();
  return double(p.batch) * cache_bytes(st.cache, p.kv_heads, tokens).total();
}

double rank_device_bytes(const Problem& p, const VariantRequest& v) {
  const Storage st = storage_of(p, v);
  const int gpus = int(p.gpus);
  const double heads = double(p.batch * p.q_heads);
  const double partial = double(partial_bytes_per_row(p.head_dim)), running = double(running_bytes_per_row(p.head_dim));
  auto shard_bytes = [&](const std::vector<Span>& spans) {
    double bytes = 0;
    for (const Span& s : spans) bytes += wire_bytes(p, v, s.size());
    return bytes;
  };
  if (p.phase == Phase::decode) {
    const std::vector<Span> shards = decode_shards(p.kv_len, gpus, kShardAlign);
    double most = 0;
    for (int r = 0; r < gpus; ++r) {
      double bytes = query_bytes(p, st, p.q_len) + wire_bytes(p, v, shards[size_t(r)].size()) +
                     heads * double(p.q_len) * partial;
      if (r == 0) bytes += heads * double(p.q_len) * ((gpus - 1) * partial + partial);  // the gathered parts, the output
      most = std::max(most, bytes);
    }
    return most;
  }
  const RingPlan plan = plan_ring(p.q_len, p.kv_len, p.causal, gpus, default_balance(p.causal), kShardAlign);
  double largest_shard = 0;
  for (const Shards& s : plan.shards) largest_shard = std::max(largest_shard, shard_bytes(s.kv));
  double most = 0;
  for (const Shards& s : plan.shards) {
    double bytes = shard_bytes(s.kv) + (gpus > 1 ? 2 * largest_shard : 0.0), largest_chunk = 0;
    for (const Span& q : s.q) {
      bytes += query_bytes(p, st, q.size()) + heads * double(q.size()) * (running + partial);  // running, output
      largest_chunk = std::max(largest_chunk, double(q.size()));
    }
    most = std::max(most, bytes + heads * largest_chunk * partial);  // a block's partial
  }
  return most;
}

}  // namespace attnlab::cp
