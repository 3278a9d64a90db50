// FP16 / BF16 round-to-nearest-even against the compiler's own conversions (_Float16 and __bf16 are
// IEEE RNE on x86-64 with GCC ≥ 12), over every FP16 value, the halfway points between neighbours,
// and a large sample of FP32 bit patterns.
#include "core/formats/half.h"
#include "core/formats/round.h"
#include "tests/catch.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace attnlab::formats {
namespace ATTNLAB_FILE_LOCAL {

uint32_t next_pattern(uint64_t& s) {  // xorshift64*, enough to cover FP32 bit patterns uniformly
  s ^= s >> 12, s ^= s << 25, s ^= s >> 27;
  return static_cast<uint32_t>((s * 2685821657736338717ull) >> 32);
}

TEST_CASE("every FP16 value decodes and re-encodes to itself", "[formats]") {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = fp16_value(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      CHECK(std::isnan(fp16_value(fp16_bits(f))));
      continue;
    }
    CHECK(fp16_bits(f) == h);
#if defined(__FLT16_MAX__)
    CHECK(static_cast<float>(std::bit_cast<_Float16>(static_cast<uint16_t>(h))) == f);
#endif
  }
}

TEST_CASE("FP16 ties round to even, overflow to infinity, underflow to zero", "[formats]") {
  // 1 + 2⁻¹¹ lies halfway between 1 and 1 + 2⁻¹⁰: even mantissa (1) wins.
  CHECK(round_fp16(1.0f + 0x1p-11f) == 1.0f);
  // 1 + 3·2⁻¹¹ lies halfway between 1 + 2⁻¹⁰ and 1 + 2⁻⁹: the even one is 1 + 2⁻⁹.
  CHECK(round_fp16(1.0f + 3 * 0x1p-11f) == 1.0f + 0x1p-9f);
  CHECK(round_fp16(65504.0f) == 65504.0f);
  CHECK(round_fp16(65519.99f) == 65504.0f);
  CHECK(std::isinf(round_fp16(65520.0f)));
  CHECK(round_fp16(0x1p-24f) == 0x1p-24f);        // smallest subnormal
  CHECK(round_fp16(0x1p-25f) == 0.0f);            // halfway to zero: even (0) wins
  CHECK(round_fp16(0x1.8p-25f) == 0x1p-24f);      // above halfway
  CHECK(std::signbit(round_fp16(-0x1p-30f)));     // sign of zero kept
  CHECK(std::isnan(round_fp16(NAN)));
}

TEST_CASE("FP16 and BF16 rounding match the hardware conversions on random FP32 patterns", "[formats]") {
  uint64_t s = 0x9e3779b97f4a7c15ull;
  std::vector<float> batch(4096), scalar;
  for (int round = 0; round < 256; ++round) {
    for (float& x : batch) x = std::bit_cast<float>(next_pattern(s));
    scalar = batch;
    round_fp16_inplace(batch.data(), static_cast<int64_t>(batch.size()));
    round_fp16_inplace_scalar(scalar.data(), static_cast<int64_t>(scalar.size()));
    for (size_t i = 0; i < batch.size(); ++i) {
      const bool both_nan = std::isnan(batch[i]) && std::isnan(scalar[i]);
      CHECK((both_nan || std::bit_cast<uint32_t>(batch[i]) == std::bit_cast<uint32_t>(scalar[i])));
    }
  }
#if defined(__FLT16_MAX__)
  for (int i = 0; i < 1 << 20; ++i) {
    const float x = std::bit_cast<float>(next_pattern(s));
    if (std::isnan(x)) continue;
    const float hw = static_cast<float>(static_cast<_Float16>(x));
    CHECK(std::bit_cast<uint32_t>(round_fp16(x)) == std::bit_cast<uint32_t>(hw));
  }
#endif
#if defined(__BFLT16_MAX__)
  for (int i = 0; i < 1 << 20; ++i) {
    const float x = std::bit_cast<float>(next_pattern(s));
    if (std::isnan(x)) continue;
    CHECK(std::bit_cast<uint32_t>(round_bf16(x)) == std::bit_cast<uint32_t>(static_cast<float>(static_cast<__bf16>(x))));
  }
#endif
}

TEST_CASE("BF16 ties round to even and NaN stays NaN", "[formats]") {
  CHECK(round_bf16(1.0f + 0x1p-8f) == 1.0f);              // halfway, even is 1
  CHECK(round_bf16(1.0f + 3 * 0x1p-8f) == 1.0f + 0x1p-6f);  // halfway, even is 1 + 2⁻⁶
  CHECK(round_bf16(1.0f + 0x1.8p-8f) == 1.0f + 0x1p-7f);  // above halfway
  CHECK(std::isnan(round_bf16(NAN)));
  CHECK(std::isinf(round_bf16(INFINITY)));
}

TEST_CASE("round_fp16_from_double rounds once: a double just past an FP16 tie goes up", "[formats]") {
  // 1 + 2⁻¹¹ is the tie between FP16's 1 and 1 + 2⁻¹⁰; 1 + 2⁻¹¹ + 2⁻⁴⁰ is just above it. float() rounds that to
  // the tie (2⁻⁴⁰ is below FP32's spacing), and the tie then goes to even (1): two roundings, the wrong
  // answer. Once: 1 + 2⁻¹⁰.
  const double above_tie = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
  CHECK(formats::round_fp16(static_cast<float>(above_tie)) == 1.0f);
  CHECK(formats::round_fp16_from_double(above_tie) == 1.0f + std::ldexp(1.0f, -10));
  CHECK(formats::round_fp16_from_double(-above_tie) == -(1.0f + std::ldexp(1.0f, -10)));
  CHECK(formats::round_fp16_from_double(1.0 + std::ldexp(1.0, -11)) == 1.0f);  // the tie itself: even
  CHECK(formats::round_fp16_from_double(70000.0) == std::numeric_limits<float>::infinity());
}

}  // namespace
}  // namespace attnlab::formats
