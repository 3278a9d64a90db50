// attnlab kernels: KIVI decode attention on the GPU (TurboAttention §5.3 and §2.4: the KIVI baseline) —
// one query token per head over a KIVI-compressed KV cache (per-channel key groups, per-token value
// groups, the FP16 residual), laid out as core/variants/kivi_layout.h says. The codes are dequantized to
// FP16 on chip exactly as the `kivi` reference does and attention runs in FP16 on tensor cores;
// kernels/kivi/kivi_decode.cu states how, and why the result equals the reference's.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace attnlab::kernels {

// The caches of every (batch, KV head) — a "pair" — in GPU memory; every pair has the same sizes
// (kivi_layout::Sizes), so pair p's part of each array starts at p times its per-pair size.
struct KiviCacheArgs {
  const uint8_t* k_codes = nullptr;      // (pairs, slots, code_bytes)
  const uint8_t* v_codes = nullptr;      // (pairs, slots, code_bytes)
  const __half* k_params = nullptr;      // (pairs, k_groups, d, 2): s, z in kivi_layout's quad order
  const __half* v_params = nullptr;      // (pairs, slots, 64, VG, 2)
  const __half* k_residual = nullptr;    // (pairs, res_slots, 64, d) in A-fragment order
  const __half* v_residual = nullptr;    // (pairs, res_slots, 64, d)
  const uint8_t* slot_exact = nullptr;   // (pairs, slots): kivi_image.h's flags — 1: dequantize in FP16 arithmetic
  int pairs = 0, head_dim = 0, bits = 2, group = 32;
  int quantized_tokens = 0;              // Q: the leading tokens held as codes (a multiple of group)
  int residual_tokens = 0;               // N − Q: the FP16 rest
};

struct KiviDecodeArgs {
  KiviCacheArgs cache;
  const __half* q = nullptr;   // (B, Hq, d) the step's query, FP16
  __half* o = nullptr;         // (B, Hq, d)
  float* lse = nullptr;        // (B, Hq) natural-log logsumexp
  float* workspace = nullptr;  // kivi_decode_workspace_bytes(args) when chains > 1
  int batch = 0, q_heads = 0, kv_heads = 0;
  int chains = 1;              // per pair: contiguous runs of its tiles, one warp each (kivi_decode_chains)
  float scale = 0;             // softmax scale
};

// A compiled kernel exists: d ∈ {64, 128}, bits ∈ {2, 4}, group a power of two ≥ 16, ≤ 8 query heads per
// KV head.
bool kivi_decode_supports(int head_dim, int bits, int group, int gqa_group);

// The KV tiles (64 tokens) of one pair: quantized slots, then residual slots.
int kivi_decode_tiles(const KiviCacheArgs& c);

// The warps one SM holds at once for this cache's kernel (occupancy × warps per CTA).
cudaError_t kivi_decode_warps_per_sm(const KiviCacheArgs& c, int& warps);

// Chains per pair for `pairs` pairs of `tiles` tiles on `sm_count` SMs holding `warps_per_sm` warps each
// (kivi_decode_warps_per_sm): core/kernel_traits.h's balanced_warp_chains (≤ 128, ≤ tiles) — every chain resident
// at once, the shortest chains, the fewest among equals; one when the pairs alone fill the GPU. Since v5: flash2's
// decode_splits before took 11 chains at GQA 4:1 on an H100 at three CTAs per SM (3 CTAs on 88 SMs, 2 on 44).
int kivi_decode_chains(int pairs, int tiles, int sm_count, int warps_per_sm);
size_t kivi_decode_workspace_bytes(const KiviDecodeArgs& a);

// Test support: K̂ and V̂ of pair 0's quantized slots as the chains kernel dequantizes them (its unpacking, the
// FP16 or FP32 path each slot's flag selects), token-major (slots·64, d) FP16 each. Synchronous errors only.
cudaError_t kivi_dequant_probe(const KiviCacheArgs& c, __half* k_hat, __half* v_hat);

// The chains, then (chains > 1) their merge. Returns the first launch error; cudaErrorInvalidValue for a
// shape kivi_decode_supports refuses or a chain count outside [1, tiles].
cudaError_t kivi_decode(const KiviDecodeArgs& a, cudaStream_t stream);

}  // namespace attnlab::kernels
