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

// Chains over the whole GPU: about two waves of the warps an H100's 132 SMs hold at once, or one where a wave is
// all there is. The kernel runs one chain per warp, 16 warps per SM where its 2-bit code fits four CTAs per SM
// (head_dim 64, or a KV head with at most 2 query heads at 128), 12 where a cache of 2-bit pairs alone fits three
// (d 128 with 3–4 query heads per KV head: 156 registers and 57 KB a CTA), else 8 (kernels/turbo/turbo_decode.cu,
// kCtasPerSm). So 4096 chains where 16 warps fit — enough that a mixed 2/4-bit cache's 2-bit half alone fills the
// SMs —, 1536 where 12 do (one wave on 128 of the 132 SMs: 12 chains of 43 tiles at B 16 × 8 KV heads, N 32k,
// measured 0.2076 ms against two CTAs' 0.2236 with 16 chains, v17; 16 chains over 12 warps, 1.3 waves, 0.2176), and
// 2048 where 8 do: at GQA 4:1, 4096 halved each chain and measured 6% slower than 2048 (kernels/PERF.md, turbo
// decode v9, v10). `narrow`: every pair of the cache is 2-bit (a mixed cache runs one launch sized for 4-bit blocks:
// 8 warps). The rule reads the shape and the widths only, so it holds on every GPU.
inline constexpr int64_t kTwoWaves16 = 4096, kOneWave12 = 1536, kTwoWaves8 = 2048;  // 16, 12, 8 warps per SM
constexpr int64_t chain_target(int64_t head_dim, int64_t group, bool narrow) {
  if (head_dim <= 64 || group <= 2) return kTwoWaves16;
  return narrow && group <= 4 ? kOneWave12 : kTwoWaves8;
}
// The one-wave target is never exceeded (⌊target / pairs⌋ chains a pair: at B 16 × 10 KV heads ⌈1536 / 160⌉
// = 10 would put 1 600 warps on 1 584 slots, a second wave of 16); the two-wave ones are reached (⌈target / pairs⌉).
constexpr bool one_wave(int64_t head_dim, int64_t group, bool narrow) {
  return chain_target(head_dim, group, narrow) == kOneWave12;
}
// Auto never makes chains shorter than this: a chain's prologue (Q to INT8, filling its ring) and its
// partial result are paid per chain (4 tiles measured 16% slower than 8 at Fig. 6's shape, v9).
inline constexpr int64_t kMinTilesPerChain = 8;

// C for `pairs` = batch × KV heads and T tiles per head; requested = kv_splits (0 = auto); head_dim, group (query
// heads per KV head) and narrow (every pair 2-bit) pick the target.
constexpr int64_t chains(int64_t requested, int64_t pairs, int64_t tiles, int64_t head_dim, int64_t group,
                         bool narrow) {
  int64_t c = requested;
  if (c <= 0) {
    const int64_t target = chain_target(head_dim, group, narrow), p = pairs > 0 ? pairs : 1;
    c = one_wave(head_dim, group, narrow) ? target / p : (target + p - 1) / p;
    const int64_t longest = tiles / kMinTilesPerChain;
    c = c < longest ? c : longest;
  }
  if (c > tiles) c = tiles;
  return c < 1 ? 1 : c;
}

// First tile of chain c of C over T tiles (chain c covers [first(c), first(c + 1))).
constexpr int64_t first_tile(int64_t c, int64_t C, int64_t tiles) { return c * tiles / C; }

}  // namespace attnlab::turbo_chains
