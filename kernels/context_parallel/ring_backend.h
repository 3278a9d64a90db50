// attnlab kernels: the kernel backend's run of a problem split across GPUs (problem.gpus > 1): the variant's ring
// (kernel_table.h's `ring` column) over NCCL, one GPU a rank, its output against the FP64 truth and its timed runs.
#pragma once

#include "kernels/common/kernel_table.h"

namespace attnlab::kernels {

void run_context_parallel(const KernelRow& row, const Experiment& e, const VariantRequest& v, const QKV& in,
                          const TensorF64& truth, const DeviceInfo& device, VariantResult& into);

}  // namespace attnlab::kernels
