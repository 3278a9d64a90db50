// Test support: keys whose KIVI key groups the kivi decode kernel must dequantize on its FP32 path
// (kernels/kivi/kivi_decode.cu; core/variants/kivi_image.h fp32_exact). In channels c ≡ 7 (mod 32) every value
// becomes 1 + |x|, except that in every third 64-token slot the tokens t ≡ 0 (mod 16) hold 2⁻²⁴ (FP16's smallest
// subnormal): a key group there has z = 2⁻²⁴ and s ≈ 0.1–1, so q·s + z spans about 26 bits, more than FP32
// holds, and the reference's two roundings may differ from one. The other slots stay exact. Shared by the
// layout test and the kernel test.
#pragma once

#include <cmath>
#include <cstdint>

namespace attnlab::test {

inline void make_inexact_key_groups(float* k, int64_t tokens, int64_t d) {
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t c = 7; c < d; c += 32) {
      float& x = k[t * d + c];
      x = (t / 64) % 3 == 1 && t % 16 == 0 ? std::ldexp(1.0f, -24) : 1.0f + std::abs(x);
    }
}

}  // namespace attnlab::test
