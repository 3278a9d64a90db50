// attnlab core, FireQ: per-token FP8 E4M3 quantization with a BF16 scale, FireQ §2.1 Eq. 2
// (ŷᵢ = FP8(yᵢ/β), yᵢ ≈ β·ŷᵢ), for the queries of Alg. 1 and, in prefill with fireq's prefill_kv = fp8,
// for K̃ and V (App. D: "the key and value matrices are quantized in FP8 (not in INT4) for the prefill
// phase"). Readable ground truth, not a fast path.
//
// One scale per token (row) of x (tokens, d), quantized in place:
//   β = bf16(max|x|/448)   the absmax rule (448 is E4M3's largest value), divided in FP32, rounded to BF16
//                          to nearest even (App. A.1: a "per-token activation scale factor")
//   x̂ = FP8(x/β)          an FP32 division, then E4M3 with round-to-nearest-even and saturation
// Since β ≥ max|x|/448·(1 − 2⁻⁸) (BF16 keeps 8 significant bits), |x/β| < 450 < 464 (E4M3's overflow
// midpoint, fp8.h): no finite element saturates (`saturated` counts those that do, 0 by construction).
// A row with max|x| = 0, or whose β is not a normal float (max|x| < 448·2⁻¹²⁶) or not finite, uses β = 1;
// a non-zero row among them counts in `fallback_tokens` (β = 1 flushes a tiny row to 0, and saturates an
// infinite element to ±448).
// Non-finite input is the caller's to refuse or to keep: the elements pass through the arithmetic above.
#pragma once

#include <cstdint>
#include <vector>

namespace attnlab::fireq {

struct TokenFp8 {
  std::vector<float> scale;     // (tokens): β, a BF16 value held in a float
  int64_t saturated = 0;        // elements with |x/β| > 464, stored as ±448
  int64_t fallback_tokens = 0;  // non-zero tokens whose β was not a finite normal float (β = 1 used)
};

// x is (tokens, d); on return it holds x̂, E4M3 values held in floats (x ≈ β·x̂ row by row).
TokenFp8 quantize_token_fp8(float* x, int64_t tokens, int64_t d);

}  // namespace attnlab::fireq
