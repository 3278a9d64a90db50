// attnlab core: a KIVI cache (core/quant/kivi.h) laid out as the GPU holds it (core/variants/kivi_layout.h):
// the bytes the kivi decode kernel reads, built on the host from the reference's own quantizer output, so
// the kernel and the `kivi` reference start from the same codes, scales, zero points and residual.
#pragma once

#include "core/quant/kivi.h"

#include <cstdint>
#include <vector>

namespace attnlab::kivi_layout {

// One (batch, KV head)'s cache in the layout's six arrays; FP16 values as their bit patterns.
struct Image {
  std::vector<uint8_t> k_codes, v_codes;         // (slots, code_bytes)
  std::vector<uint16_t> k_params;                // (k_groups, d, 2): s and z in quad order
  std::vector<uint16_t> v_params;                // (slots, 64, VG, 2): s and z in quad order
  std::vector<uint16_t> k_residual, v_residual;  // (res_slots, 64, d) in A-fragment order
  // (slots): 1 where every s, z the slot's codes are dequantized with (its key groups', its tokens' value
  // groups') passes fp32_exact, so the kernel may dequantize the slot in FP16 arithmetic (kivi_decode.cu).
  std::vector<uint8_t> slot_exact;
};

// True where, for every code q ∈ [0, 2^bits − 1], q·s + z is a float: then the reference's x̂ =
// fp16(fmaf(q, s, z)) — FP32 first, FP16 second — is q·s + z rounded once to FP16, which an FP16 fused
// multiply-add (fma.rn.f16x2) computes. Where q·s + z needs more than 24 bits (a zero point and a step some 2¹³
// or more apart in magnitude, either way), the two roundings may differ and the kernel takes the FP32 path.
bool fp32_exact(float s, float z, int bits);

// The sizes every pair of a problem shares, from the cache's shape.
struct Sizes {
  int64_t slots = 0, res_slots = 0, k_groups = 0;
  int64_t code_bytes = 0, k_param_halves = 0, v_param_halves = 0, residual_halves = 0;  // per pair
  int64_t bytes() const {  // one pair's image, the slot flags included
    return 2 * code_bytes + 2 * (k_param_halves + v_param_halves) + 2 * 2 * residual_halves + slots;
  }
};
Sizes sizes_of(const quant::KiviCache& c);

// Throws std::logic_error when the layout cannot hold the cache (supports() is false).
Image device_image(const quant::KiviCache& c);

}  // namespace attnlab::kivi_layout
