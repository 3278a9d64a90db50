// attnlab core: sub-byte packing (pack.h states the layout).
#include "core/formats/pack.h"

#include <fmt/format.h>

#include <stdexcept>

namespace attnlab::formats {

namespace {

void require(int64_t n, int bits, const char* where) {
  if (bits != 2 && bits != 4 && bits != 8)
    throw std::invalid_argument(fmt::format("{}: bits must be 2, 4 or 8 (got {})", where, bits));
  if (n < 0) throw std::invalid_argument(fmt::format("{}: n must be ≥ 0 (got {})", where, n));
}

}  // namespace

int64_t packed_bytes(int64_t n, int bits) {
  require(n, bits, "packed_bytes");
  return (n * bits + 7) / 8;
}

std::vector<uint8_t> pack_codes(const uint8_t* codes, int64_t n, int bits) {
  require(n, bits, "pack_codes");
  const unsigned limit = 1u << bits;
  std::vector<uint8_t> packed(static_cast<size_t>(packed_bytes(n, bits)), 0);
  for (int64_t i = 0; i < n; ++i) {
    if (codes[i] >= limit)
      throw std::invalid_argument(fmt::format("pack_codes: code {} at index {} does not fit in {} bits (max {})",
                                              codes[i], i, bits, limit - 1));
    const int64_t bit = i * bits;
    packed[static_cast<size_t>(bit / 8)] |= static_cast<uint8_t>(codes[i] << (bit % 8));
  }
  return packed;
}

std::vector<uint8_t> unpack_codes(const uint8_t* packed, int64_t n, int bits) {
  require(n, bits, "unpack_codes");
  const unsigned mask = (1u << bits) - 1u;
  std::vector<uint8_t> codes(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const int64_t bit = i * bits;
    codes[static_cast<size_t>(i)] = static_cast<uint8_t>((packed[bit / 8] >> (bit % 8)) & mask);
  }
  return codes;
}

std::vector<uint8_t> pack_int4(const int8_t* values, int64_t n) {
  require(n, 4, "pack_int4");
  std::vector<uint8_t> nibbles(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    if (values[i] < -8 || values[i] > 7)
      throw std::invalid_argument(
          fmt::format("pack_int4: value {} at index {} is outside the INT4 range [-8, 7]", values[i], i));
    nibbles[static_cast<size_t>(i)] = static_cast<uint8_t>(values[i] & 0x0F);  // two's complement nibble
  }
  return pack_codes(nibbles.data(), n, 4);
}

std::vector<int8_t> unpack_int4(const uint8_t* packed, int64_t n) {
  const std::vector<uint8_t> nibbles = unpack_codes(packed, n, 4);
  std::vector<int8_t> values(nibbles.size());
  // Sign-extend the nibble: (u ⊕ 8) − 8 maps 0..7 → 0..7 and 8..15 → −8..−1.
  for (size_t i = 0; i < nibbles.size(); ++i) values[i] = static_cast<int8_t>((nibbles[i] ^ 8) - 8);
  return values;
}

}  // namespace attnlab::formats
