// attnlab kernels: FireQ decode attention on the GPU (FireQ §3.1.1, §3.2.2 Alg. 1 at one query token) — the
// query in E4M3 with its Eq. 2 scale, over the INT4 K̃/V cache with E4M3 per-token scales laid out as
// core/variants/fireq_layout.h says. Each INT4 code becomes its FP8 operand through §3.1.1's 16-entry lookup
// table by byte permutes, and both products run on FP8 tensor cores (mma.m16n8k32 e4m3, sm_89 and later);
// kernels/fireq/fireq_decode.cu states how, and how the result differs from the `fireq` reference's.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace attnlab::kernels {

// Every (batch, KV head)'s cache — a "pair" — in GPU memory: pair p's tiles start at p·tiles·tile_bytes.
struct FireqCacheArgs {
  const uint8_t* tiles = nullptr;  // (pairs, tiles_for(tokens), tile_bytes(d))
  int pairs = 0, head_dim = 0, tokens = 0;
};

struct FireqDecodeArgs {
  FireqCacheArgs cache;
  const uint8_t* q = nullptr;      // (B, Hq, d) Q̂ = FP8(Q̃/β) as E4M3 bytes (Eq. 2; Q̃ = Q·s, §3.2.1)
  const float* q_scale = nullptr;  // (B, Hq) β·τ, the factor S takes per query head (Alg. 1 l. 8)
  __nv_bfloat16* o = nullptr;      // (B, Hq, d)
  float* lse = nullptr;            // (B, Hq) natural-log logsumexp
  float* workspace = nullptr;      // fireq_decode_workspace_bytes(args) when chains > 1
  int batch = 0, q_heads = 0, kv_heads = 0;
  int chains = 1;                  // per pair: contiguous runs of its tiles, one warp each
};

// A compiled kernel exists: d ∈ {64, 128}, ≤ 8 query heads per KV head; the GPU must be sm_89 or newer.
bool fireq_decode_supports(int head_dim, int gqa_group);

int fireq_decode_tiles(const FireqCacheArgs& c);  // 64-token tiles of one pair

// The warps one SM holds at once for this head dim's kernel (occupancy × warps per CTA).
cudaError_t fireq_decode_warps_per_sm(int head_dim, int& warps);

// Chains per pair (≤ 128) on sm_count SMs holding warps_per_sm warps each: core/kernel_traits.h's
// balanced_warp_chains, the rule the cost model applies too.
int fireq_decode_chains(int pairs, int tiles, int sm_count, int warps_per_sm);
size_t fireq_decode_workspace_bytes(const FireqDecodeArgs& a);

// The chains, then (chains > 1) their merge. Returns the first launch error; cudaErrorInvalidValue for a
// shape fireq_decode_supports refuses or a chain count outside [1, tiles].
cudaError_t fireq_decode(const FireqDecodeArgs& a, cudaStream_t stream);

// Test hook: converts every code c ∈ [−8, 7] under every E4M3 scale byte s ∈ [0, 127] through the kernel's
// lookup table and byte permutes; out[(s·16) + c + 8] is the E4M3 byte. out is a device buffer of 2048 bytes.
cudaError_t fireq_lut_probe(uint8_t* out, cudaStream_t stream);

}  // namespace attnlab::kernels
