// attnlab kernels: what every kernel family's backend row shares (kernel_table.h) — how many rotating
// input copies keep a timed launch from reading its inputs out of L2, the timing of launches with CUDA
// events, and a KernelResult from a correctness run and its timings.
#pragma once

#include "core/problem.h"
#include "core/results.h"
#include "core/tensor.h"
#include "kernels/common/sm_clock.h"

#include <cstddef>
#include <functional>
#include <vector>

namespace attnlab::kernels {

inline constexpr int kWarmupRuns = 5;
inline constexpr int kTimedRuns = 30;

// The f-quantile (0…1) of v: the element at rank ⌊f·n⌋ of the sorted values (the last for f = 1).
double percentile(std::vector<float> v, double f);

// How many copies of `set_bytes` of inputs make one pass exceed twice the L2 (≤ 16, within half the free
// memory).
size_t input_copies(size_t set_bytes);

// Timed launches: each one's milliseconds and, where the clock is known (sm_clock.h), the SM clock read as it ended.
struct Timings {
  std::vector<float> ms;
  std::vector<ClockSample> clocks;  // one per run, or none
};

// kWarmupRuns, then kTimedRuns launches of launch(r % copies), each timed with CUDA events, the SM clock read after
// each.
Timings time_launches(const std::function<void(size_t)>& launch, size_t copies);

// The clocks' lowest, median and highest (nullopt for no samples).
std::optional<KernelResult::Clock> clock_stats(const std::vector<ClockSample>& clocks);

// The kernel backend's result: o (B, Hq, Nq, d) and lse (B, Hq, Nq) of the correctness run against the
// FP64 truth (no metrics when truth is empty), the median/p10/p90 of the timed runs and their clock, TFLOP/s of the problem and
// GB/s over min_bytes (inputs once, outputs once), and the logsumexp as a probe.
KernelResult result_of(const Problem& p, const Tensor& o, const std::vector<float>& lse, const TensorF64& truth,
                       const Timings& timed, double min_bytes);

}  // namespace attnlab::kernels
