// attnlab kernels: the kernel backend (backend.h states what it does).
#include "kernels/backend.h"

#include "core/kernel_traits.h"
#include "core/metrics.h"
#include "core/variants/shared_probes.h"
#include "kernels/cuda_check.h"
#include "kernels/flash2_host.h"
#include "kernels/flash2_sm90.h"
#include "kernels/int_flash_sm90.h"
#include "kernels/int_flash_host.h"

#include <cuda_fp16.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <stdexcept>
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

// The scales the GPU computed for int_flash's inputs, under the reference's probe names and shapes, so the
// two backends' values sit side by side.
void add_gpu_scales(Probes& probes, const Problem& p, const IntFlashInputs& in) {
  std::vector<std::vector<float>> s_q, s_k, s_v;
  for (int64_t bh = 0; bh < p.batch * p.q_heads; ++bh)
    s_q.emplace_back(in.scales_q.begin() + bh * p.q_len, in.scales_q.begin() + (bh + 1) * p.q_len);
  for (int64_t bkv = 0; bkv < p.batch * p.kv_heads; ++bkv) {
    s_k.emplace_back(in.scales_k.begin() + bkv * in.kv_pad, in.scales_k.begin() + bkv * in.kv_pad + p.kv_len);
    if (!in.v_fp16) s_v.push_back({in.scales_v[size_t(bkv)]});
  }
  probes["scales.q"] = variants::per_head(p, p.q_heads, s_q, "S_Q per query token, computed on the GPU");
  probes["scales.k"] = variants::per_head(p, p.kv_heads, s_k, "S_K per key token, computed on the GPU");
  if (!in.v_fp16) probes["scales.v"] = variants::per_head(p, p.kv_heads, s_v, "S_V per (batch, KV head), computed on the GPU");
}

double arch_of(KernelPath path) { return path == KernelPath::warpgroup_mma ? 90.0 : 80.0; }

KernelPath chosen_path(const VariantRequest& v) {
  const std::string& choice = v.params.choice("kernel");
  return choice == "wgmma" ? KernelPath::warpgroup_mma : choice == "mma_sync" ? KernelPath::warp_mma : KernelPath::automatic;
}

// int_flash's generation by core/kernel_traits.h's rule (the cost model's too): its codes depend on the
// tile width, so a kernel runs it only at its own B_c. Returns "" and sets `path`, or why no kernel does.
std::string int_flash_path(const VariantRequest& v, const Problem& p, KernelPath& path) {
  const int d = static_cast<int>(p.head_dim), bc = static_cast<int>(v.params.integer("block_c"));
  const KernelPath asked = chosen_path(v);
  const int pinned = asked == KernelPath::warp_mma ? 80 : asked == KernelPath::warpgroup_mma ? 90 : 0;
  const int arch = warpgroup_mma_available() ? 90 : 80;
  switch (kernel_generation("int_flash", d, arch, long(p.q_len), false, pinned, bc)) {
    case 90: return path = KernelPath::warpgroup_mma, "";
    case 80: return path = KernelPath::warp_mma, "";
  }
  const KernelTraits* sync = find_kernel_traits("int_flash", d, 80);
  const KernelTraits* group = find_kernel_traits("int_flash", d, 90);
  const bool group_runs = arch == 90 && group && group->arch == 90;
  if (asked == KernelPath::warpgroup_mma && !group_runs)
    return "kernel = wgmma needs head_dim 64 or 128, a compute-capability-9.0 GPU and a build for sm_90a";
  std::string widths = asked == KernelPath::warpgroup_mma ? "" : fmt::format("{} (mma.sync)", sync->block_c);
  if (group_runs && asked != KernelPath::warp_mma)
    widths += fmt::format("{}{} (wgmma)", widths.empty() ? "" : " or ", group->block_c);
  return fmt::format("int_flash's kernels compute with B_c = {} keys: set block_c to match (its P codes depend on it)",
                     widths);
}

}  // namespace

KernelBackend::KernelBackend() : device_(probe_device()) {}

std::string KernelBackend::cannot_run(const VariantRequest& v, const Experiment& e) const {
  const int d = static_cast<int>(e.problem.head_dim);
  if (device_.sm_major < 8) return "the kernels need sm_80 or newer";
  if (v.id == "flash2") {
    if (!flash2_supports(d)) return fmt::format("no flash2 kernel for head_dim {} (compiled: 64, 128)", d);
    if (v.params.choice("kernel") == "wgmma" && !warpgroup_mma_available())
      return "kernel = wgmma needs a compute-capability-9.0 GPU and a build for sm_90a";
    return "";
  }
  if (v.id == "int_flash") {
    if (!int_flash_supports(d)) return fmt::format("no int_flash kernel for head_dim {} (compiled: 64, 128)", d);
    if (v.params.integer("r_p") != 127) return "the kernel implements Alg. 1's R = 127 (r_p = 127)";
    KernelPath path;
    return int_flash_path(v, e.problem, path);
  }
  return "no kernel for this variant yet";
}

void KernelBackend::run(const Experiment& e, const VariantRequest& v, const QKV& in, const TensorF64& truth,
                        VariantResult& into) {
  const Problem& p = e.problem;
  const size_t rows = size_t(p.batch * p.q_heads * p.q_len);
  DeviceBuffer o(size_t(p.q_shape().count()) * sizeof(__half)), lse(rows * sizeof(float));
  if (v.id == "int_flash") {
    KernelPath path = KernelPath::warp_mma;
    if (const std::string why = int_flash_path(v, p, path); !why.empty())
      throw std::runtime_error(why);
    // Alg. 1's storage format: INT8 Q, K, V and FP32 scales in HBM before the kernel starts.
    std::vector<IntFlashInputs> sets;
    const bool half = v.params.flag("v_fp16");
    sets.push_back(upload_int8(p, in, half));
    const size_t copies = input_copies(sets[0].bytes());
    while (sets.size() < copies) sets.push_back(upload_int8(p, in, half));
    const IntFlashOutput once = int_flash_once(p, sets[0], path);
    std::vector<IntFlashArgs> args;
    for (const auto& s : sets) {
      args.push_back(int_flash_args(p, s, o.as<__half>(), lse.as<float>()));
      args.back().path = once.path;
    }
    const auto ms = time_launches([&](size_t c) { ATTNLAB_CUDA(int_flash_forward(args[c], nullptr)); }, copies);
    into.kernel = result_of(p, once.o, once.lse, truth, ms, double(sets[0].bytes() + o.bytes() + lse.bytes()));
    add_gpu_scales(into.kernel->probes, p, sets[0]);
    into.kernel->probes["kernel.launch"] = labelled(
        {"input_sets", "timed_runs", "arch"}, {double(copies), double(kTimedRuns), arch_of(once.path)}, "",
        "rotating input copies, timed launches, kernel generation (80 mma.sync, 90 wgmma)");
    return;
  }
  // flash2's storage format: Q, K, V in FP16 in HBM before the kernel starts.
  std::vector<Flash2Inputs> sets;
  sets.push_back(upload_fp16(in));
  const size_t copies = input_copies(sets[0].bytes());
  while (sets.size() < copies) sets.push_back(upload_fp16(in));
  const Flash2Output once = flash2_once(p, sets[0], device_.sm_count, chosen_path(v));
  std::vector<Flash2Args> args;
  for (const auto& s : sets) {
    args.push_back(flash2_args(p, s, o.as<__half>(), lse.as<float>(), device_.sm_count));
    args.back().path = once.path;
    args.back().splits = once.splits;
  }
  DeviceBuffer workspace(flash2_workspace_bytes(args[0]));
  for (auto& a : args) a.workspace = workspace.as<float>();
  const auto ms = time_launches([&](size_t c) { ATTNLAB_CUDA(flash2_forward(args[c], nullptr)); }, copies);
  into.kernel = result_of(p, once.o, once.lse, truth, ms, double(sets[0].bytes() + o.bytes() + lse.bytes()));
  into.kernel->probes["kernel.launch"] = labelled(
      {"splits", "input_sets", "timed_runs", "arch"},
      {double(once.splits), double(copies), double(kTimedRuns), arch_of(once.path)},
      "", "split-KV CTAs per head, rotating input copies, timed launches, kernel generation (80 mma.sync, 90 wgmma)");
}

}  // namespace attnlab::kernels
