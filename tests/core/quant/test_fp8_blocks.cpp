// FP8 block quantization (core/quant/fp8_blocks.h), the rule flash3_fp8's reference and its kernel's host side
// share: a scale per block of rows from that block's absmax, each code E4M3(x / s), and the counts.
#include "core/formats/fp8.h"
#include "core/quant/fp8_blocks.h"
#include "core/quant/quantize.h"
#include "tests/catch.h"
#include "tests/support/input_error.h"

#include <cmath>
#include <limits>
#include <vector>

namespace attnlab::quant {
namespace ATTNLAB_FILE_LOCAL {

TEST_CASE("fp8_block_codes: one absmax scale per block of rows, codes of x / s", "[quant][fp8]") {
  // 5 rows × 3 columns in blocks of 2 rows: blocks {0,1}, {2,3}, {4}. Block 1 is all zero (scale 1), block 2
  // holds 10⁻⁷, far below E4M3's smallest subnormal (2⁻⁹) at its block's scale 1: a zeroed input.
  std::vector<float> x = {1.5f, -3.0f, 0.25f, 7.0f, 0.1f, -0.2f,  // block 0: max 7
                          0.f,  0.f,   0.f,   0.f,  0.f,  0.f,    // block 1: all zero
                          448.f, 1e-7f, -2.f};                    // block 2: max 448
  const Fp8BlockCodes c = fp8_block_codes(x.data(), 5, 3, 2, "test.x");
  REQUIRE(c.scale.size() == 3);
  CHECK(c.scale[0] == scale_for_span(7.0f, formats::kE4M3Max));
  CHECK(c.scale[1] == 1.0f);
  CHECK(c.scale[2] == 1.0f);  // 448 / 448
  REQUIRE(c.bits.size() == x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    INFO("element " << i);
    const float s = c.scale[i / 6];
    CHECK(formats::fp8_value(c.bits[i], formats::Fp8::e4m3) == formats::round_fp8(x[i] / s, formats::Fp8::e4m3));
  }
  CHECK(formats::fp8_value(c.bits[3], formats::Fp8::e4m3) == 448.f);  // the block's maximum lands on E4M3's top
  CHECK(c.zeroed == 1);                                                // 1e-7 / 1 rounds to 0
  CHECK(c.saturated == 0);                                             // absmax scales cannot overflow
  std::vector<float> bad = {1.f, std::numeric_limits<float>::quiet_NaN()};
  CHECK(test::input_error([&] { fp8_block_codes(bad.data(), 1, 2, 1, "test.bad"); }).find("test.bad") != std::string::npos);
}

}  // namespace
}  // namespace attnlab::quant
