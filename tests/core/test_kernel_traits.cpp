// The one rule for which kernel generation runs a variant (core/kernel_traits.h): the kernel backend and
// the cost model both call it, so they cannot disagree about a tile size.
#include "core/config.h"
#include "core/kernel_traits.h"
#include "core/variants/kernel_param.h"
#include "sim/gpu_spec.h"
#include "sim/schedule.h"
#include "tests/catch.h"

#include <nlohmann/json.hpp>

namespace attnlab {
namespace ATTNLAB_FILE_LOCAL {

TEST_CASE("kernel_generation: flash2 takes wgmma for unsplit prefill on compute capability 9.0", "[kernels-rule]") {
  CHECK(kernel_generation("flash2", 128, 90, 4096, false, 0, 64) == 90);
  CHECK(kernel_generation("flash2", 128, 90, 4096, true, 0, 64) == 80);   // split-KV decode
  CHECK(kernel_generation("flash2", 128, 90, 32, false, 0, 64) == 80);    // fewer rows than a warpgroup
  CHECK(kernel_generation("flash2", 128, 80, 4096, false, 0, 64) == 80);  // no sm_90a
  CHECK(kernel_generation("flash2", 128, 90, 4096, false, 80, 64) == 80); // pinned
  CHECK(kernel_generation("flash2", 128, 80, 4096, false, 90, 64) == 0);  // pinned where it cannot run
  CHECK(kernel_generation("flash2", 96, 90, 4096, false, 0, 64) == 0);    // no kernel at d = 96
}

TEST_CASE("kernel_generation: a variant whose only kernel is the warpgroup one runs it for every problem",
          "[kernels-rule]") {
  // flash3_fp8 has no mma.sync kernel: decode and short prefills run its sm_90a prefill kernel (at q_len 1: a
  // 128-row block per query head) — the backend does, so the model must schedule that kernel too.
  CHECK(kernel_generation("flash3_fp8", 128, 90, 4096, false, 0, 128) == 90);
  CHECK(kernel_generation("flash3_fp8", 128, 90, 1, true, 0, 128) == 90);
  CHECK(kernel_generation("flash3_fp8", 64, 90, 24, false, 0, 128) == 90);
  CHECK(kernel_generation("flash3_fp8", 128, 80, 4096, false, 0, 128) == 0);  // no FP8 wgmma before sm_90a
  // turbo's prefill likewise (its mma.sync rows are decode's): a 24-row prefill runs the sm_90a kernel.
  CHECK(kernel_generation("turbo", 128, 90, 24, false, 0, 64) == 90);
  CHECK(kernel_generation("turbo", 128, 90, 1, true, 0, 64) == 80);  // decode: the warp-chain kernel
}

TEST_CASE("kernel_generation: int_flash runs only at the kernel's own tile width", "[kernels-rule]") {
  const int wg = find_kernel_traits("int_flash", 128, 90)->block_c, ms = find_kernel_traits("int_flash", 128, 80)->block_c;
  REQUIRE(wg != ms);
  CHECK(kernel_generation("int_flash", 128, 90, 4096, false, 0, wg) == 90);
  CHECK(kernel_generation("int_flash", 128, 90, 4096, false, 0, ms) == 80);
  CHECK(kernel_generation("int_flash", 128, 90, 32, false, 0, wg) == 90);  // the width decides, not the rows
  CHECK(kernel_generation("int_flash", 128, 90, 4096, false, 0, 32) == 0);
  CHECK(kernel_generation("int_flash", 128, 90, 4096, false, 90, ms) == 0);
  CHECK(kernel_generation("int_flash", 128, 80, 4096, false, 0, wg) == 0);
}

// The model's tiling is the kernel's: at block_c = 128 on an H100 the schedule takes the wgmma row even for
// a short query (before the shared rule, the model fell back to mma.sync there while the backend ran wgmma).
TEST_CASE("the cost model schedules the generation the kernel backend runs", "[kernels-rule]") {
  const Experiment e = parse_experiment(
      {{"problem", {{"batch", 1}, {"q_heads", 4}, {"kv_heads", 4}, {"q_len", 32}, {"kv_len", 1024}, {"head_dim", 128}}},
       {"variants", {{{"id", "int_flash"}, {"params", {{"block_c", 128}}}}, {{"id", "int_flash"}}}}});
  const sim::GpuSpec h100 = sim::load_gpu_spec("h100-sxm5");
  const sim::Schedule wide = sim::make_schedule(e.problem, e.variants[0], h100);
  CHECK(wide.block_c == 128);
  CHECK(wide.warpgroup_mma);
  const sim::Schedule narrow = sim::make_schedule(e.problem, e.variants[1], h100);
  CHECK(narrow.block_c == 64);
  CHECK_FALSE(narrow.warpgroup_mma);
}

// flash3_fp8 (kernels/fp8/flash3_fp8_sm90.cu): the model's CTA holds what the kernel's does — a 128-row E4M3 Q
// block and six stages of E4M3 K and Vᵀ, one byte per element — in prefill and in decode (the prefill kernel
// at q_len 1). The decode schedule once assumed FP16 tiles there and refused the kernel's six stages (416 KiB).
TEST_CASE("the cost model's shared memory for flash3_fp8 is its kernel's tiles, prefill and decode", "[kernels-rule]") {
  const sim::GpuSpec h100 = sim::load_gpu_spec("h100-sxm5");
  const KernelTraits& t = *find_kernel_traits("flash3_fp8", 128, 90);
  const double tiles = double(t.block_r) * 128 + double(t.stages) * 2 * t.block_c * 128;
  for (int64_t q_len : {4096, 1}) {
    INFO("q_len " << q_len);
    const Experiment e = parse_experiment(
        {{"problem", {{"batch", 1}, {"q_heads", 8}, {"kv_heads", 2}, {"q_len", q_len}, {"kv_len", 4096},
                      {"head_dim", 128}, {"phase", q_len == 1 ? "decode" : "prefill"}}},
         {"variants", {{{"id", "flash3_fp8"}}}}});
    const sim::Schedule s = sim::make_schedule(e.problem, e.variants[0], h100);
    CHECK(s.stages == t.stages);
    CHECK(s.smem_bytes == tiles);
    CHECK(s.smem_bytes <= h100.smem_per_cta_bytes);
  }
}

}  // namespace
}  // namespace attnlab

namespace attnlab {
namespace ATTNLAB_FILE_LOCAL {

// The `kernel` parameter's values and the generations they pin come from one table
// (core/variants/kernel_param.h), which the kernel backend and the cost model both read.
TEST_CASE("the kernel parameter: its choices are the table's, each pinning its generation", "[kernels-rule]") {
  const ParamSpec spec = variants::kernel_generation_param();
  REQUIRE(spec.choices.size() == std::size(variants::kKernelChoices));
  const std::vector<ParamSpec> specs{spec};
  for (size_t i = 0; i < spec.choices.size(); ++i) {
    CHECK(spec.choices[i] == variants::kKernelChoices[i].name);
    ParamValues v = ParamValues::defaults(specs);
    v.set(specs, "kernel", spec.choices[i], "test");
    CHECK(variants::pinned_generation(v) == variants::kKernelChoices[i].generation);
  }
  ParamValues v = ParamValues::defaults(specs);
  CHECK(variants::pinned_generation(v) == 0);  // the default is auto
  v.set(specs, "kernel", "mma_sync", "test");
  CHECK(variants::pinned_generation(v) == 80);
  v.set(specs, "kernel", "wgmma", "test");
  CHECK(variants::pinned_generation(v) == 90);
  CHECK(variants::pinned_generation(ParamValues::defaults({})) == 0);  // a variant without the parameter
}

TEST_CASE("balanced_warp_chains: the chain count whose busiest SM has the fewest tiles", "[kernels-rule]") {
  // An H100 (132 SMs) holding 3 CTAs of 4 warps each (fireq decode at d 128), B 16, N 32768 (512 tiles).
  // GQA 4:1, 128 pairs: 12 chains give 384 CTAs, ≤ 3 per SM, 43 tiles a warp. decode_splits stops at 11
  // (within 85% of its best wave fill): 352 CTAs, 3 on 88 SMs, 47 tiles a warp.
  CHECK(balanced_warp_chains(128, 512, 132, 3, 4, 128) == 12);
  CHECK(decode_splits(128, 132 * 12, 512, 128) == 11);
  // MHA, 512 pairs: 3 chains (384 CTAs, one wave, 171 tiles); 4 would need a second wave.
  CHECK(balanced_warp_chains(512, 512, 132, 3, 4, 128) == 3);
  // 2 CTAs per SM: 8 and 2 (one wave each).
  CHECK(balanced_warp_chains(128, 512, 132, 2, 4, 128) == 8);
  CHECK(balanced_warp_chains(512, 512, 132, 2, 4, 128) == 2);
  // Ties go to fewer chains: one SM of 2 CTAs × 4 warps holds at most 8 chains of one pair; over 10 tiles 8
  // chains run 2 tiles each, and so do 5 — the rule takes 5.
  CHECK(balanced_warp_chains(1, 10, 1, 2, 4, 128) == 5);
  CHECK(balanced_warp_chains(1, 2, 132, 3, 4, 128) == 2);  // the tiles bound it
  CHECK(balanced_warp_chains(1, 1000, 132, 3, 4, 8) == 8);  // max_chains bounds it
  // Pairs that fill the GPU several times over: one chain each.
  CHECK(balanced_warp_chains(100000, 512, 132, 3, 4, 128) == 1);
  // Nonsense in, one chain out.
  CHECK(balanced_warp_chains(0, 512, 132, 3, 4, 128) == 1);
  CHECK(balanced_warp_chains(128, 512, 0, 3, 4, 128) == 1);
}

}  // namespace
}  // namespace attnlab
