// attnlab core: the measured timeline of one problem across GPUs — what each GPU did at each step of the ring
// (kernels/context_parallel/ring_attention.h), in the shape of the cost model's (sim/context_parallel_model.h's
// RingSlot), so the two stand side by side, step by step and GPU by GPU.
//
// The kernels' ring records, on one traced run, the moments each rank's streams reach (CUDA events, in ms from the
// rank's own origin — recorded where its streams start the run, all waiting on one event of GPU 0, so the ranks'
// clocks agree to the microseconds of a cross-GPU wait): per step the attention's begin and end on the compute
// stream and the exchange's on the communication stream. This pure function turns those marks into the slots of a
// timeline by the model's rules:
//   Prefill: a GPU's step s lasts from its attention's start at s to its start at s + 1 (the last step: to the
//     latest end of any GPU's last step, when the ring is done); its idle time is that span less its attention —
//     the wait for its next shard, i.e. for the slowest GPU upstream or the link. The exchange (NCCL's send and
//     receive of one step are one group: they finish together) runs under the attention.
//   Decode: step 0 is each GPU's attention to its shard, lasting until the slowest GPU's ends; step 1 is the
//     gather of the partials to GPU 0 and its merge, ending when the merge ends: GPU 0 computes the merge and idles
//     the rest of the step (the gather), each other GPU sends its partial and idles the rest.
#pragma once

#include <cmath>
#include <string>
#include <vector>

namespace attnlab::cp {

// One GPU's marks at one step, ms from its origin. A prefill's compute covers the step's blocks and merges (the
// last step's final store too); a decode's step 0 its attention, step 1 (GPU 0) the merge. An exchange's marks are
// NaN where the GPU exchanges nothing at that step (a prefill's last step; a decode's step 0).
struct StepMarks {
  double compute_begin = NAN, compute_end = NAN;
  double exchange_begin = NAN, exchange_end = NAN;
};

// One slot of the measured timeline.
struct TraceSlot {
  int gpu = 0, step = 0;
  double compute_ms = 0;
  double exchange_ms = NAN;  // its send and receive of the step (NaN: none)
  double idle_ms = 0;
};

// The slots, step-major ([step · gpus + gpu]), of `marks` (step-major as well: gpus · steps of them, steps = gpus
// for a prefill, 2 for a decode). Throws std::invalid_argument where the marks do not have that count, a compute
// mark is missing where the rules need one, or an interval ends before it begins.
std::vector<TraceSlot> prefill_trace(int gpus, const std::vector<StepMarks>& marks);
std::vector<TraceSlot> decode_trace(int gpus, const std::vector<StepMarks>& marks);

}  // namespace attnlab::cp
