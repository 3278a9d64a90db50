// attnlab kernels: the kernel backend's `kivi` entry points (kivi_backend.h). The timing helpers below are
// kernels/backend.cpp's, copied until they move to kernels/timing.h.
#include "kernels/kivi_backend.h"

#include "core/metrics.h"
#include "core/variants/kivi_layout.h"
#include "kernels/backend.h"
#include "kernels/cuda_check.h"
#include "kernels/kivi_decode_host.h"

#include <cuda_fp16.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

namespace attnlab::kernels {

namespace {

double percentile(std::vector<float> v, double f) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(f * double(v.size())))];
}

// How many copies of `set_bytes` of inputs make one pass exceed twice the L2 (≤ 16, within half the free memory).
size_t input_copies(size_t set_bytes) {
  int l2 = 0;
  ATTNLAB_CUDA(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
  size_t free_bytes = 0, total_bytes = 0;
  ATTNLAB_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
  const size_t wanted = static_cast<size_t>(std::ceil(2.0 * l2 / double(set_bytes)));
  return std::clamp<size_t>(std::min(wanted, free_bytes / 2 / std::max<size_t>(set_bytes, 1)), 1, 16);
}

// kWarmupRuns, then kTimedRuns launches of launch(r % copies), each timed with CUDA events.
std::vector<float> time_launches(const std::function<void(size_t)>& launch, size_t copies) {
  for (int r = 0; r < kWarmupRuns; ++r) launch(size_t(r) % copies);
  ATTNLAB_CUDA(cudaDeviceSynchronize());
  EventTimer timer;
  std::vector<float> ms;
  for (int r = 0; r < kTimedRuns; ++r) {
    timer.start(nullptr);
    launch(size_t(r) % copies);
    ms.push_back(timer.stop_ms(nullptr));
  }
  return ms;
}

KernelResult result_of(const Problem& p, const Tensor& o, const std::vector<float>& lse, const TensorF64& truth,
                       const std::vector<float>& ms, double min_bytes) {
  KernelResult kr;
  kr.metrics = truth.size() > 0 ? compare_to_truth(o, truth) : no_metrics();
  kr.median_ms = percentile(ms, 0.5), kr.p10_ms = percentile(ms, 0.1), kr.p90_ms = percentile(ms, 0.9);
  kr.tops = p.flops() / (kr.median_ms * 1e-3) / 1e12;
  kr.hbm_gbps = min_bytes / (kr.median_ms * 1e-3) / 1e9;  // over the fewest bytes: inputs once, outputs once
  kr.probes["lse"] = {{p.batch, p.q_heads, p.q_len}, std::vector<double>(lse.begin(), lse.end()), {}, "logit",
                      "logsumexp per row, read back from the GPU"};
  return kr;
}

}  // namespace

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
