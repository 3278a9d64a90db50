// The host image of a FireQ INT4 cache. See fireq_image.h and fireq_layout.h.
#include "core/variants/fireq_image.h"

#include "core/formats/fp8.h"
#include "core/variants/fireq_layout.h"

#include <stdexcept>

namespace attnlab::fireq_layout {

namespace {

// Nibble `nibble` of a row (low nibble of each byte first).
int nibble_of(const uint8_t* row, int64_t nibble) { return (row[nibble / 2] >> (4 * (nibble % 2))) & 0xF; }
void set_nibble(uint8_t* row, int64_t nibble, int code) {
  row[nibble / 2] |= uint8_t((code & 0xF) << (4 * (nibble % 2)));
}

uint8_t sigma_bits(float sigma) {
  const uint8_t b = formats::fp8_bits(sigma, formats::Fp8::e4m3);
  if (formats::fp8_value(b, formats::Fp8::e4m3) != sigma || sigma < 0.0f)
    throw std::logic_error("fireq_layout: a token scale is not a non-negative E4M3 value");
  return b;
}

}  // namespace

std::vector<uint8_t> device_image(const fireq::TokenInt4& k, const fireq::TokenInt4& v) {
  const int64_t n = k.tokens, d = k.d;
  if (v.tokens != n || v.d != d || n <= 0) throw std::logic_error("fireq_layout: K and V must have the same shape");
  if (!supports(d)) throw std::logic_error("fireq_layout: d must be 64 or 128");
  const int64_t tb = tile_bytes(d);
  std::vector<uint8_t> img(size_t(tiles_for(n) * tb), 0);
  for (int64_t token = 0; token < n; ++token) {
    uint8_t* tile = img.data() + (token / kTile) * tb;
    const int64_t r = token % kTile;
    for (int64_t c = 0; c < d; ++c) {
      set_nibble(tile, k_nibble(d, r, c), k.q[size_t(token * d + c)]);
      set_nibble(tile + v_offset(d), v_nibble(d, r, c), v.q[size_t(token * d + c)]);
    }
    tile[sigma_k_offset(d) + r] = sigma_bits(k.scale[size_t(token)]);
    tile[sigma_v_offset(d) + r] = sigma_bits(v.scale[size_t(token)]);
  }
  return img;
}

int code_at(const std::vector<uint8_t>& image, int64_t d, bool is_v, int64_t token, int64_t channel) {
  const uint8_t* region = image.data() + (token / kTile) * tile_bytes(d) + (is_v ? v_offset(d) : 0);
  const int64_t r = token % kTile;
  const int c = nibble_of(region, is_v ? v_nibble(d, r, channel) : k_nibble(d, r, channel));
  return c >= 8 ? c - 16 : c;
}

}  // namespace attnlab::fireq_layout
