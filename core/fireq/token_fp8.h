// attnlab core, FireQ: FP8 E4M3 quantization with a BF16 scale, FireQ §2.1 Eq. 2 (ŷᵢ = FP8(yᵢ/β),
// yᵢ ≈ β·ŷᵢ), for the queries of Alg. 1 (one β per token) and, in prefill with fireq's prefill_kv = fp8,
// for K̃ (per token) and V (per KV tile of B_c tokens) (App. D: "the key and value matrices are quantized
// in FP8 (not in INT4) for the prefill phase"; fireq.cpp's head comment gives V's granularity and why).
// Readable ground truth, not a fast path.
//
// One scale per block of `block` consecutive tokens (rows) of x (tokens, d), quantized in place; block b
// holds tokens [b·block, min((b + 1)·block, tokens)), and block = 1 is one scale per token:
//   β = bf16(max|x|/448)   the absmax rule over the block's tokens and channels (448 is E4M3's largest
//                          value), divided in FP32, rounded to BF16 to nearest even (App. A.1: a
//                          "per-token activation scale factor")
//   x̂ = FP8(x/β)          an FP32 division, then E4M3 with round-to-nearest-even and saturation
// Since β ≥ max|x|/448·(1 − 2⁻⁸) (BF16 keeps 8 significant bits), |x/β| < 450 < 464 (E4M3's overflow
// midpoint, fp8.h): no finite element saturates (`saturated` counts those that do, 0 by construction).
// A block with max|x| = 0, or whose β is not a normal float (max|x| < 448·2⁻¹²⁶) or not finite, uses β = 1;
// a non-zero block among them counts in `fallback_scales` (β = 1 flushes a tiny block to 0, and saturates
// an infinite element to ±448).
// Non-finite input is the caller's to refuse or to keep: the elements pass through the arithmetic above.
#pragma once

#include <cstdint>
#include <vector>

namespace attnlab::fireq {

struct TokenFp8 {
  std::vector<float> scale;     // (⌈tokens / block⌉): β, a BF16 value held in a float
  int64_t saturated = 0;        // elements with |x/β| > 464, stored as ±448
  int64_t fallback_scales = 0;  // non-zero tokens (blocks) whose β was not a finite normal float (β = 1 used)
};

// x is (tokens, d); on return it holds x̂, E4M3 values held in floats (x ≈ β·x̂ block by block). block ≥ 1.
TokenFp8 quantize_block_fp8(float* x, int64_t tokens, int64_t d, int64_t block);

// One β per token: quantize_block_fp8 with block = 1 (scale is (tokens)).
TokenFp8 quantize_token_fp8(float* x, int64_t tokens, int64_t d);

}  // namespace attnlab::fireq
