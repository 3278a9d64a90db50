// attnlab kernels: the kernel backend's `fireq` entry points (fireq_backend.h); timing from kernels/timing.h.
#include "kernels/fireq_backend.h"

#include "core/metrics.h"
#include "kernels/backend.h"
#include "kernels/cuda_check.h"
#include "kernels/fireq_decode_host.h"
#include "kernels/timing.h"

#include <cuda_bf16.h>
#include <fmt/format.h>

#include <vector>

namespace attnlab::kernels {

std::string fireq_cannot_run(const VariantRequest& v, const Experiment& e, const DeviceInfo& device) {
  const Problem& p = e.problem;
  if (device.sm_major * 10 + device.sm_minor < 89) return "the fireq kernel needs FP8 tensor cores (sm_89 or newer)";
  if (p.phase != Phase::decode)
    return "the fireq kernel is decode attention (phase = decode, one query token); prefill runs on the CPU";
  return fireq_kernel_refusal(v.params, p.head_dim, p.group());
}

void fireq_run(const Experiment& e, const VariantRequest& v, const QKV& in, const TensorF64& truth,
               const DeviceInfo& device, VariantResult& into) {
  const Problem& p = e.problem;
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
