// attnlab sim: report.baselines (baselines.h).
#include "sim/baselines.h"

#include "core/error.h"
#include "sim/measurements.h"

#include <fmt/format.h>

#include <algorithm>

namespace attnlab::sim {

namespace {

// One problem as a measurement names it: the sizes, the masking and the GPUs it ran across (a time on four GPUs is no
// baseline for one); the softmax scale is the default one.
bool same_problem(const Problem& a, const Problem& b) {
  return a.batch == b.batch && a.q_heads == b.q_heads && a.kv_heads == b.kv_heads && a.q_len == b.q_len &&
         a.kv_len == b.kv_len && a.head_dim == b.head_dim && a.causal == b.causal && a.phase == b.phase &&
         a.gpus == b.gpus;
}

}  // namespace

std::vector<ExternalTiming> external_timings(const Experiment& e) {
  std::vector<ExternalTiming> out;
  for (size_t i = 0; i < e.baselines.size(); ++i) {
    std::string gpu;
    std::vector<Measurement> rows;
    try {
      rows = load_measurements(e.baselines[i], &gpu);
    } catch (const InputError& err) {
      fail_input(fmt::format("report.baselines[{}]", i), err.what());
    }
    for (const Measurement& m : rows) {
      if (m.implementation.empty() || !same_problem(m.problem, e.problem)) continue;  // attnlab's own, another shape
      const bool seen = std::any_of(out.begin(), out.end(),
                                    [&](const ExternalTiming& x) { return x.implementation == m.implementation; });
      if (!seen) out.push_back({m.implementation, m.variant.id, m.median_ms, gpu, e.baselines[i]});
    }
  }
  return out;
}

}  // namespace attnlab::sim
