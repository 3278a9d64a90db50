// Every variant with a kernel runs on it at its default parameters: on an H200 (sm_90a, described by hand: no GPU
// needed, the kernel table's support checks read the device from its DeviceInfo), for every phase the variant has,
// head dims 64 and 128, one and four query heads per KV head. A default that drifts off its kernel (fireq's
// block_c was 64 where its prefill kernel's KV tile is 128) fails here with the kernel's own reason.
#include "core/config.h"
#include "core/registry.h"
#include "kernels/common/device.h"
#include "kernels/common/kernel_table.h"
#include "tests/catch.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <string>

namespace attnlab {
namespace ATTNLAB_FILE_LOCAL {

// An H200 as probe_device() describes it with the sm_90a build.
kernels::DeviceInfo h200() {
  kernels::DeviceInfo dev;
  dev.usable = true, dev.name = "NVIDIA H200 described by hand", dev.sm_major = 9, dev.sm_minor = 0;
  dev.sm_count = 132, dev.memory_gib = 139.8, dev.smem_per_block_optin = 227 * 1024, dev.warpgroup_mma = true;
  return dev;
}

// The variant at its defaults (no "params") on a problem of the config's usual sizes.
Experiment defaults_experiment(const std::string& id, Phase phase, int64_t d, int64_t q_heads, int64_t kv_heads) {
  const bool decode = phase == Phase::decode;
  return parse_experiment({{"problem",
                            {{"batch", 2}, {"q_heads", q_heads}, {"kv_heads", kv_heads}, {"q_len", decode ? 1 : 1024},
                             {"kv_len", decode ? 4096 : 1024}, {"head_dim", d}, {"causal", !decode},
                             {"phase", decode ? "decode" : "prefill"}}},
                           {"variants", {{{"id", id}}}},
                           {"backends", {"kernel"}}});
}

// The phases a variant's reference has and its kernel does not compute, with the start of the kernel's reason.
struct NoKernelPhase {
  const char* variant;
  Phase phase;
  const char* reason;
};
constexpr NoKernelPhase kNoKernelPhases[] = {
    {"kivi", Phase::prefill, "the kivi kernel is decode attention"},
};

const NoKernelPhase* no_kernel_phase(const std::string& variant, Phase phase) {
  for (const NoKernelPhase& n : kNoKernelPhases)
    if (variant == n.variant && phase == n.phase) return &n;
  return nullptr;
}

TEST_CASE("kernel table: every variant's default parameters run on its kernel on an sm_90a GPU", "[kernels]") {
  const kernels::DeviceInfo dev = h200();
  size_t ran = 0;
  for (const kernels::KernelRow& row : kernels::kernel_table()) {
    const VariantSpec* spec = find_variant(row.variant);
    REQUIRE(spec);
    for (const Phase phase : spec->phases)
      for (const int64_t d : {64, 128})
        for (const int64_t kv_heads : {8, 2}) {
          const Experiment e = defaults_experiment(row.variant, phase, d, 8, kv_heads);
          INFO(fmt::format("{} {} d={} 8/{} heads", row.variant, to_string(phase), d, kv_heads));
          const std::string why = row.cannot_run(e.variants[0], e, dev);
          if (const NoKernelPhase* none = no_kernel_phase(row.variant, phase)) {
            CHECK(why.rfind(none->reason, 0) == 0);  // refused, and the refusal says why
          } else {
            CHECK(why == "");
            ++ran;
          }
        }
  }
  // flash2, flash3_fp8, turbo and fireq in both phases, int_flash in prefill, kivi in decode; 4 problems each.
  CHECK(ran == 10 * 4);
}

TEST_CASE("kernel table: fireq's default block_c is its prefill kernel's KV tile", "[kernels][fireq]") {
  // The case above with the reason it would give: a block_c the prefill kernel does not compute is refused, named.
  const kernels::KernelRow* row = kernels::find_kernel_row("fireq");
  REQUIRE(row);
  Experiment e = defaults_experiment("fireq", Phase::prefill, 128, 8, 8);
  CHECK(row->cannot_run(e.variants[0], e, h200()) == "");
  set_value(e, "fireq.block_c", 64, "test");
  CHECK(row->cannot_run(e.variants[0], e, h200()).find("set block_c = 128") != std::string::npos);
}

TEST_CASE("kernel table: turbo's sas_share below 1 runs on the prefill kernel only, with SAS in FP32", "[kernels][turbo]") {
  // core/variants/turbo_sas_share.h: the prefill kernel mixes SAS in FP32 with exp2 by 8-key blocks; the decode kernel
  // computes one function for every score, and the FP16x2 SAS does not mix.
  const kernels::KernelRow* row = kernels::find_kernel_row("turbo");
  REQUIRE(row);
  Experiment prefill = defaults_experiment("turbo", Phase::prefill, 128, 8, 8);
  set_value(prefill, "turbo.sas_share", 0.5, "test");
  CHECK(row->cannot_run(prefill.variants[0], prefill, h200()) == "");
  set_value(prefill, "turbo.sas_precision", "fp16", "test");
  CHECK(row->cannot_run(prefill.variants[0], prefill, h200()).find("sas_precision = fp32") != std::string::npos);
  Experiment decode = defaults_experiment("turbo", Phase::decode, 128, 8, 8);
  set_value(decode, "turbo.sas_share", 0.5, "test");
  CHECK(row->cannot_run(decode.variants[0], decode, h200()).find("sas_share 1 only") != std::string::npos);
}

}  // namespace ATTNLAB_FILE_LOCAL
}  // namespace attnlab
