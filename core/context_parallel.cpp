#include "core/context_parallel.h"

#include "core/error.h"

#include <fmt/format.h>

#include <algorithm>

namespace attnlab::cp {

const char* to_string(Balance b) { return b == Balance::zigzag ? "zigzag" : "contiguous"; }

Balance default_balance(bool causal) { return causal ? Balance::zigzag : Balance::contiguous; }

Balance balance_on(int gpus, Balance b) { return gpus == 1 ? Balance::contiguous : b; }

const char* to_string(BlockKind k) {
  switch (k) {
    case BlockKind::full: return "full";
    case BlockKind::partial: return "partial";
    case BlockKind::masked: return "masked";
  }
  return "?";
}

namespace {

void at_least(const char* name, int64_t v, int64_t lo) {
  if (v < lo) fail_input(name, fmt::format("must be ≥ {}, got {}", lo, v));
}

void check_ring(int64_t kv_len, int gpus, int64_t align) {
  if (gpus < 1 || gpus > kMaxGpus)
    fail_input("gpus", fmt::format("must be in [1, {}] (the GPUs of one host), got {}", kMaxGpus, gpus));
  at_least("kv_len", kv_len, 1);
  at_least("align", align, 1);
}

// a + (a + 1) + … + (b − 1), for a ≤ b; halving the even factor first keeps every product within the result's
// own size.
int64_t sum_range(int64_t a, int64_t b) {
  const int64_t n = b - a, ends = a + b - 1;
  return n % 2 == 0 ? (n / 2) * ends : n * (ends / 2);
}

// Where row i of q stands against kv: with the mask it sees t(i) = i + 1 + offset − kv.begin keys of kv,
// clamped to [0, |kv|]. Over the block's rows t runs over the consecutive integers [lo, hi).
struct RowReach {
  int64_t lo, hi;
};
RowReach reach(Span q, Span kv, int64_t offset) {
  const int64_t lo = q.begin + 1 + offset - kv.begin;
  return {lo, lo + q.size()};
}

}  // namespace

std::vector<Span> split(int64_t n, int parts, int64_t align) {
  at_least("n", n, 0);
  at_least("parts", parts, 1);
  at_least("align", align, 1);
  // i·n/parts without overflow: n = whole·parts + rest, so i·n/parts = i·whole + i·rest/parts (i·rest < parts²).
  const int64_t whole = n / parts, rest = n % parts;
  auto boundary = [&](int64_t i) {
    const int64_t even = i * whole + i * rest / parts;
    return even / align * align;
  };
  std::vector<Span> out(static_cast<size_t>(parts));
  for (int i = 0; i < parts; ++i) out[i] = {boundary(i), i + 1 == parts ? n : boundary(i + 1)};
  return out;
}

std::vector<Shards> shard(int64_t q_len, int64_t kv_len, int gpus, Balance b, int64_t align) {
  b = balance_on(gpus, b);
  const int chunks = b == Balance::zigzag ? 2 * gpus : gpus;
  const std::vector<Span> q = split(q_len, chunks, align), kv = split(kv_len, chunks, align);
  std::vector<Shards> out(static_cast<size_t>(gpus));
  for (int r = 0; r < gpus; ++r) {
    // contiguous: chunk r; zigzag: chunks r and 2P − 1 − r (r < 2P − 1 − r, so in order of position).
    std::vector<int> mine{r};
    if (b == Balance::zigzag) mine.push_back(chunks - 1 - r);
    for (int c : mine) {
      out[r].q.push_back(q[c]);
      out[r].kv.push_back(kv[c]);
    }
  }
  return out;
}

int64_t visible_pairs(Span q, Span kv, int64_t offset, bool causal) {
  if (q.size() <= 0 || kv.size() <= 0) return 0;
  if (!causal) return q.size() * kv.size();
  // Σ over rows of clamp(t, 0, w), t over [lo, hi): rows with t ≤ 0 see nothing, rows with 0 < t < w see t
  // keys (an arithmetic series), rows with t ≥ w see all w.
  const int64_t w = kv.size();
  const auto [lo, hi] = reach(q, kv, offset);
  int64_t pairs = 0;
  const int64_t a = std::max<int64_t>(lo, 1), b = std::min(hi, w);
  if (a < b) pairs += sum_range(a, b);
  const int64_t all = std::max(lo, w);
  if (all < hi) pairs += (hi - all) * w;
  return pairs;
}

BlockKind kind_of(Span q, Span kv, int64_t offset, bool causal) {
  if (q.size() <= 0 || kv.size() <= 0) return BlockKind::masked;
  if (!causal) return BlockKind::full;
  const auto [lo, hi] = reach(q, kv, offset);
  if (hi - 1 <= 0) return BlockKind::masked;  // the last row sees none of kv
  if (lo >= kv.size()) return BlockKind::full;  // the first row sees all of kv
  return BlockKind::partial;
}

int64_t RingPlan::pairs_of(int gpu) const {
  int64_t pairs = 0;
  for (const auto& step : steps) pairs += step[static_cast<size_t>(gpu)].pairs;
  return pairs;
}

int64_t RingPlan::total_pairs() const {
  int64_t pairs = 0;
  for (int r = 0; r < gpus; ++r) pairs += pairs_of(r);
  return pairs;
}

double RingPlan::imbalance() const {
  const int64_t total = total_pairs();
  if (total == 0) return 1.0;
  int64_t most = 0;
  for (int r = 0; r < gpus; ++r) most = std::max(most, pairs_of(r));
  return static_cast<double>(most) / (static_cast<double>(total) / gpus);
}

RingPlan plan_ring(int64_t q_len, int64_t kv_len, bool causal, int gpus, Balance b, int64_t align) {
  at_least("q_len", q_len, 1);
  check_ring(kv_len, gpus, align);
  RingPlan plan;
  plan.gpus = gpus;
  plan.balance = balance_on(gpus, b);
  plan.causal = causal;
  plan.q_len = q_len;
  plan.kv_len = kv_len;
  plan.shards = shard(q_len, kv_len, gpus, b, align);
  const int64_t offset = kv_len - q_len;  // core/problem.h: row i sees keys j < i + 1 + offset
  plan.steps.resize(static_cast<size_t>(gpus));
  for (int s = 0; s < gpus; ++s) {
    for (int r = 0; r < gpus; ++r) {
      RingStep st;
      st.gpu = r;
      st.step = s;
      st.kv_owner = ((r - s) % gpus + gpus) % gpus;  // sent by r − 1 at the end of step s − 1
      const Shards& own = plan.shards[r];
      const Shards& held = plan.shards[st.kv_owner];
      for (int i = 0; i < static_cast<int>(own.q.size()); ++i) {
        for (int j = 0; j < static_cast<int>(held.kv.size()); ++j) {
          RingBlock blk{i, j, own.q[i], held.kv[j], kind_of(own.q[i], held.kv[j], offset, causal),
                        visible_pairs(own.q[i], held.kv[j], offset, causal)};
          st.pairs += blk.pairs;
          st.blocks.push_back(blk);
        }
      }
      for (const Span& kv : held.kv) st.kv_tokens += kv.size();
      plan.steps[s].push_back(std::move(st));
    }
  }
  return plan;
}

std::vector<Span> decode_shards(int64_t kv_len, int gpus, int64_t align) {
  check_ring(kv_len, gpus, align);
  return split(kv_len, gpus, align);
}

const char* to_string(MergeRole r) {
  switch (r) {
    case MergeRole::none: return "none";
    case MergeRole::only: return "only";
    case MergeRole::first: return "first";
    case MergeRole::middle: return "middle";
    case MergeRole::last: return "last";
  }
  return "?";
}

MergePlan merge_plan(const RingPlan& plan) {
  MergePlan m;
  auto& roles = m.roles;
  roles.resize(plan.steps.size());
  // Per (gpu, query chunk): its visible blocks as (step, block) in the ring's order.
  std::vector<std::vector<std::vector<std::pair<size_t, size_t>>>> visible(size_t(plan.gpus));
  for (int g = 0; g < plan.gpus; ++g) visible[size_t(g)].resize(plan.shards[size_t(g)].q.size());
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    roles[s].resize(plan.steps[s].size());
    for (size_t g = 0; g < plan.steps[s].size(); ++g) {
      const std::vector<RingBlock>& blocks = plan.steps[s][g].blocks;
      roles[s][g].assign(blocks.size(), MergeRole::none);
      for (size_t b = 0; b < blocks.size(); ++b)
        if (blocks[b].kind != BlockKind::masked) visible[g][size_t(blocks[b].q_chunk)].push_back({s, b});
    }
  }
  m.unseen.resize(visible.size());
  for (size_t g = 0; g < visible.size(); ++g)
    for (const auto& chunk : visible[g]) {
      m.unseen[g].push_back(chunk.empty());
      for (size_t i = 0; i < chunk.size(); ++i)
        roles[chunk[i].first][g][chunk[i].second] = chunk.size() == 1       ? MergeRole::only
                                                    : i == 0                ? MergeRole::first
                                                    : i + 1 == chunk.size() ? MergeRole::last
                                                                            : MergeRole::middle;
    }
  return m;
}

}  // namespace attnlab::cp
