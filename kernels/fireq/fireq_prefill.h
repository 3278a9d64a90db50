// attnlab kernels: the `fireq` prefill kernel on Hopper's FP8 warpgroup MMA (sm_90a), computing what
// core/variants/fireq.cpp emulates (its head comment is the contract) from the reference's own operands
// (kernels/fireq/fireq_prefill_host.h builds them), for both of the variant's prefill K/V formats:
// prefill_kv = int4 (`int4_kv`, the variant's default) reads the INT4 cache decode reads, where it lies
// (core/variants/fireq_layout.h: per-token codes of K̃ and V with E4M3 scales σ), every code becoming its E4M3
// operand LUT_σ[c] = FP8(c·σ) in registers (§3.1.1 Step 1, kernels/fireq/fireq_lut.cuh) on its way into shared
// memory; Q̂ and β as below; S = (Q̂·LUT(K)ᵀ)·(β·τ), O += P̂·LUT(V). prefill_kv = fp8 (FireQ App. D: K and V in
// FP8 for prefill) reads:
//   Q̂ (E4M3) with β per query token (Eq. 2, a BF16 value), Q̃ = Q·s smoothed (§3.2.1);
//   K̂ (E4M3) with β_K per key token (BF16), K̃ = K/s;
//   V̂ transposed (d × keys, keys padded to a multiple of 16 and permuted per 16: kernels/common/vt_permutation.h, as
//   flash3_fp8's Vᵀ) with one β_V per KV tile of 128 keys (BF16);
//   O in BF16 (§3.2.2 Stage 3), the logsumexp in FP32.
// The kernel's KV tile is the reference's (its V scale block, and where P̃ is rounded against the running max):
// the reference must run with block_c = 128 (its block_r does not change the numbers). Two loop orders
// (`three_stage`, FP8 mode), the same arithmetic.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace attnlab::kernels {

struct FireqPrefillArgs {
  const uint8_t* q = nullptr;      // (B, Hq, Nq, d) E4M3 Q̂
  const float* beta_q = nullptr;   // (B, Hq, Nq) β per query token
  const uint8_t* cache = nullptr;  // int4_kv: (B, Hkv) pairs of fireq_layout::tiles_for(Nkv) cache tiles
  // fp8 mode (int4_kv false):
  const uint8_t* k = nullptr;      // (B, Hkv, Nkv, d) E4M3 K̂
  const uint8_t* vt = nullptr;     // (B, Hkv, d, kv_pad) E4M3 V̂ᵀ, keys permuted per 16, padding keys 0
  const float* beta_k_tau = nullptr;  // (B, Hkv, kv_pad) fl(β_K·τ) per key token (the reference's per-column
                                      // factor), 0 for the padding keys, keys permuted per 16 as V̂ᵀ's (vt_permutation.h)
  const float* beta_v = nullptr;   // (B, Hkv, ⌈Nkv / 128⌉) β_V per KV tile
  // fp8 mode with fp8_k_scale = tile (k_tile): one β_K per KV tile, in place of beta_k_tau:
  const float* beta_k_tile_tau = nullptr;  // (B, Hkv, ⌈Nkv / 128⌉) fl(β_K,j·τ) per KV tile
  __nv_bfloat16* o = nullptr;      // (B, Hq, Nq, d)
  float* lse = nullptr;            // (B, Hq, Nq)
  int batch = 0, q_heads = 0, kv_heads = 0, q_len = 0, kv_len = 0, kv_pad = 0, head_dim = 0;
  bool causal = false;
  float scale = 0;           // τ = 1/√d as the reference rounds it (FP32)
  bool ping_pong = true;     // the two warpgroups' MMA issues alternate (kv_ring.cuh)
  bool int4_kv = false;      // read `cache` (prefill_kv = int4) instead of k, vt, beta_k_tau, beta_v
  bool k_tile = false;       // fp8 mode: K's scale per KV tile (beta_k_tile_tau, one factor per row and tile)
                             // instead of per key (beta_k_tau, one multiply per score)
  bool fp16_softmax = false;  // FireQ §3.2.2's softmax (softmax_precision = fp16): S₂, m₂ and P̃ in FP16
                              // (core/fireq/softmax_fp16.h); the two-stage order only
  bool three_stage = false;  // false: FA3's two-stage order (S_{j+1} issued before P̂·V̂_j, kv_ring.cuh);
                             // true: FireQ Alg. 1's three-stage order (P̂_{j−2}·V̂_{j−2} and S_j in flight
                             // during the softmax of S_{j−1}, kv_ring3.cuh). The same numbers, bit for bit.
  bool tma_producer = true;  // FP8 mode, either order: K̂, V̂ᵀ and β_K copied by a producer warpgroup's TMA
                             // loads (flash3_fp8's; FireQ App. F Alg. 2); false and the INT4 mode: by the
                             // consumer threads' cp.async. The same numbers, bit for bit.
};

inline constexpr int kFireqPrefillBlock = 128;  // B_r = B_c: the V scale block is the KV tile

// Head dims the kernel is compiled for (64, 128), and whether the three-stage order is (FP8 mode, d = 64 only:
// at d = 128 its two live score accumulators do not fit 255 registers; fireq_prefill_sm90.cu's head comment;
// FP32 softmax only).
bool fireq_prefill_supports(int head_dim, bool three_stage = false, bool int4_kv = false, bool fp16_softmax = false);
// Launches on `stream`; cudaErrorNotSupported where no sm_90a kernel can run, cudaErrorInvalidValue on bad args.
cudaError_t fireq_prefill_forward(const FireqPrefillArgs& a, cudaStream_t stream);

}  // namespace attnlab::kernels
