// attnlab core: rotary position embedding (RoPE, Su et al. 2021) in the "rotate half" layout.
//
// Channel pairs are (i, i + d/2), i in [0, d/2) — the layout of Llama / Hugging Face and the one FireQ
// (§2, §3.2.1) reasons about: an outlier in pre-RoPE channel i is spread over channels i and i + d/2
// after RoPE. With θ_i = base^(−2i/d) and the token's position p:
//   x'[i]       = x[i]·cos(p·θ_i) − x[i+d/2]·sin(p·θ_i)
//   x'[i+d/2]   = x[i+d/2]·cos(p·θ_i) + x[i]·sin(p·θ_i)
// The inverse rotates by −p·θ_i. Everything is computed in double with the portable elementary
// functions of core/data/random.h (identical bits on every machine) and stored rounded to float.
#pragma once

#include "core/tensor.h"

#include <cstdint>
#include <vector>

namespace attnlab {

// θ_i = base^(−2i/d) for i in [0, d/2).
double rope_frequency(int64_t i, int64_t dim, double base);

// Rotates every token of x (B, H, N, d) by its position; `positions` holds one entry per token
// (size N, shared by all batch entries and heads; negative positions are allowed). Throws
// std::invalid_argument when d is odd, positions.size() != N, or base is not a finite number > 0.
void apply_rope(Tensor& x, const std::vector<int64_t>& positions, double base);
// The inverse rotation: apply_rope_inverse(apply_rope(x)) == x up to float rounding.
void apply_rope_inverse(Tensor& x, const std::vector<int64_t>& positions, double base);

// first, first + 1, …, first + count − 1.
std::vector<int64_t> rope_positions(int64_t count, int64_t first = 0);

}  // namespace attnlab
