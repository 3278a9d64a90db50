// Sub-byte packing (core/formats/pack.h): hand-written bytes that pin the layout the kernels read,
// random round trips for 2/4/8 bits at lengths that do not fill the last byte, edge codes, signed INT4,
// and the errors for bad bit widths and out-of-range codes.
#include "core/formats/pack.h"
#include "tests/catch.h"

#include <cstdint>
#include <random>
#include <stdexcept>
#include <vector>

namespace attnlab::formats {
namespace ATTNLAB_FILE_LOCAL {

TEST_CASE("packing puts element i at bit (i*bits) mod 8 of byte i*bits/8", "[formats]") {
  const std::vector<uint8_t> int4 = {1, 2};
  CHECK(pack_codes(int4.data(), 2, 4) == std::vector<uint8_t>{0x21});  // even element in the low nibble
  const std::vector<uint8_t> int4_odd = {0xA, 0x3, 0xF};
  CHECK(pack_codes(int4_odd.data(), 3, 4) == std::vector<uint8_t>{0x3A, 0x0F});  // unused high nibble 0
  // INT2: 1 | 2<<2 | 3<<4 | 0<<6 = 0x39, then element 4 alone in bits 0–1 of byte 1.
  const std::vector<uint8_t> int2 = {1, 2, 3, 0, 2};
  CHECK(pack_codes(int2.data(), 5, 2) == std::vector<uint8_t>{0x39, 0x02});
  const std::vector<uint8_t> int8 = {0xAB, 0x01, 0xFF};
  CHECK(pack_codes(int8.data(), 3, 8) == int8);
  // Signed INT4: −8 → nibble 8, 7 → 7, −1 → F.
  const std::vector<int8_t> s4 = {-8, 7, -1};
  CHECK(pack_int4(s4.data(), 3) == std::vector<uint8_t>{0x78, 0x0F});
  const std::vector<uint8_t> packed = {0x78, 0x0F};
  CHECK(unpack_int4(packed.data(), 3) == s4);
}

TEST_CASE("packed_bytes is ceil(n*bits/8)", "[formats]") {
  CHECK(packed_bytes(0, 4) == 0);
  CHECK(packed_bytes(1, 2) == 1);
  CHECK(packed_bytes(5, 2) == 2);
  CHECK(packed_bytes(8, 2) == 2);
  CHECK(packed_bytes(5, 4) == 3);
  CHECK(packed_bytes(7, 8) == 7);
}

TEST_CASE("packing round-trips random and edge codes for 2, 4 and 8 bits at awkward lengths", "[formats]") {
  std::mt19937 rng(17);
  for (int bits : {2, 4, 8}) {
    const int max_code = (1 << bits) - 1;
    std::uniform_int_distribution<int> code(0, max_code);
    for (int64_t n : {1, 2, 3, 5, 7, 13, 64, 1001}) {
      INFO("bits = " << bits << ", n = " << n);
      std::vector<uint8_t> codes(static_cast<size_t>(n));
      for (auto& c : codes) c = static_cast<uint8_t>(code(rng));
      codes.front() = 0;
      codes.back() = static_cast<uint8_t>(max_code);
      const std::vector<uint8_t> packed = pack_codes(codes.data(), n, bits);
      REQUIRE(static_cast<int64_t>(packed.size()) == packed_bytes(n, bits));
      CHECK(unpack_codes(packed.data(), n, bits) == codes);
      // The bits past the last element are zero.
      const int used = static_cast<int>((n * bits) % 8);
      if (used != 0) CHECK((packed.back() >> used) == 0);
    }
  }
  for (int64_t n : {1, 3, 16, 999}) {
    std::uniform_int_distribution<int> value(-8, 7);
    std::vector<int8_t> v(static_cast<size_t>(n));
    for (auto& x : v) x = static_cast<int8_t>(value(rng));
    v.front() = -8;
    v.back() = 7;
    const std::vector<uint8_t> packed = pack_int4(v.data(), n);
    CHECK(static_cast<int64_t>(packed.size()) == (n + 1) / 2);
    CHECK(unpack_int4(packed.data(), n) == v);
  }
  // Every INT4 value, through the signed and the unsigned path: the same bytes.
  std::vector<int8_t> all;
  std::vector<uint8_t> nibbles;
  for (int q = -8; q <= 7; ++q) {
    all.push_back(static_cast<int8_t>(q));
    nibbles.push_back(static_cast<uint8_t>(q & 0xF));
  }
  CHECK(pack_int4(all.data(), 16) == pack_codes(nibbles.data(), 16, 4));
  CHECK(unpack_int4(pack_int4(all.data(), 16).data(), 16) == all);
}

TEST_CASE("packing rejects bad bit widths and out-of-range codes", "[formats]") {
  const std::vector<uint8_t> codes = {0, 1, 2, 3, 4};
  CHECK_THROWS_AS(pack_codes(codes.data(), 5, 3), std::invalid_argument);
  CHECK_THROWS_AS(unpack_codes(codes.data(), 5, 1), std::invalid_argument);
  CHECK_THROWS_AS(packed_bytes(5, 16), std::invalid_argument);
  CHECK_THROWS_AS(pack_codes(codes.data(), -1, 4), std::invalid_argument);
  CHECK_THROWS_AS(pack_codes(codes.data(), 5, 2), std::invalid_argument);  // 4 does not fit in 2 bits
  CHECK_NOTHROW(pack_codes(codes.data(), 4, 2));
  const std::vector<uint8_t> big = {16};
  CHECK_THROWS_AS(pack_codes(big.data(), 1, 4), std::invalid_argument);
  const std::vector<int8_t> out_of_range = {0, 8};
  CHECK_THROWS_AS(pack_int4(out_of_range.data(), 2), std::invalid_argument);
  const std::vector<int8_t> below = {-9};
  CHECK_THROWS_AS(pack_int4(below.data(), 1), std::invalid_argument);
}

}  // namespace
}  // namespace attnlab::formats
