// attnlab core: how turbo's `sas_share` splits P̃'s exponentials between SAS (the FMA pipe) and exact exp (the SFU)
// — one rule for the reference (core/variants/turbo.cpp, whose head comment says why) and the prefill kernel
// (kernels/turbo/turbo_prefill_sm90.cu): of every kSasSpan key columns of a tile, the first sas_columns take SAS,
// in whole blocks of kSasBlock columns (the n8 blocks of the MMA's score accumulator).
#pragma once

#include <cmath>

namespace attnlab::variants {

inline constexpr int kSasSpan = 64;  // the paper's B_c, and the prefill kernel's tile
inline constexpr int kSasBlock = 8;  // an n8 block: every thread of a warp holds two of its columns

// The 8-key blocks of every kSasSpan columns whose P̃ takes SAS (0 … 8; share a multiple of 1/8, validated).
inline int sas_blocks(double share) { return static_cast<int>(std::lround(share * (kSasSpan / kSasBlock))); }

}  // namespace attnlab::variants
