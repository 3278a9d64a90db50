// Context parallelism (core/context_parallel.h): the closed-form visible-pair count against a brute-force count,
// the shards as an exact partition with aligned boundaries, the ring's rotation, every query chunk meeting every
// key chunk once, the plan's pairs against the problem's, the causal balance of zigzag against contiguous
// (exact values from the closed form), and the argument checks.
#include "core/context_parallel.h"
#include "core/data/random.h"
#include "core/error.h"
#include "core/problem.h"
#include "tests/catch.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace attnlab {
namespace ATTNLAB_FILE_LOCAL {

using cp::Balance;
using cp::BlockKind;
using cp::Span;

// The mask of core/problem.h pair by pair: row i sees key j when j < i + 1 + offset.
int64_t brute_pairs(Span q, Span kv, int64_t offset, bool causal) {
  int64_t pairs = 0;
  for (int64_t i = q.begin; i < q.end; ++i)
    for (int64_t j = kv.begin; j < kv.end; ++j) pairs += !causal || j < i + 1 + offset;
  return pairs;
}

std::string str(Span s) { return fmt::format("[{}, {})", s.begin, s.end); }

// "" when `spans` (in any order, empty ones allowed) cover [0, len) exactly, without overlap, with every inner
// boundary a multiple of align; else the first problem.
std::string partition_problem(std::vector<Span> spans, int64_t len, int64_t align) {
  std::sort(spans.begin(), spans.end(),
            [](Span a, Span b) { return std::pair(a.begin, a.end) < std::pair(b.begin, b.end); });
  int64_t at = 0;
  for (const Span& s : spans) {
    if (s.begin != at) return fmt::format("{} starts at {}, expected {}", str(s), s.begin, at);
    if (s.end < s.begin) return fmt::format("{} is reversed", str(s));
    if (s.end != len && s.end % align != 0) return fmt::format("{} ends off the alignment {}", str(s), align);
    at = s.end;
  }
  if (at != len) return fmt::format("the spans end at {}, expected {}", at, len);
  return "";
}

// "" when every (GPU, own q chunk) meets every kv chunk of the sequence exactly once over the steps, with the spans
// the shards name; else the first problem.
std::string coverage_problem(const cp::RingPlan& plan) {
  const int P = plan.gpus;
  for (int r = 0; r < P; ++r) {
    const cp::Shards& own = plan.shards[r];
    for (int i = 0; i < static_cast<int>(own.q.size()); ++i) {
      std::map<std::pair<int, int>, int> met;  // (owner, kv chunk) -> times
      for (int s = 0; s < P; ++s) {
        const cp::RingStep& st = plan.steps[s][r];
        for (const cp::RingBlock& b : st.blocks) {
          if (b.q_chunk != i) continue;
          if (b.q != own.q[i] || b.kv != plan.shards[st.kv_owner].kv[b.kv_chunk])
            return fmt::format("gpu {} step {}: block spans {} × {} differ from the shards", r, s, str(b.q), str(b.kv));
          ++met[{st.kv_owner, b.kv_chunk}];
        }
      }
      for (int owner = 0; owner < P; ++owner)
        for (int j = 0; j < static_cast<int>(plan.shards[owner].kv.size()); ++j)
          if (met[{owner, j}] != 1)
            return fmt::format("gpu {} q chunk {} met kv chunk {} of gpu {} {} times", r, i, j, owner, met[{owner, j}]);
      if (met.size() != static_cast<size_t>(P) * plan.shards[0].kv.size())
        return fmt::format("gpu {} q chunk {} met chunks that no shard holds", r, i);
    }
  }
  return "";
}

// The problem's attended pairs (one head), by core/problem.h's own count.
int64_t attended(int64_t q_len, int64_t kv_len, bool causal) {
  Problem p;
  p.q_len = q_len;
  p.kv_len = kv_len;
  p.causal = causal;
  return p.attended_pairs();
}

// The InputError message of fn, or "" when it throws none.
std::string input_error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST_CASE("context parallel: visible pairs in closed form equal the pair-by-pair count; kind_of agrees",
          "[context-parallel]") {
  data::Rng rng(39);
  auto span_in = [&](int64_t len) {
    const int64_t a = static_cast<int64_t>(rng.below(static_cast<uint64_t>(len) + 1));
    const int64_t b = static_cast<int64_t>(rng.below(static_cast<uint64_t>(len) + 1));
    return Span{std::min(a, b), std::max(a, b)};
  };
  for (int trial = 0; trial < 4000; ++trial) {
    const int64_t nq = 1 + static_cast<int64_t>(rng.below(60)), nkv = 1 + static_cast<int64_t>(rng.below(60));
    // The problem's offset (q_len <, =, > kv_len as drawn) and, one trial in four, any offset at all.
    const int64_t offset = trial % 4 == 3 ? static_cast<int64_t>(rng.below(160)) - 80 : nkv - nq;
    const Span q = span_in(nq), kv = span_in(nkv);
    for (bool causal : {false, true}) {
      const int64_t want = brute_pairs(q, kv, offset, causal);
      const int64_t got = cp::visible_pairs(q, kv, offset, causal);
      const BlockKind kind = cp::kind_of(q, kv, offset, causal);
      const BlockKind want_kind = want == 0                          ? BlockKind::masked
                                  : want == q.size() * kv.size() ? BlockKind::full
                                                                 : BlockKind::partial;
      if (got != want || kind != want_kind) {
        INFO("q " << str(q) << " kv " << str(kv) << " offset " << offset << " causal " << causal << " kind "
                  << cp::to_string(kind) << ", expected " << cp::to_string(want_kind));
        CHECK(got == want);
        CHECK(kind == want_kind);
      }
    }
  }
  // Long rows, no loop: the causal square N·(N+1)/2, decode's one row sees the whole cache, a prefill chunk of
  // 1000 rows after a cache of 2^20 sees the cache and its own triangle.
  const int64_t N = int64_t{1} << 20;
  CHECK(cp::visible_pairs({0, N}, {0, N}, 0, true) == N * (N + 1) / 2);
  CHECK(cp::visible_pairs({0, 1}, {0, N}, N - 1, true) == N);
  CHECK(cp::visible_pairs({0, 1000}, {0, N + 1000}, N, true) == 1000 * N + 1000 * 1001 / 2);
  CHECK(cp::kind_of({0, N}, {N / 2, N}, 0, true) == BlockKind::partial);
  CHECK(cp::kind_of({N / 2, N}, {0, N / 2}, 0, true) == BlockKind::full);
  CHECK(cp::kind_of({0, N / 2}, {N / 2, N}, 0, true) == BlockKind::masked);
  CHECK(cp::kind_of({5, 5}, {0, N}, 0, false) == BlockKind::masked);
}

TEST_CASE("context parallel: split, the header's example and small cases by hand", "[context-parallel]") {
  // n = 7, 4 parts, align 16: three empty spans and [0, 7) last (the header's example).
  CHECK(cp::split(7, 4, 16) == std::vector<Span>{{0, 0}, {0, 0}, {0, 0}, {0, 7}});
  CHECK(cp::split(10, 3, 1) == std::vector<Span>{{0, 3}, {3, 6}, {6, 10}});
  CHECK(cp::split(100, 2, 64) == std::vector<Span>{{0, 0}, {0, 100}});
  CHECK(cp::split(256, 2, 64) == std::vector<Span>{{0, 128}, {128, 256}});
}

TEST_CASE("context parallel: shards partition the sequence, each query chunk meets each key chunk once, and the "
          "plan's pairs are the problem's",
          "[context-parallel]") {
  for (int64_t n : {1, 7, 100, 1000, 4097, 131072}) {
    // q_len = kv_len, q_len < kv_len (a prefill chunk after a cache), q_len > kv_len (rows that see no key).
    std::vector<std::pair<int64_t, int64_t>> shapes{{n, n}};
    if (n > 1) shapes.insert(shapes.end(), {{(n + 2) / 3, n}, {n, (n + 2) / 3}});
    for (const auto& [q_len, kv_len] : shapes) {
      for (bool causal : {false, true}) {
        const int64_t want = attended(q_len, kv_len, causal);
        // The closed forms for the square and the unmasked; pair by pair for the small.
        if (!causal) CHECK(want == q_len * kv_len);
        if (causal && q_len == kv_len) CHECK(want == n * (n + 1) / 2);
        if (n <= 100) CHECK(want == brute_pairs({0, q_len}, {0, kv_len}, kv_len - q_len, causal));
        for (int P = 1; P <= 8; ++P) {
          for (int64_t align : {1, 16, 64, 128}) {
            for (Balance b : {Balance::contiguous, Balance::zigzag}) {
              INFO("q_len " << q_len << " kv_len " << kv_len << " causal " << causal << " P " << P << " align "
                            << align << " " << cp::to_string(b));
              const cp::RingPlan plan = cp::plan_ring(q_len, kv_len, causal, P, b, align);
              REQUIRE(plan.shards.size() == static_cast<size_t>(P));
              REQUIRE(plan.steps.size() == static_cast<size_t>(P));
              CHECK(plan.balance == (P == 1 ? Balance::contiguous : b));
              std::vector<Span> q, kv;
              for (const cp::Shards& s : plan.shards) {
                CHECK(s.q.size() == (b == Balance::zigzag && P > 1 ? 2u : 1u));  // one GPU: one chunk
                CHECK(s.kv.size() == s.q.size());
                if (s.q.size() == 2) CHECK(s.q[0].end <= s.q[1].begin);  // in order of position
                if (s.kv.size() == 2) CHECK(s.kv[0].end <= s.kv[1].begin);
                q.insert(q.end(), s.q.begin(), s.q.end());
                kv.insert(kv.end(), s.kv.begin(), s.kv.end());
              }
              CHECK(partition_problem(q, q_len, align) == "");
              CHECK(partition_problem(kv, kv_len, align) == "");
              CHECK(coverage_problem(plan) == "");
              CHECK(plan.total_pairs() == want);
            }
          }
        }
      }
    }
  }
}

TEST_CASE("context parallel: the ring passes each K/V shard from GPU r − 1 to r", "[context-parallel]") {
  for (int P = 1; P <= 8; ++P) {
    for (Balance b : {Balance::contiguous, Balance::zigzag}) {
      INFO("P " << P << " " << cp::to_string(b));
      const cp::RingPlan plan = cp::plan_ring(4097, 4097, true, P, b, 16);
      for (int s = 0; s < P; ++s) {
        for (int r = 0; r < P; ++r) {
          const cp::RingStep& st = plan.steps[s][r];
          CHECK(st.gpu == r);
          CHECK(st.step == s);
          CHECK(st.kv_owner == ((r - s) % P + P) % P);
          int64_t tokens = 0, pairs = 0;
          for (const Span& kv : plan.shards[st.kv_owner].kv) tokens += kv.size();
          for (const cp::RingBlock& blk : st.blocks) pairs += blk.pairs;
          CHECK(st.kv_tokens == tokens);
          CHECK(st.pairs == pairs);
          CHECK(st.blocks.size() == plan.shards[r].q.size() * plan.shards[st.kv_owner].kv.size());
          if (s + 1 < P) {
            // What GPU r holds at step s + 1 is what GPU r − 1 held (and sent) at step s.
            const cp::RingStep& sender = plan.steps[s][(r - 1 + P) % P];
            const cp::RingStep& next = plan.steps[s + 1][r];
            CHECK(next.kv_owner == sender.kv_owner);
            CHECK(next.kv_tokens == sender.kv_tokens);
            auto held = [](const cp::RingStep& st) {  // the held shard's chunks, from q chunk 0's row of blocks
              std::vector<Span> kv;
              for (const cp::RingBlock& blk : st.blocks)
                if (blk.q_chunk == 0) kv.push_back(blk.kv);
              return kv;
            };
            const std::vector<Span> sent = held(sender), received = held(next);
            CHECK(sent == received);
          }
        }
      }
    }
  }
}

TEST_CASE("context parallel: zigzag balances causal attention, contiguous does not", "[context-parallel]") {
  const int64_t N = 131072;
  for (int P : {2, 4, 8}) {
    INFO("P " << P);
    const cp::RingPlan zig = cp::plan_ring(N, N, true, P, Balance::zigzag, 128);
    const cp::RingPlan con = cp::plan_ring(N, N, true, P, Balance::contiguous, 128);
    // A causal square chunk k of c rows (rows kc … kc + c − 1, row i seeing i + 1 keys) holds c²·k + c(c + 1)/2
    // pairs: k full c × c blocks before it and its own triangle.
    auto chunk_pairs = [](int64_t c, int64_t k) { return c * c * k + c * (c + 1) / 2; };
    // Zigzag: c = N/2P; GPU r's chunks r and 2P − 1 − r have k summing to 2P − 1 whatever r, so every GPU holds
    // c²·(2P − 1) + c(c + 1) pairs — exactly equal when 2P·align divides N, as here.
    const int64_t cz = N / (2 * P);
    for (int r = 0; r < P; ++r) {
      CHECK(zig.pairs_of(r) == chunk_pairs(cz, r) + chunk_pairs(cz, 2 * P - 1 - r));
      CHECK(zig.pairs_of(r) == zig.pairs_of(0));
    }
    CHECK(zig.imbalance() <= 1.001);
    // Contiguous: c = N/P, GPU r holds chunk r, the last GPU the most: c²·(P − 1) + c(c + 1)/2 against the mean
    // N(N + 1)/2 ÷ P, about 2 − 1/P.
    const int64_t cc = N / P;
    for (int r = 0; r < P; ++r) CHECK(con.pairs_of(r) == chunk_pairs(cc, r));
    const double want = double(chunk_pairs(cc, P - 1)) / (double(N * (N + 1) / 2) / P);
    CHECK(con.imbalance() == Approx(want).epsilon(1e-12));
    CHECK(con.imbalance() == Approx(2.0 - 1.0 / P).epsilon(1e-3));
    CHECK(zig.imbalance() < con.imbalance());
    // Unmasked, both splits give every GPU N²/P pairs.
    CHECK(cp::plan_ring(N, N, false, P, Balance::zigzag, 128).imbalance() == Approx(1.0).epsilon(1e-12));
    CHECK(cp::plan_ring(N, N, false, P, Balance::contiguous, 128).imbalance() == Approx(1.0).epsilon(1e-12));
    // An awkward length (chunks uneven by the alignment): zigzag still beats contiguous.
    CHECK(cp::plan_ring(100003, 100003, true, P, Balance::zigzag, 128).imbalance() <
          cp::plan_ring(100003, 100003, true, P, Balance::contiguous, 128).imbalance());
  }
  CHECK(cp::default_balance(true) == Balance::zigzag);
  CHECK(cp::default_balance(false) == Balance::contiguous);
}

// The merge roles (core/context_parallel.h): per query chunk, its visible blocks in the ring's order (steps, then a
// step's blocks) are [only] or [first, middle…, last]; masked blocks have none — over causal and plain rings, even and
// ragged lengths, 1–8 GPUs, both balances.
TEST_CASE("context parallel: each chunk's visible blocks merge as only, or first … last, in the ring's order",
          "[context-parallel]") {
  for (int gpus = 1; gpus <= 8; ++gpus)
    for (int64_t n : {int64_t(300), int64_t(4096), int64_t(10000)})
      for (bool causal : {false, true})
        for (Balance b : {Balance::contiguous, Balance::zigzag}) {
          const cp::RingPlan plan = cp::plan_ring(n, n, causal, gpus, b, 128);
          const cp::MergePlan merging = cp::merge_plan(plan);
          const auto& roles = merging.roles;
          REQUIRE(roles.size() == plan.steps.size());
          for (int g = 0; g < gpus; ++g) {
            std::map<int, std::vector<cp::MergeRole>> per_chunk;
            for (size_t s = 0; s < plan.steps.size(); ++s) {
              const auto& blocks = plan.steps[s][size_t(g)].blocks;
              REQUIRE(roles[s][size_t(g)].size() == blocks.size());
              for (size_t k = 0; k < blocks.size(); ++k) {
                const cp::MergeRole r = roles[s][size_t(g)][k];
                CHECK((r == cp::MergeRole::none) == (blocks[k].kind == BlockKind::masked));
                if (r != cp::MergeRole::none) per_chunk[blocks[k].q_chunk].push_back(r);
              }
            }
            for (const auto& [chunk, seq] : per_chunk) {
              INFO(fmt::format("{} GPUs, N {}, causal {}, {}: GPU {} chunk {}", gpus, n, causal, cp::to_string(b), g, chunk));
              if (seq.size() == 1) {
                CHECK(seq[0] == cp::MergeRole::only);
                continue;
              }
              CHECK(seq.front() == cp::MergeRole::first);
              CHECK(seq.back() == cp::MergeRole::last);
              for (size_t i = 1; i + 1 < seq.size(); ++i) CHECK(seq[i] == cp::MergeRole::middle);
            }
            // With q_len = kv_len every non-empty query chunk sees its own diagonal block: only empty ones are unseen,
            // and `unseen` says exactly which.
            REQUIRE(merging.unseen[size_t(g)].size() == plan.shards[size_t(g)].q.size());
            for (size_t c = 0; c < plan.shards[size_t(g)].q.size(); ++c) {
              CHECK(merging.unseen[size_t(g)][c] == (per_chunk.count(int(c)) == 0));
              if (plan.shards[size_t(g)].q[c].size() > 0) CHECK(per_chunk.count(int(c)) == 1);
            }
          }
        }
}

TEST_CASE("context parallel: decode shards partition the cache with aligned, even boundaries", "[context-parallel]") {
  for (int64_t kv_len : {1, 7, 100, 4097, 131072, 1000001}) {
    for (int P = 1; P <= 8; ++P) {
      for (int64_t align : {1, 16, 64, 128}) {
        INFO("kv_len " << kv_len << " P " << P << " align " << align);
        const std::vector<Span> spans = cp::decode_shards(kv_len, P, align);
        REQUIRE(spans.size() == static_cast<size_t>(P));
        for (int r = 0; r + 1 < P; ++r) CHECK(spans[r].end == spans[r + 1].begin);  // in order of position
        CHECK(partition_problem(spans, kv_len, align) == "");
        // Boundary i lies in (i·n/P − align, i·n/P], so every span is within align of n/P.
        for (const Span& s : spans) {
          CHECK(double(s.size()) > double(kv_len) / P - double(align));
          CHECK(double(s.size()) < double(kv_len) / P + double(align));
        }
      }
    }
  }
}

TEST_CASE("context parallel: bad arguments throw InputError naming the argument", "[context-parallel][bad-input]") {
  CHECK_THROWS_AS(cp::plan_ring(100, 100, true, 0, Balance::zigzag), InputError);
  CHECK_THROWS_AS(cp::plan_ring(100, 100, true, kMaxGpus + 1, Balance::zigzag), InputError);
  CHECK_THROWS_AS(cp::plan_ring(100, 100, true, 2, Balance::zigzag, 0), InputError);
  CHECK_THROWS_AS(cp::plan_ring(0, 100, true, 2, Balance::zigzag), InputError);
  const std::vector<std::pair<std::string, std::function<void()>>> cases{
      {"gpus", [] { cp::plan_ring(100, 100, true, 0, Balance::zigzag); }},
      {"gpus", [] { cp::plan_ring(100, 100, true, kMaxGpus + 1, Balance::contiguous); }},
      {"align", [] { cp::plan_ring(100, 100, true, 2, Balance::zigzag, 0); }},
      {"q_len", [] { cp::plan_ring(0, 100, true, 2, Balance::zigzag); }},
      {"kv_len", [] { cp::plan_ring(100, 0, false, 2, Balance::zigzag); }},
      {"gpus", [] { cp::decode_shards(100, 0, 1); }},
      {"align", [] { cp::decode_shards(100, 2, 0); }},
  };
  for (const auto& [name, fn] : cases) {
    const std::string message = input_error_of(fn);
    INFO("expected an InputError naming " << name << ", got: " << message);
    CHECK(message.find(name) != std::string::npos);
  }
  CHECK(cp::plan_ring(100, 100, true, kMaxGpus, Balance::zigzag).gpus == kMaxGpus);  // the limit itself is allowed
}

}  // namespace ATTNLAB_FILE_LOCAL
}  // namespace attnlab
