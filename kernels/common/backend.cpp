// attnlab kernels: the kernel backend (backend.h states what it does). It dispatches through the kernel
// table (kernel_table.h): a variant without a row has no kernel.
#include "kernels/common/backend.h"

#include "kernels/common/device_memory.h"
#include "kernels/common/kernel_table.h"
#include "kernels/context_parallel/ring_backend.h"

#include <stdexcept>

namespace attnlab::kernels {

KernelBackend::KernelBackend() : device_(probe_device()) {}

std::string KernelBackend::cannot_run(const VariantRequest& v, const Experiment& e) const {
  if (device_.sm_major < 8) return "the kernels need sm_80 or newer";
  const KernelRow* row = find_kernel_row(v.id);
  if (!row) return "no kernel for this variant yet";
  if (e.problem.gpus > 1) {
    if (!row->ring) return "no context-parallel kernel for this variant yet (problem.gpus > 1)";
    if (const std::string why = ring_refusal(e.problem); !why.empty()) return why;
  }
  return row->cannot_run(v, e, device_);
}

std::string KernelBackend::cannot_split(int64_t gpus) const { return gpus == 1 ? "" : nccl_refusal(int(gpus)); }

void KernelBackend::check_fits(const VariantRequest& v, const Experiment& e) const {
  check_device_memory(least_device_bytes(e.problem, v), v.shown_label());
}

void KernelBackend::run(const Experiment& e, const VariantRequest& v, const QKV& in, const TensorF64& truth,
                        VariantResult& into) {
  const KernelRow* row = find_kernel_row(v.id);
  if (!row) throw std::runtime_error("kernel backend: no kernel for variant " + v.id);
  if (e.problem.gpus > 1) return run_context_parallel(*row, e, v, in, truth, device_, into);
  row->run(e, v, in, truth, device_, into);
}

}  // namespace attnlab::kernels
