// fireq's GPU cache layout (core/variants/fireq_layout.h) and its host image (fireq_image.h). The kernel's
// reading of the layout — the mma.m16n8k32 fragments it builds from each word — is checked end to end on
// the GPU (tests/kernels/fireq/test_fireq_decode_kernel.cpp); here, on the host: every (token, channel) of a tile
// has its own nibble and together they fill the tile's code regions, the K slice of lane t holds the
// channels of B-fragment k-indices 4t..4t+3 and 16 + 4t.. of every k-step (PTX ISA, m16n8k32 fragments),
// and an image holds the codes and scales it was built from.
#include "core/fireq/token_int4.h"
#include "core/formats/fp8.h"
#include "core/variants/fireq_image.h"
#include "core/variants/fireq_layout.h"
#include "tests/catch.h"

#include <random>
#include <set>

namespace attnlab {
namespace ATTNLAB_FILE_LOCAL {

namespace L = fireq_layout;

TEST_CASE("fireq layout: a bijection between a tile's codes and its nibbles", "[fireq][layout]") {
  for (int64_t d : {64, 128}) {
    std::set<int64_t> k, v;
    for (int64_t r = 0; r < L::kTile; ++r)
      for (int64_t c = 0; c < d; ++c) {
        k.insert(L::k_nibble(d, r, c));
        v.insert(L::v_nibble(d, r, c));
      }
    const size_t nibbles = size_t(2 * L::kTile * L::row_bytes(d));
    CHECK(k.size() == nibbles);
    CHECK(v.size() == nibbles);
    CHECK(*k.rbegin() == int64_t(nibbles) - 1);
    CHECK(*v.rbegin() == int64_t(nibbles) - 1);
    CHECK(L::tile_bytes(d) == 2 * L::kTile * L::row_bytes(d) + 2 * L::kTile);
    CHECK(L::tile_bytes(d) % 16 == 0);  // 16-byte copies
  }
}

TEST_CASE("fireq layout: lane t's K slice holds its B-fragment channels in nibble order", "[fireq][layout]") {
  for (int64_t d : {64, 128})
    for (int64_t t = 0; t < 4; ++t)
      for (int64_t step = 0; step < d / 32; ++step)
        for (int64_t k = 0; k < 8; ++k) {  // nibble k of word `step` → byte k mod 4 of register b0 (k < 4) or b1
          const int64_t channel = 32 * step + (k < 4 ? 4 * t + k : 16 + 4 * t + (k - 4));
          CHECK(L::k_nibble(d, 5, channel) == 5 * d + t * (d / 4) + 8 * step + k);
        }
}

TEST_CASE("fireq image: the codes and E4M3 scales it was built from", "[fireq][layout]") {
  std::mt19937 rng(3);
  std::normal_distribution<float> nd;
  for (int64_t d : {64, 128}) {
    const int64_t n = 130;  // a partial last tile
    std::vector<float> kx(size_t(n * d)), vx(size_t(n * d));
    for (float& x : kx) x = nd(rng);
    for (float& x : vx) x = 3 * nd(rng);
    const fireq::TokenInt4 k = fireq::quantize_token_int4(kx.data(), n, d, fireq::ScaleFormat::fp8_e4m3);
    const fireq::TokenInt4 v = fireq::quantize_token_int4(vx.data(), n, d, fireq::ScaleFormat::fp8_e4m3);
    const std::vector<uint8_t> img = L::device_image(k, v);
    REQUIRE(int64_t(img.size()) == L::tiles_for(n) * L::tile_bytes(d));
    int64_t bad = 0;
    for (int64_t tok = 0; tok < n; ++tok) {
      const uint8_t* tile = img.data() + (tok / L::kTile) * L::tile_bytes(d);
      bad += formats::fp8_value(tile[L::sigma_k_offset(d) + tok % L::kTile], formats::Fp8::e4m3) != k.scale[size_t(tok)];
      bad += formats::fp8_value(tile[L::sigma_v_offset(d) + tok % L::kTile], formats::Fp8::e4m3) != v.scale[size_t(tok)];
      for (int64_t c = 0; c < d; ++c) {
        bad += L::code_at(img, d, false, tok, c) != k.q[size_t(tok * d + c)];
        bad += L::code_at(img, d, true, tok, c) != v.q[size_t(tok * d + c)];
      }
    }
    CHECK(bad == 0);
    // The empty rows of the last tile are 0: codes, and σ (every table entry 0).
    const uint8_t* last = img.data() + (L::tiles_for(n) - 1) * L::tile_bytes(d);
    for (int64_t r = n % L::kTile; r < L::kTile; ++r) {
      CHECK(last[L::sigma_k_offset(d) + r] == 0);
      for (int64_t c = 0; c < d; ++c) CHECK(L::code_at(img, d, true, (n / L::kTile) * L::kTile + r, c) == 0);
    }
  }
  fireq::TokenInt4 odd = fireq::quantize_token_int4(std::vector<float>(96, 1.f).data(), 1, 96, fireq::ScaleFormat::fp8_e4m3);
  CHECK_THROWS(L::device_image(odd, odd));  // d = 96: no layout
}

}  // namespace
}  // namespace attnlab
