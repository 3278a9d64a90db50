// What the turbo GPU tests (tests/kernels/test_turbo_*.cpp) share: the skip where there is no usable GPU,
// turbo's parameters with some set, and the byte-for-byte check of a device cache against the reference's.
// Header-only: the kernel tests are built only where CUDA is.
#pragma once

#include "core/registry.h"
#include "core/variants/turbo_cache.h"
#include "kernels/common/device.h"
#include "kernels/turbo/turbo_decode_host.h"
#include "tests/catch.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

// Skips the current test, printing why, where there is no usable GPU.
#define GPU_OR_SKIP()                                                \
  do {                                                               \
    const kernels::DeviceInfo dev_ = kernels::probe_device();        \
    if (!dev_.usable) ATTNLAB_SKIP(dev_.reason); \
  } while (0)

namespace attnlab::test {

inline const VariantSpec& turbo() { return *find_variant("turbo"); }

inline ParamValues turbo_params(std::initializer_list<std::pair<const char*, nlohmann::json>> set) {
  ParamValues pv = ParamValues::defaults(turbo().params);
  for (const auto& [k, v] : set) pv.set(turbo().params, k, v, "test");
  return pv;
}

// Every pair's slots, scales, zero points and buffer on the device equal device_image() of the reference's
// cache (core/variants/turbo_layout.h), byte for byte.
inline void check_cache_bytes(const kernels::TurboDeviceCache& cache, const std::vector<variants::turbo_detail::HeadCache>& want,
                              const std::string& what) {
  for (size_t pair = 0; pair < want.size(); ++pair) {
    const auto img = variants::turbo_detail::device_image(want[pair], kernels::kTurboBlock, cache.args.slots);
    const auto got = kernels::download_turbo_head(cache, int(pair));
    INFO(fmt::format("{} pair {} bits {}", what, pair, want[pair].bits));
    CHECK(got.codes == img.codes);
    CHECK(got.scale_zero == img.scale_zero);
    CHECK(got.block_scales == img.block_scales);
    CHECK(got.k_buffer == img.k_buffer);
    CHECK(got.v_buffer == img.v_buffer);
  }
}

}  // namespace attnlab::test
