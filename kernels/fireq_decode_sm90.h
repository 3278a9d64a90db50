// attnlab kernels: the warpgroup generation of FireQ decode (kernels/fireq_decode_sm90.cu, sm_90a) — what
// kernels/fireq_decode.cu's entry points dispatch to on a Hopper GPU. Same arguments, same outputs (the
// chains' parts in the workspace when chains > 1, merged by fireq_decode.cu).
#pragma once

#include "kernels/fireq_decode.h"

namespace attnlab::kernels {

// The chains (one per CTA: a warpgroup) one SM holds at once at head dim d.
cudaError_t fireq_decode_sm90_chains_per_sm(int head_dim, int& chains);
// Launches the chains kernel only (one CTA per (pair, chain)); the caller merges.
cudaError_t fireq_decode_sm90_chains(const FireqDecodeArgs& a, cudaStream_t stream);

}  // namespace attnlab::kernels
