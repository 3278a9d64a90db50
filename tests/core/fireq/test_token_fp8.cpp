// FireQ's FP8 E4M3 with a BF16 scale (Eq. 2, token_fp8.h), per token and per block of tokens: hand-derived
// scales and codes, the block's max taken over all its tokens and channels, a short last block, and the
// fallbacks (β = 1) for an all-zero block and for a β that is not a normal float.
#include "core/fireq/token_fp8.h"
#include "tests/catch.h"

#include <vector>

namespace attnlab::fireq {
namespace ATTNLAB_FILE_LOCAL {

TEST_CASE("Eq. 2 per block of tokens: one BF16 β over the block's tokens and channels", "[fireq]") {
  // Two tokens of d = 2. One block: β = bf16(7/448) = 2⁻⁶ exactly (7/448 = 1/64), x̂ = x·64.
  std::vector<float> x = {3.0f, 0.0f, 0.0f, 7.0f};
  TokenFp8 b = quantize_block_fp8(x.data(), 2, 2, 2);
  CHECK(b.scale == std::vector<float>{0x1p-6f});
  CHECK(x == std::vector<float>{192.0f, 0.0f, 0.0f, 448.0f});
  CHECK(b.saturated == 0);
  CHECK(b.fallback_scales == 0);
  // Per token: β₀ = bf16(3/448) = bf16(1.714286·2⁻⁸) = (219/128)·2⁻⁸ (1.714286·128 = 219.43 → 219), so
  // 3/β₀ = 448.88, which E4M3 rounds to 448 (below the 464 overflow midpoint: not saturated); β₁ = 2⁻⁶.
  x = {3.0f, 0.0f, 0.0f, 7.0f};
  const TokenFp8 t = quantize_token_fp8(x.data(), 2, 2);
  CHECK(t.scale == std::vector<float>{219.0f / 32768.0f, 0x1p-6f});
  CHECK(x == std::vector<float>{448.0f, 0.0f, 0.0f, 448.0f});
  CHECK(t.saturated == 0);
}

TEST_CASE("Eq. 2 per block: a short last block, and the β = 1 fallbacks", "[fireq]") {
  // 7 tokens of d = 2 in blocks of 3: tokens 0–2, 3–5, and 6 alone.
  std::vector<float> x = {
      1.0f, -2.0f, 0.5f, 0.0f, 0.0f, 448.0f,  // block 0: max 448, β = bf16(1) = 1, E4M3 values kept
      0.0f, 0.0f,  0.0f, 0.0f, 0.0f, 0.0f,    // block 1: all zero, β = 1, not a fallback
      1e-40f, 0.0f,                           // block 2: β = bf16(1e-40/448) is subnormal: β = 1, x̂ = 0
  };
  const TokenFp8 b = quantize_block_fp8(x.data(), 7, 2, 3);
  CHECK(b.scale == std::vector<float>{1.0f, 1.0f, 1.0f});
  CHECK(b.fallback_scales == 1);
  CHECK(b.saturated == 0);
  CHECK(x == std::vector<float>{1.0f, -2.0f, 0.5f, 0.0f, 0.0f, 448.0f, 0, 0, 0, 0, 0, 0, 0.0f, 0.0f});
  CHECK(quantize_block_fp8(x.data(), 0, 2, 3).scale.empty());
}

}  // namespace
}  // namespace attnlab::fireq
