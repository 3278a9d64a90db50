// attnlab core: how `turbo` decode splits one KV head's tiles into chains (flash-decoding, Dao et al.'s
// split-KV) — part of the variant's definition, not only of its kernel, because SAS makes the result
// depend on it.
//
// Alg. 2 is one loop over the KV tiles, and with SAS as its exponential its result depends on the order:
// SAS(0) = c0 ≠ 1 rescales ℓ and O at every tile (core/sas.h), and the threshold n_r drops scores
// relative to the running max of the tiles seen so far. A GPU fills its SMs in decode only by splitting
// the tiles of each (batch, KV head) over C independent chains and merging their results, so the
// reference computes exactly that: chain c runs Alg. 2's loop over tiles [⌊c·T/C⌋, ⌊(c+1)·T/C⌋) from a
// fresh state, and the chains' (m, ℓ, O) are merged in chain order with the same exponential —
// M' = max(M, m_c), α = SAS(M − M'), β = SAS(m_c − M'), ℓ = α·ℓ + β·ℓ_c, O = α·O + β·O_c (each product
// rounded, then the sum; an empty accumulator takes the chain as it is). C = 1 is Alg. 2 as printed.
// The variant parameter kv_splits picks C; 0 takes the rule below, which depends on the problem's shape
// alone — never on the GPU — so the reference, the model and the kernel agree on every machine.
#pragma once

#include <cstdint>

namespace attnlab::turbo_chains {

// Chains over the whole GPU: two waves of 16 warps per SM on an H100's 132 SMs (four of 8) — enough that a
// mixed 2/4-bit cache's 2-bit half alone fills the SMs (kernels/PERF.md, turbo decode v9).
inline constexpr int64_t kChainTarget = 4096;
// Auto never makes chains shorter than this: a chain's prologue (Q to INT8, filling its ring) and its
// partial result are paid per chain (4 tiles measured 16% slower than 8 at Fig. 6's shape, v9).
inline constexpr int64_t kMinTilesPerChain = 8;

// C for `pairs` = batch × KV heads and T tiles per head; requested = kv_splits (0 = auto).
constexpr int64_t chains(int64_t requested, int64_t pairs, int64_t tiles) {
  int64_t c = requested;
  if (c <= 0) {
    c = (kChainTarget + pairs - 1) / (pairs > 0 ? pairs : 1);
    const int64_t longest = tiles / kMinTilesPerChain;
    c = c < longest ? c : longest;
  }
  if (c > tiles) c = tiles;
  return c < 1 ? 1 : c;
}

// First tile of chain c of C over T tiles (chain c covers [first(c), first(c + 1))).
constexpr int64_t first_tile(int64_t c, int64_t C, int64_t tiles) { return c * tiles / C; }

}  // namespace attnlab::turbo_chains
