// attnlab kernels: TurboAttention's prefill attention (App. A Alg. 1 lines 7–12, 20–22; §4 SAS) on Hopper's
// warpgroup MMA (sm_90a), over the INT8 tiles the pre-pass wrote (turbo_cache_write.h): INT8 Q·Kᵀ, the
// online softmax with SAS (or exp2), P̃ quantized per B_r × B_c tile with max/119, INT8 P̃·V.
// kernels/turbo/turbo_prefill_sm90.cu says how it computes, and why it equals the `turbo` reference.
#pragma once

#include "kernels/turbo/turbo_decode.h"

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace attnlab::kernels {

struct TurboPrefillArgs {
  const int8_t* q8 = nullptr;          // (B·Hq, q_len, d) Q^q1, blocks of 64 rows (turbo_quantize_q_blocks)
  const float* s_q = nullptr;          // (B·Hq, ⌈q_len / 64⌉) s_Q per block
  const int8_t* k8 = nullptr;          // (B·Hkv, pad, d) K^q1
  const int8_t* vt8 = nullptr;         // (B·Hkv, d, pad) V^q1 transposed, keys permuted per 16
  const float* block_scales = nullptr; // (B·Hkv, slots, 2) s_K, s_V per 64-key tile (the cache's)
  int slots = 0, pad = 0;
  TurboExpArgs exp;
  __half* o = nullptr;                 // (B·Hq, q_len, d)
  float* lse = nullptr;                // (B·Hq, q_len)
  int batch = 0, q_heads = 0, kv_heads = 0, q_len = 0, kv_len = 0, head_dim = 0;
  bool causal = false;
  float scale = 0;                     // softmax scale (1/√d)
  // The K/V loads (turbo_prefill_sm90.cu's head comment; the variant's kv_loads): a TMA producer warpgroup and the
  // consumers' ping-pong, or every thread's cp.async (false). The numbers do not depend on them.
  bool tma_producer = true, ping_pong = true;
  int32_t* scores = nullptr;           // tests: when set, (B·Hq, q_len, kv_len) the INT32 S of every pair a
                                       // warpgroup computes (SAS FP32 only; a separate instantiation)
};

bool turbo_prefill_supports(int head_dim);  // d ∈ {64, 128}
cudaError_t turbo_prefill_forward(const TurboPrefillArgs& a, cudaStream_t stream);

}  // namespace attnlab::kernels
