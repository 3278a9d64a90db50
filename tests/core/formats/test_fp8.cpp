// FP8 E4M3 / E5M2 (core/formats/fp8.h): every code decodes and re-encodes to itself, ties to even at
// hand-computed normal and subnormal midpoints, the overflow boundaries of both modes, NaN and −0, and
// the vectorized round_fp8_inplace against the scalar encoder on codes, midpoints and random patterns.
#include "core/formats/fp8.h"
#include "tests/catch.h"

#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace attnlab::formats {
namespace ATTNLAB_FILE_LOCAL {

constexpr float kInf = std::numeric_limits<float>::infinity();

uint32_t next_pattern(uint64_t& s) {  // xorshift64*
  s ^= s >> 12, s ^= s << 25, s ^= s >> 27;
  return static_cast<uint32_t>((s * 2685821657736338717ull) >> 32);
}

bool same(float a, float b) {
  return (std::isnan(a) && std::isnan(b)) || std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b);
}

TEST_CASE("every FP8 code decodes and re-encodes to itself", "[formats]") {
  for (Fp8 f : {Fp8::e4m3, Fp8::e5m2}) {
    int nans = 0, infs = 0;
    for (int b = 0; b < 256; ++b) {
      INFO("format " << (f == Fp8::e4m3 ? "E4M3" : "E5M2") << ", code 0x" << std::hex << b);
      const auto code = static_cast<uint8_t>(b);
      const float v = fp8_value(code, f);
      if (std::isnan(v)) {
        ++nans;
        CHECK(fp8_bits(v, f) == 0x7F);
        CHECK(std::isnan(round_fp8(v, f)));
        continue;
      }
      if (std::isinf(v)) {
        ++infs;
        CHECK(fp8_bits(v, f, Overflow::special) == code);
        continue;
      }
      CHECK(fp8_bits(v, f, Overflow::saturate) == code);
      CHECK(fp8_bits(v, f, Overflow::special) == code);
      CHECK(same(fp8_value(static_cast<uint8_t>(code ^ 0x80), f), -v));  // sign-magnitude
    }
    // E4M3: only S.1111.111 is NaN, no inf. E5M2: S.11111.{01,10,11} are NaN, S.11111.00 is inf.
    CHECK(nans == (f == Fp8::e4m3 ? 2 : 6));
    CHECK(infs == (f == Fp8::e4m3 ? 0 : 2));
  }
}

TEST_CASE("FP8 positive codes decode in increasing order, with the spec's landmarks", "[formats]") {
  for (int b = 1; b <= 0x7E; ++b)
    CHECK(fp8_value(static_cast<uint8_t>(b), Fp8::e4m3) > fp8_value(static_cast<uint8_t>(b - 1), Fp8::e4m3));
  for (int b = 1; b <= 0x7C; ++b)
    CHECK(fp8_value(static_cast<uint8_t>(b), Fp8::e5m2) > fp8_value(static_cast<uint8_t>(b - 1), Fp8::e5m2));
  CHECK(fp8_value(0x01, Fp8::e4m3) == 0x1p-9f);   // smallest subnormal
  CHECK(fp8_value(0x07, Fp8::e4m3) == 7 * 0x1p-9f);  // largest subnormal
  CHECK(fp8_value(0x08, Fp8::e4m3) == 0x1p-6f);   // smallest normal
  CHECK(fp8_value(0x38, Fp8::e4m3) == 1.0f);
  CHECK(fp8_value(0x7E, Fp8::e4m3) == kE4M3Max);
  CHECK(fp8_value(0x01, Fp8::e5m2) == 0x1p-16f);
  CHECK(fp8_value(0x04, Fp8::e5m2) == 0x1p-14f);
  CHECK(fp8_value(0x3C, Fp8::e5m2) == 1.0f);
  CHECK(fp8_value(0x7B, Fp8::e5m2) == kE5M2Max);
  CHECK(fp8_value(0x7C, Fp8::e5m2) == kInf);
  CHECK(fp8_value(0xFC, Fp8::e5m2) == -kInf);
}

TEST_CASE("FP8 rounds to nearest, ties to even, at normal and subnormal midpoints", "[formats]") {
  // E4M3 near 1: spacing 2⁻³. 1.0625 lies halfway between 1 (mantissa 000) and 1.125 (001): even wins.
  CHECK(round_fp8(1.0625f, Fp8::e4m3) == 1.0f);
  CHECK(round_fp8(std::nextafter(1.0625f, 2.0f), Fp8::e4m3) == 1.125f);
  CHECK(round_fp8(1.1875f, Fp8::e4m3) == 1.25f);  // between 1.125 (001) and 1.25 (010)
  CHECK(round_fp8(-1.1875f, Fp8::e4m3) == -1.25f);
  // E4M3 subnormals: spacing 2⁻⁹.
  CHECK(fp8_bits(0x1p-10f, Fp8::e4m3) == 0x00);               // ½·2⁻⁹ → 0 (even)
  CHECK(fp8_bits(std::nextafter(0x1p-10f, 1.0f), Fp8::e4m3) == 0x01);
  CHECK(round_fp8(1.5f * 0x1p-9f, Fp8::e4m3) == 2 * 0x1p-9f);  // between 1 (odd) and 2
  CHECK(round_fp8(2.5f * 0x1p-9f, Fp8::e4m3) == 2 * 0x1p-9f);  // between 2 (even) and 3
  CHECK(fp8_bits(7.5f * 0x1p-9f, Fp8::e4m3) == 0x08);          // between 7·2⁻⁹ and 2⁻⁶: carries to normal
  // E5M2 near 1: spacing 2⁻².
  CHECK(round_fp8(1.125f, Fp8::e5m2) == 1.0f);  // between 1 (00) and 1.25 (01)
  CHECK(round_fp8(1.375f, Fp8::e5m2) == 1.5f);  // between 1.25 (01) and 1.5 (10)
  CHECK(round_fp8(std::nextafter(1.125f, 0.0f), Fp8::e5m2) == 1.0f);
  CHECK(round_fp8(std::nextafter(1.125f, 2.0f), Fp8::e5m2) == 1.25f);
  // E5M2 subnormals: spacing 2⁻¹⁶.
  CHECK(fp8_bits(0x1p-17f, Fp8::e5m2) == 0x00);
  CHECK(round_fp8(1.5f * 0x1p-16f, Fp8::e5m2) == 2 * 0x1p-16f);
  CHECK(round_fp8(2.5f * 0x1p-16f, Fp8::e5m2) == 2 * 0x1p-16f);
  CHECK(fp8_bits(3.5f * 0x1p-16f, Fp8::e5m2) == 0x04);  // between 3·2⁻¹⁶ and 2⁻¹⁴ (smallest normal)
}

TEST_CASE("FP8 overflow: saturate to +-max, or +-inf (E5M2) / NaN (E4M3), beyond the midpoint", "[formats]") {
  // E4M3: the midpoint between 448 and the would-be 480 is 464; the tie goes to 448 (even mantissa).
  for (Overflow o : {Overflow::saturate, Overflow::special}) {
    CHECK(round_fp8(448.0f, Fp8::e4m3, o) == 448.0f);
    CHECK(round_fp8(464.0f, Fp8::e4m3, o) == 448.0f);
    CHECK(round_fp8(-464.0f, Fp8::e4m3, o) == -448.0f);
  }
  const float above464 = std::nextafter(464.0f, kInf);
  CHECK(fp8_bits(above464, Fp8::e4m3, Overflow::saturate) == 0x7E);
  CHECK(fp8_bits(-above464, Fp8::e4m3, Overflow::saturate) == 0xFE);
  CHECK(fp8_bits(above464, Fp8::e4m3, Overflow::special) == 0x7F);
  CHECK(fp8_bits(-above464, Fp8::e4m3, Overflow::special) == 0xFF);
  CHECK(std::isnan(round_fp8(above464, Fp8::e4m3, Overflow::special)));
  CHECK(round_fp8(kInf, Fp8::e4m3, Overflow::saturate) == 448.0f);
  CHECK(round_fp8(-kInf, Fp8::e4m3, Overflow::saturate) == -448.0f);
  CHECK(std::isnan(round_fp8(kInf, Fp8::e4m3, Overflow::special)));
  // E5M2: the midpoint between 57344 and the would-be 65536 is 61440; the tie goes to 65536 (even), so
  // 61440 itself overflows.
  const float below61440 = std::nextafter(61440.0f, 0.0f);
  for (Overflow o : {Overflow::saturate, Overflow::special}) {
    CHECK(round_fp8(kE5M2Max, Fp8::e5m2, o) == kE5M2Max);
    CHECK(round_fp8(below61440, Fp8::e5m2, o) == kE5M2Max);
    CHECK(round_fp8(-below61440, Fp8::e5m2, o) == -kE5M2Max);
  }
  CHECK(fp8_bits(61440.0f, Fp8::e5m2, Overflow::saturate) == 0x7B);
  CHECK(fp8_bits(61440.0f, Fp8::e5m2, Overflow::special) == 0x7C);
  CHECK(fp8_bits(-61440.0f, Fp8::e5m2, Overflow::special) == 0xFC);
  CHECK(round_fp8(kInf, Fp8::e5m2, Overflow::saturate) == kE5M2Max);
  CHECK(round_fp8(-kInf, Fp8::e5m2, Overflow::saturate) == -kE5M2Max);
  CHECK(round_fp8(kInf, Fp8::e5m2, Overflow::special) == kInf);
  CHECK(round_fp8(-kInf, Fp8::e5m2, Overflow::special) == -kInf);
}

TEST_CASE("FP8 keeps NaN a NaN (code 0x7F, as __nv_cvt_float_to_fp8) and the sign of zero", "[formats]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (Fp8 f : {Fp8::e4m3, Fp8::e5m2}) {
    for (Overflow o : {Overflow::saturate, Overflow::special}) {
      CHECK(fp8_bits(nan, f, o) == 0x7F);
      CHECK(fp8_bits(-nan, f, o) == 0x7F);
      CHECK(std::isnan(round_fp8(nan, f, o)));
    }
    CHECK(fp8_bits(0.0f, f) == 0x00);
    CHECK(fp8_bits(-0.0f, f) == 0x80);
    CHECK(std::signbit(round_fp8(-0.0f, f)));
    CHECK(std::signbit(round_fp8(-0x1p-30f, f)));  // underflow keeps the sign
    CHECK(fp8_value(0x80, f) == 0.0f);
    CHECK(std::signbit(fp8_value(0x80, f)));
  }
}

TEST_CASE("round_fp8_inplace equals round_fp8 on codes, midpoints, neighbours and random patterns", "[formats]") {
  std::vector<float> x;
  for (Fp8 f : {Fp8::e4m3, Fp8::e5m2}) {
    for (int b = 0; b < 256; ++b) {
      const float v = fp8_value(static_cast<uint8_t>(b), f);
      const float next = fp8_value(static_cast<uint8_t>(b + 1), f);  // b = 255 wraps to 0: harmless
      for (float p : {v, 0.5f * (v + next)})
        for (float q : {p, std::nextafter(p, -kInf), std::nextafter(p, kInf)}) x.push_back(q);
    }
  }
  for (float v : {464.0f, 61440.0f, kInf, 0x1p-10f, 0x1p-17f, 0x1p-140f, 1e38f})
    for (float s : {1.0f, -1.0f}) x.push_back(s * v);
  uint64_t seed = 0x2545F4914F6CDD1Dull;
  for (int i = 0; i < (1 << 20) + 5; ++i) x.push_back(std::bit_cast<float>(next_pattern(seed)));  // odd tail
  for (Fp8 f : {Fp8::e4m3, Fp8::e5m2}) {
    for (Overflow o : {Overflow::saturate, Overflow::special}) {
      std::vector<float> y = x;
      round_fp8_inplace(y.data(), static_cast<int64_t>(y.size()), f, o);
      int64_t mismatches = 0;
      for (size_t i = 0; i < x.size(); ++i) {
        if (!same(y[i], round_fp8(x[i], f, o)) && mismatches++ < 5)
          FAIL_CHECK("x = " << x[i] << " (bits 0x" << std::hex << std::bit_cast<uint32_t>(x[i])
                            << "): inplace " << y[i] << ", scalar " << round_fp8(x[i], f, o));
      }
      CHECK(mismatches == 0);
    }
  }
}

}  // namespace
}  // namespace attnlab::formats
