// What an FP16 tensor-core MMA (mma.sync m16n8k16, FP32 accumulate) keeps of a sum, measured on the GPU at
// hand (skipped, with the reason printed, without one). fireq decode's sm_90 form runs each E4M3 k32 step as
// two of these MMAs accumulating into the running sum (kernels/fireq/fireq_decode.cu, mma_e4m3), and its test's bound
// (tests/kernels/fireq/test_fireq_decode_kernel.cpp, item 1) takes every addend of an MMA to lose < 2⁻¹³ of the sum's
// largest — the 14 bits Hopper's FP8 path keeps. This test is that assumption's check: the smallest power of two
// that still changes a sum whose largest addend is 1, with the small addend a product and with it the running
// sum (the tensor core aligns all 17 addends to the largest before it adds). Measured on an H100 (2026-11-28):
// 2⁻²³ both ways — FP32's own width, so there the bound's 2⁻¹³ per addend is ten bits to spare; the check
// asks only for what the bound uses.
#include "kernels/common/cuda_check.h"
#include "kernels/common/device.h"
#include "kernels/common/mma_probe.h"
#include "tests/catch.h"

#include <fmt/format.h>

#include <cmath>

namespace attnlab {
namespace ATTNLAB_FILE_LOCAL {

// The largest k ≤ 23 such that 1 + 2⁻ᵏ comes out of the MMA exactly (23: FP32's own width; 0: not even 1 + ½).
int smallest_power_kept(bool small_is_the_running_sum) {
  int kept = 0;
  for (int k = 1; k <= 23; ++k) {
    float a[16] = {}, b[16] = {}, c = 0.f;
    if (small_is_the_running_sum) {
      a[5] = b[5] = 1.f;  // the product 1, at an arbitrary k slot
      c = std::ldexp(1.f, -k);
    } else {
      a[11] = std::ldexp(1.f, -(k + 1) / 2), b[11] = std::ldexp(1.f, -k / 2);  // 2⁻ᵏ, both factors FP16 normals
      c = 1.f;
    }
    float d = 0.f;
    ATTNLAB_CUDA(kernels::mma_f16_row_dot(a, b, c, d));
    if (d != 1.f + std::ldexp(1.f, -k)) break;
    kept = k;
  }
  return kept;
}

TEST_CASE("an FP16 MMA keeps at least 2⁻¹³ of its largest addend, as fireq decode's sm_90 bound assumes",
          "[gpu][kernels]") {
  const kernels::DeviceInfo dev = kernels::probe_device();
  if (!dev.usable) ATTNLAB_SKIP(dev.reason);
  const int as_product = smallest_power_kept(false), as_sum = smallest_power_kept(true);
  fmt::print("{} (sm_{}{}): an FP16 MMA keeps 2^-{} below its largest addend (small product), 2^-{} (small sum)\n",
             dev.name, dev.sm_major, dev.sm_minor, as_product, as_sum);
  CHECK(as_product >= 13);
  CHECK(as_sum >= 13);
}

}  // namespace
}  // namespace attnlab
