#include "kernels/context_parallel/ring_backend.h"

#include "core/probes.h"
#include "kernels/common/timing.h"

#include <stdexcept>

namespace attnlab::kernels {

void run_context_parallel(const KernelRow& row, const Experiment& e, const VariantRequest& v, const QKV& in,
                          const TensorF64& truth, const DeviceInfo& device, VariantResult& into) {
  if (!row.ring) throw std::runtime_error("kernel backend: no context-parallel kernel for variant " + v.id);
  const Problem& p = e.problem;
  const std::unique_ptr<RingTransport> transport = nccl_transport(int(p.gpus));
  const std::unique_ptr<RingVariant> ring = row.ring(e, v, in, device);
  const RingRun run = run_ring(p, *ring, *transport, true);
  into.kernel = result_of(p, run.o, run.lse, truth, run.ms, run.io_bytes);
  into.kernel->probes["kernel.context_parallel"] = labelled(
      {"gpus", "wire_bytes", "timed_runs", "merge_ms"},
      {double(run.ranks), run.wire_bytes, double(run.ms.size()), run.merge_ms.empty() ? 0.0 : percentile(run.merge_ms, 0.5)},
      "",
      "GPUs of the ring (one rank each, NCCL), bytes the ring moved between them in one run (the K/V shards in the "
      "variant's storage format, or a decode's partial results), timed runs of the whole ring, and a decode's merge "
      "on GPU 0 (median ms from the last partial's arrival to the stored result; 0 for a prefill, whose merges "
      "follow each block)");
}

}  // namespace attnlab::kernels
