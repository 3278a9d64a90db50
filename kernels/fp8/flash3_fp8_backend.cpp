// attnlab kernels: flash3_fp8's row of the kernel table (kernel_table.h) — which problems its kernel takes
// (Hopper only: FP8 wgmma; the reference's default blocks and P format, which are the kernel's tiles and
// conversion), and one run: the E4M3 inputs and FP32 block scales prepared on the host (flash3_fp8_host.h),
// a poisoned-output correctness launch, then the timed launches over rotating input copies (timing.h).
#include "kernels/fp8/flash3_fp8_host.h"
#include "kernels/common/kernel_path.h"
#include "kernels/common/kernel_table.h"
#include "kernels/common/timing.h"

#include "core/probes.h"
#include "core/producer_loads.h"
#include "core/variants/shared_probes.h"

#include <cuda_fp16.h>
#include <fmt/format.h>

#include <vector>

namespace attnlab::kernels {

std::string flash3_fp8_cannot_run(const VariantRequest& v, const Experiment& e, const DeviceInfo& device) {
  const int d = static_cast<int>(e.problem.head_dim);
  if (!flash3_fp8_supports(d)) return fmt::format("no flash3_fp8 kernel for head_dim {} (compiled: 64, 128)", d);
  if (!device.warpgroup_mma)
    return "the flash3_fp8 kernel needs FP8 warpgroup MMA: a compute-capability-9.0 GPU and a build for sm_90a";
  if (v.params.integer("block_r") != kFlash3Fp8Block || v.params.integer("block_c") != kFlash3Fp8Block)
    return fmt::format("the flash3_fp8 kernel's scale blocks are its {0}-row tiles: set block_r and block_c to {0}",
                       kFlash3Fp8Block);
  if (v.params.choice("p_format") != "e4m3") return "the flash3_fp8 kernel feeds P̃ to its FP8 MMA in E4M3 (p_format = e4m3)";
  return "";
}

void flash3_fp8_run(const Experiment& e, const VariantRequest& v, const QKV& in, const TensorF64& truth,
                    const DeviceInfo&, VariantResult& into) {
  const Problem& p = e.problem;
  const bool tma_producer = producer_loads(v, 90);  // core/producer_loads.h: the model's rule too
  const size_t rows = size_t(p.batch * p.q_heads * p.q_len);
  DeviceBuffer o(size_t(p.q_shape().count()) * sizeof(__half)), lse(rows * sizeof(float));
  // The variant's storage format: E4M3 Q, K, Vᵀ and FP32 block scales in HBM before the kernel starts.
  std::vector<Fp8Inputs> sets;
  sets.push_back(upload_fp8(p, in));
  const size_t copies = input_copies(sets[0].bytes());
  while (sets.size() < copies) sets.push_back(upload_fp8(p, in));
  const Fp8Output once = flash3_fp8_once(p, sets[0], true, tma_producer);
  std::vector<Flash3Fp8Args> args;
  for (const auto& s : sets) {
    args.push_back(flash3_fp8_args(p, s, o.as<__half>(), lse.as<float>()));
    args.back().tma_producer = tma_producer;
  }
  const auto ms = time_launches([&](size_t c) { ATTNLAB_CUDA(flash3_fp8_forward(args[c], nullptr)); }, copies);
  into.kernel = result_of(p, once.o, once.lse, truth, ms, double(sets[0].bytes() + o.bytes() + lse.bytes()));
  // The block scales as uploaded, under the reference's probe names and shapes: (B, heads, blocks).
  auto scales = [&](const std::vector<float>& flat, int64_t heads, int64_t len, const char* what) {
    const int64_t blocks = (len + kFlash3Fp8Block - 1) / kFlash3Fp8Block;
    std::vector<std::vector<float>> per;
    for (int64_t bh = 0; bh < p.batch * heads; ++bh) per.emplace_back(flat.begin() + bh * blocks, flat.begin() + (bh + 1) * blocks);
    return variants::per_head(p, heads, per, what);
  };
  into.kernel->probes["scales.q"] = scales(sets[0].scales_q, p.q_heads, p.q_len, "s_Q per query row block, as uploaded");
  into.kernel->probes["scales.k"] = scales(sets[0].scales_k, p.kv_heads, p.kv_len, "s_K per KV block, as uploaded");
  into.kernel->probes["scales.v"] = scales(sets[0].scales_v, p.kv_heads, p.kv_len, "s_V per KV block, as uploaded");
  into.kernel->probes["kernel.launch"] =
      labelled({"input_sets", "timed_runs", "arch", "tma_producer"},
               {double(copies), double(kTimedRuns), 90.0, double(tma_producer)}, "",
               "rotating input copies, timed launches, kernel generation (90 wgmma), K/V by a TMA producer warpgroup");
}

}  // namespace attnlab::kernels
