// attnlab core: a matrix in FP8 E4M3 with one FP32 scale per block of rows — FlashAttention-3's block
// quantization (§3.3), the flash3_fp8 variant's storage rule, in one place for its reference
// (core/variants/flash3_fp8.cpp) and the kernel's host side (kernels/fp8/flash3_fp8_host.cpp): per block,
// s = scale_for_span(max|block|, 448) (quantize.h), then code = E4M3(x / s) — a true FP32 division, then
// round-to-nearest-even with saturation (formats::fp8_bits; its value is formats::round_fp8's).
#pragma once

#include <cstdint>
#include <vector>

namespace attnlab::quant {

struct Fp8BlockCodes {
  std::vector<uint8_t> bits;  // rows × cols, row-major: the E4M3 codes
  std::vector<float> scale;   // ⌈rows / block⌉
  int64_t saturated = 0;      // |x / s| beyond E4M3's overflow midpoint (464): saturated to ±448
  int64_t zeroed = 0;         // nonzero inputs whose code is ±0
};

// x is (rows, cols), row-major. Throws InputError naming `where` for a non-finite value.
Fp8BlockCodes fp8_block_codes(const float* x, int64_t rows, int64_t cols, int64_t block, const char* where);

}  // namespace attnlab::quant
