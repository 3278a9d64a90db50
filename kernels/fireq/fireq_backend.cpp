// attnlab kernels: the kernel backend's `fireq` entry points (fireq_backend.h); timing from kernels/common/timing.h.
#include "kernels/fireq/fireq_backend.h"

#include "core/metrics.h"
#include "core/producer_loads.h"
#include "kernels/common/backend.h"
#include "kernels/common/cuda_check.h"
#include "kernels/fireq/fireq_decode_host.h"
#include "kernels/fireq/fireq_prefill_host.h"
#include "kernels/common/kernel_path.h"
#include "kernels/common/timing.h"

#include <cuda_bf16.h>
#include <fmt/format.h>

#include <vector>

namespace attnlab::kernels {

namespace {

bool three_stage(const VariantRequest& v) { return v.params.choice("pipeline") == "three_stage"; }

// Prefill: the sm_90a kernel (fireq_prefill.h) on the INT4 cache or App. D's FP8 K/V, and its host side;
// timing as flash3_fp8's.
void run_prefill(const Experiment& e, const VariantRequest& v, const QKV& in, const TensorF64& truth,
                 VariantResult& into) {
  const Problem& p = e.problem;
  const FireqPrefillHostInputs host = fireq_prefill_host_inputs(p, in, v.params);
  std::vector<FireqPrefillDeviceInputs> sets;
  sets.push_back(upload_fireq_prefill(host));
  const size_t copies = input_copies(sets[0].bytes());
  while (sets.size() < copies) sets.push_back(upload_fireq_prefill(host));
  const bool three = three_stage(v);
  // The TMA producer where the kernel has one (the FP8 mode, either order; core/producer_loads.h, the
  // model's rule too).
  const bool tma_producer = producer_loads(v, 90);
  const FireqPrefillOutput once = fireq_prefill_once(p, sets[0], three, true, tma_producer);
  DeviceBuffer o(size_t(p.q_shape().count()) * sizeof(__nv_bfloat16)),
      lse(size_t(p.batch * p.q_heads * p.q_len) * sizeof(float));
  std::vector<FireqPrefillArgs> args;
  for (const FireqPrefillDeviceInputs& s : sets) {
    args.push_back(fireq_prefill_args(p, s, o.as<__nv_bfloat16>(), lse.as<float>()));
    args.back().three_stage = three;
    args.back().tma_producer = tma_producer;
  }
  const auto ms = time_launches([&](size_t c) { ATTNLAB_CUDA(fireq_prefill_forward(args[c], nullptr)); }, copies);
  into.kernel = result_of(p, once.o, once.lse, truth, ms, double(sets[0].bytes() + o.bytes() + lse.bytes()));
  into.kernel->probes["kernel.launch"] = labelled(
      {"three_stage", "int4_kv", "k_tile", "fp16_softmax", "tma_producer", "input_sets", "timed_runs"},
      {double(three), double(host.int4_kv), double(host.k_tile), double(host.fp16_softmax), double(tma_producer),
       double(copies), double(kTimedRuns)},
      "",
      "the loop order (1 = FireQ Alg. 1's three stages), the K/V read (1 = the INT4 cache through §3.1.1's LUT, 0 = "
      "App. D's FP8), K's FP8 scale per KV tile (1) or per key (0), the softmax in FP16 (1, §3.2.2) or FP32 (0), K/V "
      "copied by a TMA producer warpgroup (1) or the consumers' cp.async (0), rotating input copies, timed launches");
}

}  // namespace

std::string fireq_cannot_run(const VariantRequest& v, const Experiment& e, const DeviceInfo& device) {
  const Problem& p = e.problem;
  if (device.sm_major * 10 + device.sm_minor < 89) return "the fireq kernel needs FP8 tensor cores (sm_89 or newer)";
  if (p.phase == Phase::decode) return fireq_kernel_refusal(v.params, p.head_dim, p.group());
  if (!device.warpgroup_mma) return "the fireq prefill kernel is FP8 wgmma only (an sm_90a GPU)";
  return fireq_prefill_refusal(v.params, p.head_dim, three_stage(v));
}

void fireq_run(const Experiment& e, const VariantRequest& v, const QKV& in, const TensorF64& truth,
               const DeviceInfo& device, VariantResult& into) {
  const Problem& p = e.problem;
  if (p.phase != Phase::decode) return run_prefill(e, v, in, truth, into);
  // FireQ's storage formats before the kernel starts: the INT4 K̃/V cache with E4M3 token scales and the
  // E4M3 query with its Eq. 2 scale, built by the reference's own steps.
  const FireqHostInputs host = fireq_host_inputs(p, in, v.params);
  std::vector<FireqDeviceInputs> sets;
  sets.push_back(upload_fireq(p, host));
  const size_t copies = input_copies(sets[0].bytes());
  while (sets.size() < copies) sets.push_back(upload_fireq(p, host));
  const int chains = fireq_chains_here(p, device.sm_count);
  const FireqDecodeOutput once = fireq_decode_once(p, sets[0], chains);

  const size_t rows = size_t(p.batch * p.q_heads);
  DeviceBuffer o(size_t(p.q_shape().count()) * sizeof(__nv_bfloat16)), lse(rows * sizeof(float));
  std::vector<FireqDecodeArgs> args;
  for (const FireqDeviceInputs& s : sets) args.push_back(fireq_decode_args(p, s, o.as<__nv_bfloat16>(), lse.as<float>(), chains));
  DeviceBuffer workspace(fireq_decode_workspace_bytes(args[0]));
  for (FireqDecodeArgs& a : args) a.workspace = workspace.as<float>();
  const auto ms = time_launches([&](size_t c) { ATTNLAB_CUDA(fireq_decode(args[c], nullptr)); }, copies);
  into.kernel = result_of(p, once.o, once.lse, truth, ms, double(sets[0].bytes() + o.bytes() + lse.bytes()));
  into.kernel->probes["kernel.launch"] = labelled(
      {"chains", "input_sets", "timed_runs", "cache_bytes"},
      {double(chains), double(copies), double(kTimedRuns), double(sets[0].tiles.bytes())}, "",
      "chains (warps) per (batch, KV head), rotating input copies, timed launches, bytes of one cache copy on the "
      "device (fireq_layout.h: INT4 K̃ and V codes, E4M3 token scales, the last tile padded)");
}

}  // namespace attnlab::kernels
