// Test support: bounds the fireq kernel tests read off an INT4 cache image (core/variants/fireq_layout.h) —
// the table-converted operands LUT_σ[c] = FP8(c·σ) the kernels multiply (§3.1.1 Step 1), from the uploaded
// bytes themselves. Shared by the decode and the prefill kernel tests.
#pragma once

#include "core/fireq/int4_lut.h"
#include "core/formats/fp8.h"
#include "core/variants/fireq_image.h"
#include "core/variants/fireq_layout.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <vector>

namespace attnlab::test {

// Token `tok`'s E4M3 scale σ of K (is_v false) or V in a pair's image of d channels.
inline float fireq_cache_sigma(const std::vector<uint8_t>& img, int64_t d, bool is_v, int64_t tok) {
  const uint8_t* tile = img.data() + (tok / fireq_layout::kTile) * fireq_layout::tile_bytes(d);
  const int64_t at = (is_v ? fireq_layout::sigma_v_offset(d) : fireq_layout::sigma_k_offset(d)) + tok % fireq_layout::kTile;
  return formats::fp8_value(tile[at], formats::Fp8::e4m3);
}

// The largest ‖k̂‖ over a pair's n tokens, k̂ the table-converted key.
inline double fireq_cache_key_norm(const std::vector<uint8_t>& img, int64_t d, int64_t n) {
  double norm = 0;
  for (int64_t tok = 0; tok < n; ++tok) {
    const std::array<float, 16> lut = fireq::int4_fp8_lut(fireq_cache_sigma(img, d, false, tok));
    double sq = 0;
    for (int64_t c = 0; c < d; ++c) {
      const double x = lut[size_t(fireq_layout::code_at(img, d, false, tok, c) + 8)];
      sq += x * x;
    }
    norm = std::max(norm, std::sqrt(sq));
  }
  return norm;
}

// max|v̂| over a pair's n tokens, v̂ the table-converted value.
inline double fireq_cache_max_value(const std::vector<uint8_t>& img, int64_t d, int64_t n) {
  double m = 0;
  for (int64_t tok = 0; tok < n; ++tok) {
    const std::array<float, 16> lut = fireq::int4_fp8_lut(fireq_cache_sigma(img, d, true, tok));
    for (int64_t c = 0; c < d; ++c)
      m = std::max(m, double(std::abs(lut[size_t(fireq_layout::code_at(img, d, true, tok, c) + 8)])));
  }
  return m;
}

}  // namespace attnlab::test
