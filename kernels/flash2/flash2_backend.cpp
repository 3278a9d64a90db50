// attnlab kernels: flash2's row of the kernel table (kernel_table.h) — which problems its kernels take,
// and one run: Q, K, V uploaded in FP16 (the variant's storage format), a poisoned-output correctness
// launch, then the timed launches over rotating input copies (timing.h).
#include "kernels/flash2/flash2_host.h"
#include "kernels/common/kernel_table.h"
#include "kernels/common/timing.h"

#include "core/variants/kernel_param.h"
#include "core/probes.h"

#include <cuda_fp16.h>
#include <fmt/format.h>

#include <vector>

namespace attnlab::kernels {

std::string flash2_cannot_run(const VariantRequest& v, const Experiment& e, const DeviceInfo& device) {
  const int d = static_cast<int>(e.problem.head_dim);
  if (!flash2_supports(d)) return fmt::format("no flash2 kernel for head_dim {} (compiled: 64, 128)", d);
  if (variants::pinned_generation(v.params) == 90 && !device.warpgroup_mma)
    return "kernel = wgmma needs a compute-capability-9.0 GPU and a build for sm_90a";
  return "";
}

void flash2_run(const Experiment& e, const VariantRequest& v, const QKV& in, const TensorF64& truth,
                const DeviceInfo& device, VariantResult& into) {
  const Problem& p = e.problem;
  const size_t rows = size_t(p.batch * p.q_heads * p.q_len);
  DeviceBuffer o(size_t(p.q_shape().count()) * sizeof(__half)), lse(rows * sizeof(float));
  // flash2's storage format: Q, K, V in FP16 in HBM before the kernel starts.
  std::vector<Flash2Inputs> sets;
  sets.push_back(upload_fp16(in));
  const size_t copies = input_copies(sets[0].bytes());
  while (sets.size() < copies) sets.push_back(upload_fp16(in));
  // The wgmma generation's loads, tile and row blocks from the variant's kv_loads, kv_tile and row_blocks.
  const Flash2Schedule schedule = flash2_schedule_of(v, p);
  const Flash2Output once = flash2_once(p, sets[0], device.sm_count,
                                        path_of_generation(variants::pinned_generation(v.params)), 0, schedule);
  std::vector<Flash2Args> args;
  for (const auto& s : sets) {
    args.push_back(flash2_args(p, s, o.as<__half>(), lse.as<float>(), device.sm_count));
    args.back().path = once.path;
    args.back().splits = once.splits;
    args.back().tma_producer = schedule.tma_producer;
    args.back().wide_tile = schedule.wide_tile;
    args.back().persistent = schedule.persistent, args.back().head_major = schedule.head_major;
    args.back().dynamic_order = schedule.dynamic_order;
  }
  DeviceBuffer workspace(flash2_workspace_bytes(args[0]));
  for (auto& a : args) a.workspace = workspace.as<float>();
  const auto ms = time_launches([&](size_t c) { ATTNLAB_CUDA(flash2_forward(args[c], nullptr)); }, copies);
  into.kernel = result_of(p, once.o, once.lse, truth, ms, double(sets[0].bytes() + o.bytes() + lse.bytes()));
  into.kernel->probes["kernel.launch"] = labelled(
      {"splits", "input_sets", "timed_runs", "arch", "tma_producer", "block_c", "persistent", "dynamic_order"},
      {double(once.splits), double(copies), double(kTimedRuns), double(generation_of(once.path)),
       double(once.tma_producer), double(once.block_c), double(once.persistent), double(once.dynamic_order)},
      "", "split-KV CTAs per head, rotating input copies, timed launches, kernel generation (80 mma.sync, 90 wgmma), "
      "K/V by TMA (1: a producer warpgroup's in prefill, each decode chain's own) or cp.async (0), keys per K/V tile "
      "of the prefill kernel (0: the decode kernel), persistent CTAs (1: one per SM looping over the row blocks), "
      "their blocks from a counter (1) or c, c + CTAs, … (0)");
}

}  // namespace attnlab::kernels
