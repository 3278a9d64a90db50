#include "kernels/context_parallel/ring_backend.h"

#include "core/probes.h"
#include "kernels/common/timing.h"

#include <cmath>
#include <stdexcept>

namespace attnlab::kernels {

namespace {

// The traced run's timeline (RingRun::trace): [step, GPU, (compute, idle, exchange)] in ms, an exchange of 0 where
// the GPU exchanged nothing at that step.
ProbeArray timeline_probe(const RingRun& run) {
  ProbeArray a;
  const int64_t gpus = run.ranks, steps = int64_t(run.trace.size()) / run.ranks;
  a.shape = {steps, gpus, 3};
  std::vector<double> values;
  for (const cp::TraceSlot& s : run.trace) {
    values.push_back(s.compute_ms);
    values.push_back(s.idle_ms);
    values.push_back(std::isnan(s.exchange_ms) ? 0.0 : s.exchange_ms);
  }
  a.values = std::move(values);
  a.unit = "ms";
  a.help =
      "One traced run of the ring after the timed ones, per step and GPU: its attention and merges (compute), the "
      "time it waited for the step to end (idle: for its next shard, the slowest GPU, or a decode's gather), and its "
      "exchange on the communication stream (the shard sent on and the next received; a decode's partial) — the "
      "measured counterpart of the cost model's timeline. Each GPU's events are read against its own start; the "
      "starts agree to a cross-GPU wait's microseconds.";
  return a;
}

}  // namespace

void run_context_parallel(const KernelRow& row, const Experiment& e, const VariantRequest& v, const QKV& in,
                          const TensorF64& truth, const DeviceInfo& device, VariantResult& into) {
  if (!row.ring) throw std::runtime_error("kernel backend: no context-parallel kernel for variant " + v.id);
  const Problem& p = e.problem;
  const std::unique_ptr<RingTransport> transport = nccl_transport(int(p.gpus));
  const std::unique_ptr<RingVariant> ring = row.ring(e, v, in, device);
  const RingRun run = run_ring(p, *ring, *transport, true);
  into.kernel = result_of(p, run.o, run.lse, truth, Timings{run.ms, {}}, run.io_bytes);  // no clock across GPUs
  into.kernel->probes["kernel.context_parallel"] = labelled(
      {"gpus", "wire_bytes", "timed_runs", "merge_ms"},
      {double(run.ranks), run.wire_bytes, double(run.ms.size()), run.merge_ms.empty() ? 0.0 : percentile(run.merge_ms, 0.5)},
      "",
      "GPUs of the ring (one rank each, NCCL), bytes the ring moved between them in one run (the K/V shards in the "
      "variant's storage format, or a decode's partial results), timed runs of the whole ring, and a decode's merge "
      "on GPU 0 (median ms from the last partial's arrival to the stored result; 0 for a prefill, whose merges "
      "follow each block)");
  if (!run.trace.empty()) into.kernel->probes["kernel.context_parallel.timeline"] = timeline_probe(run);
}

}  // namespace attnlab::kernels
