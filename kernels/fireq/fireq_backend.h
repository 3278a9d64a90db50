// attnlab kernels: the kernel backend's entry points for `fireq` — decode over the INT4 cache
// (kernels/fireq/fireq_decode.cu, sm_89+) and prefill with prefill_kv = fp8 (kernels/fireq/fireq_prefill_sm90.cu, sm_90a) —
// the two a row of the backend's kernel table calls: why the kernel cannot run an experiment (or ""), and one
// run — the reference's operands uploaded in the kernel's layout, a correctness launch with poisoned outputs
// measured against the FP64 truth, and timed launches.
#pragma once

#include "core/config.h"
#include "core/results.h"
#include "core/tensor.h"
#include "kernels/common/device.h"
#include "kernels/context_parallel/ring_attention.h"

#include <memory>
#include <string>

namespace attnlab::kernels {

std::string fireq_cannot_run(const VariantRequest& v, const Experiment& e, const DeviceInfo& device);

// Fills into.kernel. Throws std::runtime_error on a CUDA failure or an output left unwritten.
void fireq_run(const Experiment& e, const VariantRequest& v, const QKV& in, const TensorF64& truth,
               const DeviceInfo& device, VariantResult& into);

std::unique_ptr<RingVariant> fireq_ring(const Experiment& e, const VariantRequest& v, const QKV& in,
                                        const DeviceInfo& device);  // fireq_ring.cpp: prefill's ring, decode's shards

}  // namespace attnlab::kernels
