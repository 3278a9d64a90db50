// attnlab kernels: the kernel backend's entry points for `kivi` (kernels/kivi/kivi_decode.cu), the two a row of
// the backend's kernel table calls: why the kernel cannot run an experiment (or ""), and one run —
// the reference's cache uploaded in the kernel's layout, a correctness launch with poisoned outputs
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

std::string kivi_cannot_run(const VariantRequest& v, const Experiment& e, const DeviceInfo& device);

// Fills into.kernel. Throws std::runtime_error on a CUDA failure or an output left unwritten.
std::unique_ptr<RingVariant> kivi_ring(const Experiment& e, const VariantRequest& v, const QKV& in,
                                       const DeviceInfo& device);  // kivi_ring.cpp: decode over a sharded cache
void kivi_run(const Experiment& e, const VariantRequest& v, const QKV& in, const TensorF64& truth,
              const DeviceInfo& device, VariantResult& into);

}  // namespace attnlab::kernels
