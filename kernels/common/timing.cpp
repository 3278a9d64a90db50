// attnlab kernels: the timing and result helpers every kernel family's backend row uses (timing.h).
#include "kernels/common/timing.h"

#include "core/metrics.h"
#include "kernels/common/cuda_check.h"

#include <algorithm>
#include <cmath>

namespace attnlab::kernels {

double percentile(std::vector<float> v, double f) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(f * double(v.size())))];
}

size_t input_copies(size_t set_bytes) {
  int l2 = 0;
  ATTNLAB_CUDA(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
  size_t free_bytes = 0, total_bytes = 0;
  ATTNLAB_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
  const size_t wanted = static_cast<size_t>(std::ceil(2.0 * l2 / double(set_bytes)));
  return std::clamp<size_t>(std::min(wanted, free_bytes / 2 / std::max<size_t>(set_bytes, 1)), 1, 16);
}

Timings time_launches(const std::function<void(size_t)>& launch, size_t copies) {
  sample_sm_clock();  // NVML opened (once a process) before the warm-up, not between two timed runs
  for (int r = 0; r < kWarmupRuns; ++r) launch(size_t(r) % copies);
  ATTNLAB_CUDA(cudaDeviceSynchronize());
  EventTimer timer;
  Timings t;
  for (int r = 0; r < kTimedRuns; ++r) {
    timer.start(nullptr);
    launch(size_t(r) % copies);
    t.ms.push_back(timer.stop_ms(nullptr));  // synchronizes: the clock read next is the one the run ended at
    if (const auto c = sample_sm_clock()) t.clocks.push_back(*c);
  }
  if (t.clocks.size() != t.ms.size()) t.clocks.clear();  // all or none: a partial record would mislead
  return t;
}

std::optional<KernelResult::Clock> clock_stats(const std::vector<ClockSample>& clocks) {
  if (clocks.empty()) return std::nullopt;
  std::vector<float> mhz;
  KernelResult::Clock c;
  for (const ClockSample& s : clocks) mhz.push_back(float(s.sm_mhz));
  c.min_mhz = percentile(mhz, 0), c.median_mhz = percentile(mhz, 0.5), c.max_mhz = percentile(mhz, 1);
  c.runs = int(clocks.size());
  return c;
}

KernelResult result_of(const Problem& p, const Tensor& o, const std::vector<float>& lse, const TensorF64& truth,
                       const Timings& timed, double min_bytes) {
  const std::vector<float>& ms = timed.ms;
  KernelResult kr;
  kr.metrics = truth.size() > 0 ? compare_to_truth(o, truth) : no_metrics();
  kr.output = o;
  kr.median_ms = percentile(ms, 0.5), kr.p10_ms = percentile(ms, 0.1), kr.p90_ms = percentile(ms, 0.9);
  kr.tops = p.flops() / (kr.median_ms * 1e-3) / 1e12;
  kr.hbm_gbps = min_bytes / (kr.median_ms * 1e-3) / 1e9;  // over the fewest bytes: inputs once, outputs once
  kr.sm_clock = clock_stats(timed.clocks);
  kr.probes["lse"] = {{p.batch, p.q_heads, p.q_len}, std::vector<double>(lse.begin(), lse.end()), {}, "logit",
                      "logsumexp per row, read back from the GPU"};
  return kr;
}

}  // namespace attnlab::kernels
