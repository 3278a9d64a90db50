// attnlab kernels: the `int_flash` kernel — INT-FlashAttention Alg. 1 (full INT8) on INT8 tensor cores.
//
// Computes what core/variants/int_flash.cpp emulates, from the inputs Alg. 1 requires in HBM: INT8 Q and
// K with one FP32 scale per token, INT8 V with one FP32 scale per (batch, KV head). Per tile:
//   S = diag(s_Q)(Q·Kᵀ)diag(s_K)·scale   mma.m16n8k32 s8·s8 → s32, scaled in FP32
//   P = ⌊127·e^{S − m}⌉ (INT8 codes)     ℓ from the codes, O from P·V (s8·s8 → s32, added in FP32)
//   O = (O/ℓ)·s_V in FP16, L = m + log ℓ − log 127
// V is stored transposed (d × N, keys padded to a multiple of 16), with the keys of every 16-key group
// permuted so that the S accumulator's register layout is directly the A operand of P·V (int_flash_host.h
// builds it): ldmatrix cannot transpose bytes, and the permutation is the price of keeping P in registers.
// Half-INT8 (the reference's v_fp16): Q and K as above, V in FP16, P̃ = 2^{S − m} in FP32 rounded to FP16
// for an FP16 P̃·V (flash2's path), ℓ from the FP32 P̃, O = O/ℓ without s_V.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "kernels/common/kernel_path.h"

#include <cstdint>

namespace attnlab::kernels {

struct IntFlashArgs {
  const int8_t* q = nullptr;       // (B, Hq, Nq, d)
  const int8_t* k = nullptr;       // (B, Hkv, Nkv, d)
  const int8_t* vt = nullptr;      // (B, Hkv, d, kv_pad): Vᵀ, keys permuted per 16 (int_flash_host.h)
  const __half* v16 = nullptr;     // half-INT8 (v_fp16): V in FP16, (B, Hkv, Nkv, d); vt and s_v unused
  bool v_fp16 = false;
  const float* s_q = nullptr;      // (B, Hq, Nq)
  const float* s_k = nullptr;      // (B, Hkv, kv_pad), zero-padded
  const float* s_v = nullptr;      // (B, Hkv)
  __half* o = nullptr;             // (B, Hq, Nq, d)
  float* lse = nullptr;            // (B, Hq, Nq)
  int batch = 0, q_heads = 0, kv_heads = 0, q_len = 0, kv_len = 0, kv_pad = 0, head_dim = 0;
  bool causal = false;
  // The wgmma path's K/V loads (int_flash_sm90.cu): a producer warpgroup's TMA loads into an mbarrier ring, the
  // consumers at 240 registers (FlashAttention-3 §3.1's warp specialization); false: every thread's cp.async, three
  // stages, a CTA barrier per tile (wgmma v2). The default because the same steps made flash3_fp8 — the same tiles
  // and loop on FP8 operands — 1.08–1.15× faster (the ring, v3), up to 1.08× more (ping-pong, v4) and 1.16–1.23×
  // more (the producer, v8) on the H100 (kernels/PERF.md); int_flash v3's own time is PERF.md's to record. The
  // same numbers either way, bit for bit.
  bool tma_producer = true;
  bool ping_pong = true;  // with the producer: the two warpgroups' MMA issues alternate (kv_ring.cuh). Same bits.
  // The wgmma path, full INT8: P·V kept in INT32 across tiles while a row's max holds (the reference's
  // pv_accumulation = across_tiles, other numbers than the default per_tile). Not with scores or v_fp16; the
  // mma.sync path answers cudaErrorNotSupported.
  bool pv_across_tiles = false;
  float scale = 0;
  // automatic = mma.sync (B_c 64): the variant's default block_c, which int_flash's codes depend on (kernels/PERF.md,
  // "int_flash wgmma v2", found on the way); wgmma (B_c 128) when asked for, as the backend does where block_c = 128.
  KernelPath path = KernelPath::automatic;
  int32_t* scores = nullptr;  // tests: (B, Hq, Nq, Nkv) receives the INT32 Q·Kᵀ (l. 9 before scaling)
};

bool int_flash_supports(int head_dim);  // 64 and 128

// The generation int_flash_forward runs for `a` on the current device (never `automatic`).
KernelPath int_flash_resolved_path(const IntFlashArgs& a);

// Launches on `stream`; cudaErrorNotSupported when the warpgroup path is asked for where it cannot run.
cudaError_t int_flash_forward(const IntFlashArgs& a, cudaStream_t stream);

}  // namespace attnlab::kernels
