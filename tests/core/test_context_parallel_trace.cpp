// The measured timeline of a ring (core/context_parallel_trace.h): marks written by hand for two and three GPUs,
// the slots worked out from the rules in the header's words; over random lock-step rings every GPU's steps span the
// whole ring; clocks a few µs apart never make a negative wait; bad marks refused.
#include "core/context_parallel_trace.h"
#include "tests/catch.h"

#include <cmath>
#include <random>
#include <stdexcept>
#include <vector>

namespace attnlab {
namespace ATTNLAB_FILE_LOCAL {

using cp::StepMarks;
using cp::TraceSlot;

const TraceSlot& slot(const std::vector<TraceSlot>& t, int gpus, int step, int gpu) {
  const TraceSlot& s = t.at(size_t(step * gpus + gpu));
  REQUIRE(s.step == step);
  REQUIRE(s.gpu == gpu);
  return s;
}

TEST_CASE("ring trace: a two-GPU prefill's marks become the model's slots", "[context_parallel]") {
  // Step-major. GPU 0: attends [0, 5] while exchanging [0, 3], then [6, 10]. GPU 1: [0, 4] exchanging [0, 3.5],
  // then [4.5, 9].
  const std::vector<StepMarks> marks = {
      {0, 5, 0, 3}, {0, 4, 0, 3.5},    // step 0
      {6, 10, NAN, NAN}, {4.5, 9, NAN, NAN},  // step 1: nothing sent on
  };
  const std::vector<TraceSlot> t = cp::prefill_trace(2, marks);
  REQUIRE(t.size() == 4);
  // Step 0 lasts until the GPU's next attention starts: GPU 0 waits 1 ms (its shard arrived at 3, but its own step
  // ended at 5 and the next began at 6), GPU 1 0.5 ms.
  CHECK(slot(t, 2, 0, 0).compute_ms == 5);
  CHECK(slot(t, 2, 0, 0).idle_ms == 1);
  CHECK(slot(t, 2, 0, 0).exchange_ms == 3);
  CHECK(slot(t, 2, 0, 1).compute_ms == 4);
  CHECK(slot(t, 2, 0, 1).idle_ms == 0.5);
  CHECK(slot(t, 2, 0, 1).exchange_ms == 3.5);
  // The last step ends when the last GPU ends (10): GPU 0 never waits, GPU 1 waits 10 − 9.
  CHECK(slot(t, 2, 1, 0).compute_ms == 4);
  CHECK(slot(t, 2, 1, 0).idle_ms == 0);
  CHECK(std::isnan(slot(t, 2, 1, 0).exchange_ms));
  CHECK(slot(t, 2, 1, 1).compute_ms == 4.5);
  CHECK(slot(t, 2, 1, 1).idle_ms == 1);
}

TEST_CASE("ring trace: a three-GPU decode — the attention, then the gather and GPU 0's merge", "[context_parallel]") {
  const std::vector<StepMarks> marks = {
      {0, 2, NAN, NAN}, {0, 3, NAN, NAN}, {0.1, 2.5, NAN, NAN},  // step 0: the shards
      {3.2, 3.5, 2, 3.1}, {NAN, NAN, 3, 3.05}, {NAN, NAN, 2.5, 2.6},  // step 1: GPU 0 receives and merges
  };
  const std::vector<TraceSlot> t = cp::decode_trace(3, marks);
  REQUIRE(t.size() == 6);
  // Step 0 ends with the slowest GPU's attention (3).
  CHECK(slot(t, 3, 0, 0).compute_ms == 2);
  CHECK(slot(t, 3, 0, 0).idle_ms == 1);
  CHECK(slot(t, 3, 0, 1).idle_ms == 0);
  CHECK(slot(t, 3, 0, 2).compute_ms == Approx(2.4).epsilon(1e-15));
  CHECK(slot(t, 3, 0, 2).idle_ms == Approx(0.5).epsilon(1e-15));
  // Step 1 spans [3, 3.5]: GPU 0 merges 0.3 and waits the gather's 0.2; GPUs 1 and 2 send and wait the rest.
  CHECK(slot(t, 3, 1, 0).compute_ms == Approx(0.3).epsilon(1e-15));
  CHECK(slot(t, 3, 1, 0).idle_ms == Approx(0.2).epsilon(1e-15));
  CHECK(slot(t, 3, 1, 0).exchange_ms == Approx(1.1).epsilon(1e-15));
  CHECK(slot(t, 3, 1, 1).compute_ms == 0);
  CHECK(slot(t, 3, 1, 1).exchange_ms == Approx(0.05).epsilon(1e-12));
  CHECK(slot(t, 3, 1, 1).idle_ms == Approx(0.45).epsilon(1e-12));
  // GPU 2's partial left before step 0 ended (its own attention did): its send is longer than nothing, its wait the
  // step less the send.
  CHECK(slot(t, 3, 1, 2).idle_ms == Approx(0.4).epsilon(1e-12));
}

TEST_CASE("ring trace: over random lock-step prefills every GPU's steps span the ring",
          "[context_parallel]") {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> work(0.1, 3.0), late(0.0, 0.05);
  for (int trial = 0; trial < 50; ++trial) {
    const int P = 1 + trial % 4;
    // Each GPU starts a step when its previous one is done and its shard has arrived, which (lock step) is when the
    // slowest GPU of the previous step is done plus a little; the clocks disagree by up to 50 µs.
    std::vector<StepMarks> marks(size_t(P * P));
    std::vector<double> skew(static_cast<size_t>(P));
    for (double& s : skew) s = late(rng);
    double step_start = 0;
    for (int s = 0; s < P; ++s) {
      double step_end = step_start;
      for (int r = 0; r < P; ++r) {
        StepMarks& m = marks[size_t(s * P + r)];
        m.compute_begin = step_start + skew[size_t(r)];
        m.compute_end = m.compute_begin + work(rng);
        if (s + 1 < P) m.exchange_begin = m.compute_begin, m.exchange_end = m.compute_begin + work(rng);
        step_end = std::max(step_end, std::max(m.compute_end, std::isnan(m.exchange_end) ? 0.0 : m.exchange_end));
      }
      step_start = step_end + late(rng);
    }
    const std::vector<TraceSlot> t = cp::prefill_trace(P, marks);
    double ring_end = 0;
    for (int r = 0; r < P; ++r) ring_end = std::max(ring_end, marks[size_t((P - 1) * P + r)].compute_end);
    for (int r = 0; r < P; ++r) {
      double spanned = 0;
      for (int s = 0; s < P; ++s) {
        const TraceSlot& x = slot(t, P, s, r);
        CHECK(x.compute_ms > 0);
        CHECK(std::isnan(x.exchange_ms) == (s == P - 1));
        spanned += x.compute_ms + x.idle_ms;
      }
      INFO("trial " << trial << " GPU " << r);
      CHECK(spanned == Approx(ring_end - marks[size_t(r)].compute_begin).epsilon(1e-12));
    }
  }
}

TEST_CASE("ring trace: clocks a few microseconds apart never make a negative wait", "[context_parallel]") {
  // GPU 1's clock runs 0.02 ms behind GPU 0's. Prefill: its step 1 appears to start 0.01 ms before its step 0 ended
  // (it waited on GPU 0's shard, whose clock is ahead) — no wait; the ring's end, read on GPU 0's clock, lies before
  // GPU 1's last end — no wait either.
  const std::vector<StepMarks> prefill = {
      {0, 1.0, 0, 0.5}, {0, 1.0, 0, 0.5},
      {1.0, 2.0, NAN, NAN}, {0.99, 2.01, NAN, NAN},
  };
  const std::vector<TraceSlot> t = cp::prefill_trace(2, prefill);
  CHECK(slot(t, 2, 0, 1).idle_ms == 0);
  CHECK(slot(t, 2, 1, 0).idle_ms == Approx(0.01).epsilon(1e-9));
  CHECK(slot(t, 2, 1, 1).idle_ms == 0);
  // Decode: GPU 0's merge appears to start before the slowest attention's end on GPU 1's clock — no wait, and a send
  // longer than the step leaves none either.
  const std::vector<StepMarks> decode = {
      {0, 1.0, NAN, NAN}, {0, 1.03, NAN, NAN},
      {1.02, 1.05, 0.9, 1.02}, {NAN, NAN, 0.99, 1.04},
  };
  const std::vector<TraceSlot> d = cp::decode_trace(2, decode);
  CHECK(slot(d, 2, 1, 0).idle_ms == 0);  // the step spans [1.03, 1.05], the merge 0.03 of it
  CHECK(slot(d, 2, 1, 1).idle_ms == 0);  // its send (0.05) outlasts the step (0.02)
  for (const TraceSlot& x : d) CHECK(x.idle_ms >= 0);
}

TEST_CASE("ring trace: marks that are not a ring are refused", "[context_parallel]") {
  const StepMarks ok{0, 1, NAN, NAN};
  CHECK_THROWS_AS(cp::prefill_trace(2, {ok, ok, ok}), std::invalid_argument);     // 3 marks for 2 × 2
  CHECK_THROWS_AS(cp::prefill_trace(0, {}), std::invalid_argument);               // no GPU
  CHECK_THROWS_AS(cp::prefill_trace(1, {{1, 0, NAN, NAN}}), std::invalid_argument);  // ends before it begins
  CHECK_THROWS_AS(cp::prefill_trace(1, {{0, NAN, NAN, NAN}}), std::invalid_argument);  // no end
  CHECK_THROWS_AS(cp::prefill_trace(1, {{0, 1, 0, NAN}}), std::invalid_argument);  // an exchange half marked
  CHECK_THROWS_AS(cp::decode_trace(2, {ok, ok, {2, 1.5, NAN, NAN}, ok}), std::invalid_argument);  // merge ends early
  CHECK_THROWS_AS(cp::decode_trace(1, {ok, {NAN, NAN, NAN, NAN}}), std::invalid_argument);  // no merge
  CHECK_NOTHROW(cp::decode_trace(1, {ok, {1, 2, NAN, NAN}}));
}

}  // namespace ATTNLAB_FILE_LOCAL
}  // namespace attnlab
