// FireQ §3.1.1 Step 1's INT4 → E4M3 table (int4_lut.h): entries derived by hand for a few scales — exact
// products, both directions of a tie to even, the flush below 2⁻¹⁰, the saturation above 464 and the 464
// boundary itself — the LUT events, and properties over every positive E4M3 scale.
#include "core/fireq/int4_lut.h"
#include "core/formats/fp8.h"
#include "tests/catch.h"

#include <array>
#include <cmath>
#include <cstdint>

namespace attnlab::fireq {
namespace ATTNLAB_FILE_LOCAL {

using Table = std::array<float, 16>;  // [c + 8], c = −8 … 7

bool is_e4m3(float x) { return formats::round_fp8(x, formats::Fp8::e4m3) == x; }

TEST_CASE("INT4 → E4M3 LUT: hand-derived entries", "[fireq]") {
  // σ = 1: every c·σ is an integer of magnitude ≤ 8, all E4M3 values: the table is the codes.
  CHECK(int4_fp8_lut(1.0f) == Table{-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7});

  // σ = 0.375 = 1.1₂·2⁻² (E4M3 0x2C: exponent field 5, mantissa 100). c·σ for c = 1 … 6 is 0.375, 0.75,
  // 1.125 = 1.001₂, 1.5, 1.875 = 1.111₂, 2.25 = 1.001₂·2: all exact. 7·σ = 2.625 = 1.0101₂·2 needs four
  // mantissa bits; its neighbours are 2.5 = 1.010₂·2 and 2.75 = 1.011₂·2, it is their midpoint, and the tie
  // goes to the even mantissa 010: 2.5. −8·σ = −3 = −1.1₂·2, exact.
  CHECK(formats::fp8_bits(0.375f, formats::Fp8::e4m3) == 0x2C);
  CHECK(int4_fp8_lut(0.375f) ==
        Table{-3, -2.5f, -2.25f, -1.875f, -1.5f, -1.125f, -0.75f, -0.375f, 0, 0.375f, 0.75f, 1.125f, 1.5f, 1.875f, 2.25f, 2.5f});

  // σ = 1.125 = 1.001₂ (E4M3): spacing 0.25 in [2, 4), 0.5 in [4, 8), 1 in [8, 16).
  //   3σ = 3.375, midway between 3.25 = 1.101₂·2 and 3.5 = 1.110₂·2: the tie goes up, to the even 3.5;
  //   5σ = 5.625 → 5.5 (nearer); 6σ = 6.75 = 1.1011₂·2² → 7 (spacing 0.5: 6.5 or 7, a tie, even 7 = 1.110₂·2²);
  //   7σ = 7.875 → 8 (nearer); −8σ = −9 = −1.001₂·2³, exact; 2σ, 4σ exact (2.25, 4.5).
  CHECK(int4_fp8_lut(1.125f) ==
        Table{-9, -8, -7, -5.5f, -4.5f, -3.5f, -2.25f, -1.125f, 0, 1.125f, 2.25f, 3.5f, 4.5f, 5.5f, 7, 8});

  // σ = 2⁻¹¹ (an FP32 scale, scale_format = fp32; below E4M3's smallest subnormal 2⁻⁹). c·σ = (c/4)·2⁻⁹:
  //   |c| = 1: 0.25·2⁻⁹ < 2⁻¹⁰ flushes to ±0; |c| = 2: exactly 2⁻¹⁰, the tie between 0 and 2⁻⁹ goes to 0;
  //   |c| = 3: 0.75 → 1·2⁻⁹; 4: 1; 5: 1.25 → 1; 6: 1.5 → 2 (tie, even); 7: 1.75 → 2; −8: −2 = −2⁻⁸.
  const float u = 0x1p-9f;
  const Table small = int4_fp8_lut(0x1p-11f);
  CHECK(small == Table{-2 * u, -2 * u, -2 * u, -u, -u, -u, -0.0f, -0.0f, 0, 0, 0, u, u, u, 2 * u, 2 * u});
  CHECK(std::signbit(small[7]));   // −1·σ flushes to −0 (the sign is kept)
  CHECK(!std::signbit(small[9]));  // +1·σ to +0
  CHECK(int4_fp8_lut_events(0x1p-11f) ==
        std::array<bool, 16>{false, false, false, false, false, false, true, true, false, true, true, false, false, false,
                             false, false});  // c = ±1, ±2 flushed
}

TEST_CASE("INT4 → E4M3 LUT: σ = 0, saturation and the 464 boundary", "[fireq]") {
  // σ = 0 (an all-zero token): every entry is zero, negative codes give −0.0, c = 0 gives +0. The non-zero
  // codes count as flushed, but such a token's codes are all 0.
  const Table zero = int4_fp8_lut(0.0f);
  const std::array<bool, 16> zero_events = int4_fp8_lut_events(0.0f);
  for (int c = -8; c < 8; ++c) {
    CHECK(zero[c + 8] == 0.0f);
    CHECK(std::signbit(zero[c + 8]) == (c < 0));
    CHECK(zero_events[c + 8] == (c != 0));
  }

  // σ = 448 (E4M3's largest, a saturated token scale): ±448 for c = ±1, and |c|·448 ≥ 896 > 464 saturates
  // to ±448 for |c| ≥ 2, which are events.
  const Table big = int4_fp8_lut(448.0f);
  const std::array<bool, 16> big_events = int4_fp8_lut_events(448.0f);
  for (int c = -8; c < 8; ++c) {
    CHECK(big[c + 8] == (c == 0 ? 0.0f : c > 0 ? 448.0f : -448.0f));
    CHECK(big_events[c + 8] == (std::abs(c) >= 2));
  }

  // σ = 232 = 1.1101₂·2⁷ (an FP32 scale; the E4M3 spacing at 2⁷ is 16): σ is the midpoint of 224 = 1.110₂·2⁷
  // and 240 = 1.111₂·2⁷ and goes to the even 224; 2σ = 464 is E4M3's overflow midpoint, which rounds to the
  // even 448 — finite, not an event; 3σ = 696 > 464 saturates and is one.
  const Table edge = int4_fp8_lut(232.0f);
  const std::array<bool, 16> edge_events = int4_fp8_lut_events(232.0f);
  CHECK(edge[1 + 8] == 224.0f);
  CHECK(edge[2 + 8] == 448.0f);
  CHECK(edge[-2 + 8] == -448.0f);
  CHECK(!edge_events[2 + 8]);
  CHECK(!edge_events[-2 + 8]);
  CHECK(edge[3 + 8] == 448.0f);
  CHECK(edge_events[3 + 8]);
  CHECK(edge_events[-8 + 8]);
}

TEST_CASE("INT4 → E4M3 LUT over every positive E4M3 scale: symmetric, monotone, within 2⁻⁴", "[fireq]") {
  for (int bits = 0x01; bits <= 0x7E; ++bits) {  // every positive finite E4M3 value (0x7F is the NaN)
    const float sigma = formats::fp8_value(uint8_t(bits), formats::Fp8::e4m3);
    const Table t = int4_fp8_lut(sigma);
    const std::array<bool, 16> ev = int4_fp8_lut_events(sigma);
    INFO("σ = " << sigma);
    CHECK(t[8] == 0.0f);
    CHECK(!std::signbit(t[8]));
    CHECK(!ev[8]);
    for (int c = 1; c <= 7; ++c) CHECK(t[-c + 8] == -t[c + 8]);  // entry(−c) = −entry(c)
    for (int c = -8; c < 8; ++c) {
      CHECK(is_e4m3(t[c + 8]));
      if (c < 7) CHECK(t[c + 8] <= t[c + 9]);  // monotone in the code
      // c·σ is exact in FP32 (4 + 4 significant bits); in E4M3's normal range [2⁻⁶, 448] RNE errs by at
      // most 2⁻⁴ relative (half of 2⁻³), below it by at most half the subnormal spacing 2⁻⁹.
      const double exact = double(c) * double(sigma), err = std::abs(double(t[c + 8]) - exact);
      if (std::abs(exact) > 464.0) {
        CHECK(std::abs(t[c + 8]) == 448.0f);
        CHECK(ev[c + 8]);
      } else {
        CHECK(err <= std::max(0x1p-4 * std::abs(exact), 0x1p-10));
        CHECK(ev[c + 8] == (c != 0 && t[c + 8] == 0.0f));
      }
    }
  }
}

}  // namespace
}  // namespace attnlab::fireq
