// attnlab kernels: the kernel backend's `kivi` entry points (kivi_backend.h); timing from kernels/common/timing.h.
#include "kernels/kivi/kivi_backend.h"

#include "core/context_parallel.h"
#include "core/metrics.h"
#include "core/variants/kivi_layout.h"
#include "kernels/common/backend.h"
#include "kernels/common/cuda_check.h"
#include "kernels/kivi/kivi_decode_host.h"
#include "kernels/common/timing.h"

#include <cuda_fp16.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

namespace attnlab::kernels {

std::string kivi_cannot_run(const VariantRequest& v, const Experiment& e, const DeviceInfo& device) {
  const Problem& p = e.problem;
  const int d = static_cast<int>(p.head_dim), bits = static_cast<int>(v.params.integer("bits"));
  const int64_t group = v.params.integer("group");
  if (device.sm_major < 8) return "the kernels need sm_80 or newer";
  if (p.phase != Phase::decode) return "the kivi kernel is decode attention (phase = decode, one query token)";
  if (d != 64 && d != 128) return fmt::format("no kivi kernel for head_dim {} (compiled: 64, 128)", d);
  if (p.group() > 8) return fmt::format("the kivi kernel holds ≤ 8 query heads per KV head (got {})", p.group());
  if (bits != 2 && bits != 4) return fmt::format("the kivi kernel reads 2- or 4-bit caches (got bits = {})", bits);
  if (!kivi_layout::supports(d, bits, group))
    return fmt::format("the kivi kernel needs group a power of two ≥ 16 (got {})", group);
  if (p.gpus > 1 && cp::kShardAlign % group != 0)
    return fmt::format("kivi across GPUs needs group ≤ {} (the shards' token alignment; got {})", cp::kShardAlign, group);
  return "";
}

void kivi_run(const Experiment& e, const VariantRequest& v, const QKV& in, const TensorF64& truth,
              const DeviceInfo& device, VariantResult& into) {
  const Problem& p = e.problem;
  // KIVI's storage format: the compressed cache (codes, FP16 scales and zeros, FP16 residual) and an FP16
  // query in HBM before the kernel starts, built by the reference's own quantizer.
  const std::vector<quant::KiviCache> caches = kivi_host_caches(p, in, v.params);
  std::vector<KiviDeviceCache> sets;
  sets.push_back(upload_kivi_cache(caches));
  const DeviceBuffer q = upload_query_fp16(in.q);
  const size_t copies = input_copies(sets[0].bytes());
  while (sets.size() < copies) sets.push_back(upload_kivi_cache(caches));
  const int chains = kivi_chains_here(p, sets[0], device.sm_count);
  const KiviDecodeOutput once = kivi_decode_once(p, sets[0], q.as<__half>(), chains);

  const size_t rows = size_t(p.batch * p.q_heads);
  DeviceBuffer o(size_t(p.q_shape().count()) * sizeof(__half)), lse(rows * sizeof(float));
  std::vector<KiviDecodeArgs> args;
  for (const KiviDeviceCache& s : sets) args.push_back(kivi_decode_args(p, s, q.as<__half>(), o.as<__half>(), lse.as<float>(), chains));
  DeviceBuffer workspace(kivi_decode_workspace_bytes(args[0]));
  for (KiviDecodeArgs& a : args) a.workspace = workspace.as<float>();
  const auto ms = time_launches([&](size_t c) { ATTNLAB_CUDA(kivi_decode(args[c], nullptr)); }, copies);
  into.kernel = result_of(p, once.o, once.lse, truth, ms, double(sets[0].bytes() + q.bytes() + o.bytes() + lse.bytes()));
  into.kernel->probes["kernel.launch"] = labelled(
      {"chains", "input_sets", "timed_runs", "cache_bytes"},
      {double(chains), double(copies), double(kTimedRuns), double(sets[0].bytes())}, "",
      "chains (warps) per (batch, KV head), rotating cache copies, timed launches, bytes of one cache copy on "
      "the device (kivi_layout.h: codes, FP16 s and z, FP16 residual, the last tiles padded)");
}

}  // namespace attnlab::kernels
