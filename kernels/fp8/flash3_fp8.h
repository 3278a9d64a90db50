// attnlab kernels: the `flash3_fp8` kernel — FlashAttention-3's FP8 forward (block-scaled E4M3, §3.3) on
// Hopper's FP8 warpgroup MMA (sm_90a), computing what core/variants/flash3_fp8.cpp emulates (its head comment
// is the contract), from the inputs that variant requires in HBM:
//   Q, K in E4M3 (the codes), one FP32 scale per block of 128 query rows / 128 keys of each head;
//   V in E4M3 transposed (d × keys, keys padded to a multiple of 16 and permuted per 16 as int_flash's Vᵀ:
//   kernels/common/vt_permutation.h — 8-bit wgmma reads its B operand K-major only, and the permutation lets the
//   S accumulator's registers be P's A fragments), one FP32 scale per block of 128 keys;
//   O in FP16, the logsumexp in FP32.
// The kernel's tile is the reference's default block (B_r = B_c = 128): the scales are per tile, so other
// blocks are another function (the backend refuses them and says so).
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace attnlab::kernels {

struct Flash3Fp8Args {
  const uint8_t* q = nullptr;   // (B, Hq, Nq, d) E4M3
  const uint8_t* k = nullptr;   // (B, Hkv, Nkv, d) E4M3
  const uint8_t* vt = nullptr;  // (B, Hkv, d, kv_pad) E4M3 Vᵀ, keys permuted per 16, padding keys 0
  const float* s_q = nullptr;   // (B, Hq, ⌈Nq / 128⌉)
  const float* s_k = nullptr;   // (B, Hkv, ⌈Nkv / 128⌉)
  const float* s_v = nullptr;   // (B, Hkv, ⌈Nkv / 128⌉)
  __half* o = nullptr;          // (B, Hq, Nq, d)
  float* lse = nullptr;         // (B, Hq, Nq)
  int batch = 0, q_heads = 0, kv_heads = 0, q_len = 0, kv_len = 0, kv_pad = 0, head_dim = 0;
  bool causal = false;
  float scale = 0;
  bool ping_pong = true;  // the two warpgroups' MMA issues alternate (kv_ring.cuh); false: as they come.
                          // The same numbers either way, bit for bit (the [gpu] test holds it).
  bool tma_producer = true;  // K/V tiles copied by a producer warpgroup's TMA loads (FA3's warp specialization);
                             // false: by every consumer thread's cp.async. The same numbers, bit for bit.
};

inline constexpr int kFlash3Fp8Block = 128;  // B_r = B_c: the scale blocks the kernel reads

bool flash3_fp8_supports(int head_dim);  // 64 and 128
// Launches on `stream`; cudaErrorNotSupported where no sm_90a kernel can run, cudaErrorInvalidValue on bad args.
cudaError_t flash3_fp8_forward(const Flash3Fp8Args& a, cudaStream_t stream);

}  // namespace attnlab::kernels
