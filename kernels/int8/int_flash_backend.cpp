// attnlab kernels: int_flash's row of the kernel table (kernel_table.h) — which problems its kernels take
// (core/kernel_traits.h's rule: its P codes depend on the tile width, so a kernel runs it only at its own
// B_c), and one run: Alg. 1's INT8 inputs and FP32 scales prepared on the GPU, a poisoned-output
// correctness launch, then the timed launches over rotating input copies (timing.h).
#include "kernels/int8/int_flash_host.h"
#include "kernels/common/kernel_table.h"
#include "kernels/common/timing.h"

#include "core/kernel_traits.h"
#include "core/producer_loads.h"
#include "core/variants/int_flash_accumulation.h"
#include "core/variants/kernel_param.h"
#include "core/variants/shared_probes.h"

#include <cuda_fp16.h>
#include <fmt/format.h>

#include <stdexcept>
#include <vector>

namespace attnlab::kernels {

// int_flash's generation by core/kernel_traits.h's rule (the cost model's too). Returns "" and sets
// `path`, or why no kernel computes the variant's function.
std::string int_flash_path(const VariantRequest& v, const Problem& p, const DeviceInfo& device, KernelPath& path) {
  const int d = static_cast<int>(p.head_dim), bc = static_cast<int>(v.params.integer("block_c"));
  const int pinned = variants::pinned_generation(v.params);
  const int arch = device.warpgroup_mma ? 90 : 80;
  switch (kernel_generation("int_flash", d, arch, long(p.q_len), false, pinned, bc)) {
    case 90: return path = KernelPath::warpgroup_mma, "";
    case 80: return path = KernelPath::warp_mma, "";
  }
  const KernelTraits* sync = find_kernel_traits("int_flash", d, 80);
  const KernelTraits* group = find_kernel_traits("int_flash", d, 90);
  const bool group_runs = arch == 90 && group && group->arch == 90;
  if (pinned == 90 && !group_runs)
    return "kernel = wgmma needs head_dim 64 or 128, a compute-capability-9.0 GPU and a build for sm_90a";
  std::string widths = pinned == 90 ? "" : fmt::format("{} (mma.sync)", sync->block_c);
  if (group_runs && pinned != 80) widths += fmt::format("{}{} (wgmma)", widths.empty() ? "" : " or ", group->block_c);
  return fmt::format("int_flash's kernels compute with B_c = {} keys: set block_c to match (its P codes depend on it)",
                     widths);
}

namespace {

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

}  // namespace

std::string int_flash_cannot_run(const VariantRequest& v, const Experiment& e, const DeviceInfo& device) {
  const int d = static_cast<int>(e.problem.head_dim);
  if (!int_flash_supports(d)) return fmt::format("no int_flash kernel for head_dim {} (compiled: 64, 128)", d);
  if (v.params.integer("r_p") != 127) return "the kernel implements Alg. 1's R = 127 (r_p = 127)";
  KernelPath path;
  if (std::string why = int_flash_path(v, e.problem, device, path); !why.empty()) return why;
  if (variants::pv_across_tiles(v.params) && path != KernelPath::warpgroup_mma)
    return "pv_accumulation = across_tiles runs on the wgmma kernel (block_c 128 on an sm_90a GPU); the mma.sync "
           "kernel adds P·V per tile";
  return "";
}

void int_flash_run(const Experiment& e, const VariantRequest& v, const QKV& in, const TensorF64& truth,
                   const DeviceInfo& device, VariantResult& into) {
  const Problem& p = e.problem;
  const size_t rows = size_t(p.batch * p.q_heads * p.q_len);
  DeviceBuffer o(size_t(p.q_shape().count()) * sizeof(__half)), lse(rows * sizeof(float));
  KernelPath path = KernelPath::warp_mma;
  if (const std::string why = int_flash_path(v, p, device, path); !why.empty()) throw std::runtime_error(why);
  // Alg. 1's storage format: INT8 Q, K, V and FP32 scales in HBM before the kernel starts.
  std::vector<IntFlashInputs> sets;
  const bool half = v.params.flag("v_fp16");
  sets.push_back(upload_int8(p, in, half));
  const size_t copies = input_copies(sets[0].bytes());
  while (sets.size() < copies) sets.push_back(upload_int8(p, in, half));
  // The wgmma kernel's loads, by core/producer_loads.h's rule (the variant's kv_loads), as the cost model schedules them.
  const IntFlashSchedule loads{.tma_producer = producer_loads(v, 90),
                               .pv_across_tiles = variants::pv_across_tiles(v.params)};
  const IntFlashOutput once = int_flash_once(p, sets[0], path, false, loads);
  std::vector<IntFlashArgs> args;
  for (const auto& s : sets) {
    args.push_back(int_flash_args(p, s, o.as<__half>(), lse.as<float>()));
    args.back().path = once.path;
    args.back().tma_producer = loads.tma_producer;
    args.back().pv_across_tiles = loads.pv_across_tiles;
  }
  const auto ms = time_launches([&](size_t c) { ATTNLAB_CUDA(int_flash_forward(args[c], nullptr)); }, copies);
  into.kernel = result_of(p, once.o, once.lse, truth, ms, double(sets[0].bytes() + o.bytes() + lse.bytes()));
  add_gpu_scales(into.kernel->probes, p, sets[0]);
  const bool tma_producer = once.path == KernelPath::warpgroup_mma && loads.tma_producer;
  into.kernel->probes["kernel.launch"] =
      labelled({"input_sets", "timed_runs", "arch", "tma_producer"},
               {double(copies), double(kTimedRuns), double(generation_of(once.path)), double(tma_producer)}, "",
               "rotating input copies, timed launches, kernel generation (80 mma.sync, 90 wgmma), K/V by a TMA "
               "producer warpgroup");
}

}  // namespace attnlab::kernels
