// attnlab kernels: the kernel table — one row per kernel family: the variant it computes and its two entry
// points, which the GPU backend (backend.h) dispatches through. Adding a kernel = its kernel file, its
// tile row in core/kernel_traits.h, its entry points in a <family>_backend.cpp and one row here.
//
// The backend checks what every row needs (a usable device, sm_80 or newer) before it asks a row.
#pragma once

#include "core/runner.h"
#include "kernels/common/device.h"
#include "kernels/common/kernel_path.h"
#include "kernels/context_parallel/ring_attention.h"

#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace attnlab::kernels {

// Why the family's kernel cannot compute `v` on experiment e with this device, or "" when it can.
using CannotRunFn = std::string (*)(const VariantRequest& v, const Experiment& e, const DeviceInfo& device);
// Runs the kernel: uploads the inputs in the variant's storage format, one poisoned-output correctness
// launch against the FP64 truth, then the timed launches (timing.h); fills into.kernel. Throws
// std::runtime_error on an internal failure.
using RunFn = void (*)(const Experiment& e, const VariantRequest& v, const QKV& in, const TensorF64& truth,
                       const DeviceInfo& device, VariantResult& into);
// The family's part of the context-parallel ring (ring_attention.h) for v on e's problem and inputs `in`, which must
// outlive it.
using RingFn = std::unique_ptr<RingVariant> (*)(const Experiment& e, const VariantRequest& v, const QKV& in,
                                                const DeviceInfo& device);

struct KernelRow {
  const char* variant;  // registry id
  CannotRunFn cannot_run;
  RunFn run;
  RingFn ring = nullptr;  // nullptr: the family has no context-parallel kernel yet (problem.gpus > 1 is refused)
};

// Entry points, one pair per family, each defined in its <family>_backend.cpp.
std::string flash2_cannot_run(const VariantRequest& v, const Experiment& e, const DeviceInfo& device);
void flash2_run(const Experiment& e, const VariantRequest& v, const QKV& in, const TensorF64& truth,
                const DeviceInfo& device, VariantResult& into);
std::unique_ptr<RingVariant> flash2_ring(const Experiment& e, const VariantRequest& v, const QKV& in,
                                         const DeviceInfo& device);
std::string int_flash_cannot_run(const VariantRequest& v, const Experiment& e, const DeviceInfo& device);
void int_flash_run(const Experiment& e, const VariantRequest& v, const QKV& in, const TensorF64& truth,
                   const DeviceInfo& device, VariantResult& into);
std::unique_ptr<RingVariant> int_flash_ring(const Experiment& e, const VariantRequest& v, const QKV& in,
                                            const DeviceInfo& device);
// int_flash's kernel generation for v on p (core/kernel_traits.h's rule: its P codes depend on the tile width): ""
// and `path` set, or why no kernel computes the variant's function (int_flash_backend.cpp; its ring takes it too).
std::string int_flash_path(const VariantRequest& v, const Problem& p, const DeviceInfo& device, KernelPath& path);

std::string flash3_fp8_cannot_run(const VariantRequest& v, const Experiment& e, const DeviceInfo& device);
void flash3_fp8_run(const Experiment& e, const VariantRequest& v, const QKV& in, const TensorF64& truth,
                    const DeviceInfo& device, VariantResult& into);
std::unique_ptr<RingVariant> flash3_fp8_ring(const Experiment& e, const VariantRequest& v, const QKV& in,
                                             const DeviceInfo& device);

std::string turbo_cannot_run(const VariantRequest& v, const Experiment& e, const DeviceInfo& device);
void turbo_run(const Experiment& e, const VariantRequest& v, const QKV& in, const TensorF64& truth,
               const DeviceInfo& device, VariantResult& into);
std::unique_ptr<RingVariant> turbo_ring(const Experiment& e, const VariantRequest& v, const QKV& in,
                                        const DeviceInfo& device);

std::span<const KernelRow> kernel_table();
const KernelRow* find_kernel_row(std::string_view variant);  // nullptr: no kernel computes the variant

}  // namespace attnlab::kernels
