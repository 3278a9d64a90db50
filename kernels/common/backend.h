// attnlab kernels: the runner's "kernel" backend (DESIGN.md: the second backend). For each variant with a
// row in the kernel table (kernel_table.h), the row prepares the inputs in the variant's storage format,
// runs the kernel once with a poisoned output (every element must be written), measures its error against
// the FP64 truth, and times it (timing.h): warm-up, then the median, p10 and p90 of kTimedRuns launches
// timed with CUDA events, rotating among input copies that together exceed twice the L2 cache, so no run
// reads another's inputs from L2.
#pragma once

#include "core/runner.h"
#include "kernels/common/device.h"
#include "kernels/common/timing.h"

namespace attnlab::kernels {

class KernelBackend : public Backend {
 public:
  KernelBackend();
  std::string name() const override { return "kernel"; }
  std::string unavailable() const override { return device_.usable ? "" : device_.reason; }
  std::string cannot_run(const VariantRequest& v, const Experiment& e) const override;
  // Refuses (InputError) a problem whose least device memory (device_memory.h) exceeds the GPU's free memory.
  void check_fits(const VariantRequest& v, const Experiment& e) const override;
  void run(const Experiment& e, const VariantRequest& v, const QKV& in, const TensorF64& truth,
           VariantResult& into) override;
  std::string device_name() const override { return device_.usable ? device_.name : ""; }
  // problem.gpus > 1 runs the context-parallel ring (kernels/context_parallel/) over NCCL, one GPU a rank: refused
  // where this build has no NCCL or the host fewer GPUs (ring_transport.h's nccl_refusal).
  std::string cannot_split(int64_t gpus) const override;

 private:
  DeviceInfo device_;
};

}  // namespace attnlab::kernels
