// The kernel table (kernels/common/kernel_table.h): one row per kernel family, each naming a registered variant
// that has tile rows in core/kernel_traits.h and the other way round; the rows' cannot_run answers what
// the backend answered before the table, on a device described by hand (no GPU needed: the rows read whether
// warpgroup MMA runs from the DeviceInfo, which says no for the sm_80 described here).
#include "core/config.h"
#include "core/kernel_traits.h"
#include "core/registry.h"
#include "kernels/common/kernel_table.h"
#include "kernels/turbo/turbo_decode.h"
#include "tests/catch.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <set>
#include <string>

namespace attnlab {
namespace ATTNLAB_FILE_LOCAL {

Experiment experiment(int64_t d, int64_t q_len, const nlohmann::json& variant) {
  return parse_experiment({{"problem", {{"batch", 1}, {"q_heads", 2}, {"kv_heads", 2}, {"q_len", q_len},
                                        {"kv_len", 300}, {"head_dim", d}}},
                           {"variants", {variant}}});
}

kernels::DeviceInfo ampere() {
  kernels::DeviceInfo dev;
  dev.usable = true, dev.name = "sm_80 described by hand", dev.sm_major = 8, dev.sm_count = 108;
  return dev;
}

std::string reason(const nlohmann::json& variant, int64_t d = 128, int64_t q_len = 300) {
  const Experiment e = experiment(d, q_len, variant);
  const kernels::KernelRow* row = kernels::find_kernel_row(e.variants[0].id);
  REQUIRE(row);
  return row->cannot_run(e.variants[0], e, ampere());
}

TEST_CASE("kernel table: one row per kernel family, each a registered variant with kernel traits", "[kernels]") {
  std::set<std::string> rows, traits;
  for (const kernels::KernelRow& r : kernels::kernel_table()) {
    INFO(r.variant);
    CHECK(find_variant(r.variant) != nullptr);
    CHECK(r.cannot_run != nullptr);
    CHECK(r.run != nullptr);
    CHECK(rows.insert(r.variant).second);  // one row per variant
    CHECK(kernels::find_kernel_row(r.variant) == &r);
  }
  for (const KernelTraits& t : kKernelTraits) traits.insert(t.variant);
  CHECK(rows == traits);
  CHECK(kernels::find_kernel_row("naive") == nullptr);
  CHECK(kernels::find_kernel_row("") == nullptr);
}

TEST_CASE("kernel table: the rows' reasons for problems no kernel computes", "[kernels]") {
  const bool wgmma = ampere().warpgroup_mma;
  CHECK(reason({{"id", "flash2"}}) == "");
  CHECK(reason({{"id", "flash2"}}, 64) == "");
  CHECK(reason({{"id", "flash2"}}, 96) == "no flash2 kernel for head_dim 96 (compiled: 64, 128)");
  CHECK(reason({{"id", "flash2"}, {"params", {{"kernel", "mma_sync"}}}}) == "");
  CHECK(reason({{"id", "flash2"}, {"params", {{"kernel", "wgmma"}}}}) ==
        (wgmma ? "" : "kernel = wgmma needs a compute-capability-9.0 GPU and a build for sm_90a"));

  const int ms = find_kernel_traits("int_flash", 128, 80)->block_c, wg = find_kernel_traits("int_flash", 128, 90)->block_c;
  const auto widths = [](const std::string& w) {
    return fmt::format("int_flash's kernels compute with B_c = {} keys: set block_c to match (its P codes depend on it)", w);
  };
  CHECK(reason({{"id", "int_flash"}, {"params", {{"block_c", ms}}}}) == "");
  CHECK(reason({{"id", "int_flash"}, {"params", {{"block_c", ms}}}}, 96) ==
        "no int_flash kernel for head_dim 96 (compiled: 64, 128)");
  CHECK(reason({{"id", "int_flash"}, {"params", {{"block_c", ms}, {"r_p", 100}}}}) ==
        "the kernel implements Alg. 1's R = 127 (r_p = 127)");
  CHECK(reason({{"id", "int_flash"}, {"params", {{"block_c", 32}}}}) ==
        widths(wgmma ? fmt::format("{} (mma.sync) or {} (wgmma)", ms, wg) : fmt::format("{} (mma.sync)", ms)));
  CHECK(reason({{"id", "int_flash"}, {"params", {{"block_c", 32}, {"kernel", "mma_sync"}}}}) ==
        widths(fmt::format("{} (mma.sync)", ms)));
  CHECK(reason({{"id", "int_flash"}, {"params", {{"block_c", ms}, {"kernel", "wgmma"}}}}) ==
        (wgmma ? widths(fmt::format("{} (wgmma)", wg))
               : "kernel = wgmma needs head_dim 64 or 128, a compute-capability-9.0 GPU and a build for sm_90a"));
}


TEST_CASE("kernel table: turbo decode is refused where a CTA may not have the shared memory its rings ask for",
          "[kernels]") {
  // The rings are sized (and padded) for the H100's 227 KiB per CTA; an sm_89 GPU (L40S, RTX 4090) allows 99 KiB.
  Experiment e = parse_experiment({{"problem", {{"batch", 1}, {"q_heads", 8}, {"kv_heads", 8}, {"q_len", 1},
                                                {"kv_len", 4096}, {"head_dim", 128}, {"phase", "decode"}}},
                                   {"variants", {{{"id", "turbo"}, {"params", {{"two_bit_heads", 0}}}}}}});
  const kernels::KernelRow* row = kernels::find_kernel_row("turbo");
  REQUIRE(row);
  kernels::DeviceInfo ada;
  ada.usable = true, ada.name = "sm_89 described by hand", ada.sm_major = 8, ada.sm_minor = 9, ada.sm_count = 142;
  ada.smem_per_block_optin = 99 * 1024;
  kernels::DeviceInfo hopper = ada;
  hopper.name = "sm_90 described by hand", hopper.sm_major = 9, hopper.sm_minor = 0, hopper.smem_per_block_optin = 227 * 1024;
  const int wide = kernels::turbo_decode_smem_bytes(128, 1, true, false);
  const int narrow = kernels::turbo_decode_smem_bytes(128, 1, false, true);
  INFO("4-bit request " << wide << " B, 2-bit " << narrow << " B");
  REQUIRE(wide > ada.smem_per_block_optin);
  CHECK(row->cannot_run(e.variants[0], e, ada) ==
        fmt::format("the turbo decode kernel asks for {} KiB of shared memory per CTA (its rings, sized for the H100); "
                    "the sm_89 described by hand allows 99 KiB", (wide + 1023) / 1024));
  CHECK(row->cannot_run(e.variants[0], e, hopper) == "");
  // Every head at 2 bits at MHA: the 2-bit launch alone (four CTAs per H100 SM: its ring is half the 4-bit
  // one's), which an sm_89 CTA holds.
  set_value(e, "turbo.two_bit_heads", 8, "test");
  CHECK(narrow <= ada.smem_per_block_optin);
  CHECK(row->cannot_run(e.variants[0], e, ada) == "");
  // Unknown (0): no refusal on that ground.
  ada.smem_per_block_optin = 0;
  set_value(e, "turbo.two_bit_heads", 0, "test");
  CHECK(row->cannot_run(e.variants[0], e, ada) == "");
}

}  // namespace
}  // namespace attnlab
