// attnlab kernels: TurboAttention's decode step on the GPU (App. A Alg. 2, §3.1–3.3, §4) — attention of
// one query token per head over the progressive INT4/INT2 cache and the INT8 decode buffer, and the two
// per-step pieces that keep the cache: appending a token to the buffer and flushing a full buffer into a
// cache block. The cache's bytes are laid out as core/variants/turbo_layout.h says; kernels/turbo/turbo_decode.cu
// states how the attention computes, and why its result equals the `turbo` reference's.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace attnlab::kernels {

inline constexpr int kTurboBlock = 64;  // B_c = n_b: tokens per cache block and in the buffer

// The compressed cache of every (batch, KV head) — a "pair" — in GPU memory (turbo_layout.h).
struct TurboCacheArgs {
  uint8_t* codes = nullptr;          // every pair's slots: K codes | V codes per slot
  const int64_t* code_offset = nullptr;  // (pairs) byte offset of the pair's slot 0 in `codes`
  int8_t* scale_zero = nullptr;      // (pairs, slots, 4d): K s_int | K z_int | V s_int | V z_int
  float* block_scales = nullptr;     // (pairs, slots, 2): s_K, s_V of each block
  int8_t* k_buffer = nullptr;        // (pairs, kTurboBlock·d) the decode buffer, turbo_layout order
  int8_t* v_buffer = nullptr;
  const float* universal = nullptr;  // (pairs, 2): the buffer's universal scales s_K, s_V (§3.3)
  const int* bits = nullptr;         // (pairs) the pair's cache width, 2 or 4 (Eq. 12)
  // (pairs) the order the attention takes the pairs in: the wide_pairs 4-bit pairs, then the 2-bit ones;
  // each width is its own launch (turbo_decode.cu, "Pair order").
  const int* pair_order = nullptr;
  int wide_pairs = 0;
  int pairs = 0, slots = 0, head_dim = 0;
  int prefill_tokens = 0;            // P: tokens the prefill compressed (its last block may be short)
  int tokens = 0;                    // the sequence so far: P + tokens appended through the buffer
};

// SAS (core/sas.h) as the kernel evaluates it: FP32, LUT × cubic, threshold n_r; or exp2 on the SFU.
struct TurboExpArgs {
  bool exact_exp = false;
  int n_r = -6;
  float c[4] = {0, 0, 0, 0};  // POLY's coefficients, as floats
  float lut[31] = {};         // float(e^{−k}), k = 0 … 30 (core/sas.cpp's FP32 table)
  // sas_precision fp16 (the prefill kernel's FP16x2 SAS): the coefficients and e^{−k} rounded once to FP16.
  bool fp16 = false;
  float c16[4] = {0, 0, 0, 0};
  float lut16[31] = {};
  // sas_share (the prefill kernel; core/variants/turbo_sas_share.h): of each tile's eight 8-key blocks, those whose
  // P̃ takes SAS in FP32 — the rest exp2 on the SFU. 8: Alg. 1 (every exponential SAS).
  int sas_blocks = 8;
};

struct TurboDecodeArgs {
  TurboCacheArgs cache;
  TurboExpArgs exp;
  const float* q = nullptr;   // (B, Hq, d) the step's query, FP32 (quantized to INT8 on chip, Alg. 2 l. 1)
  __half* o = nullptr;        // (B, Hq, d)
  float* lse = nullptr;       // (B, Hq)
  float* workspace = nullptr; // turbo_decode_workspace_bytes(args): each chain's (m, ℓ, O)
  int batch = 0, q_heads = 0, kv_heads = 0;
  int chains = 1;             // per pair (core/variants/turbo_chains.h)
  float scale = 0;            // softmax scale
  int32_t* scores = nullptr;  // when set, (pairs, 8, tiles·64): S_int of every (row, tile, token position)
};

bool turbo_decode_supports(int head_dim, int group);  // d ∈ {64, 128}, ≤ 8 query heads per KV head
// The shared memory the largest CTA of a decode step asks for (its rings are sized, and padded, for the H100:
// turbo_decode.cu kSmemRequest), with 4-bit heads (wide) and 2-bit heads (narrow) present or not. A GPU whose
// CTAs may have less cannot run the kernel (an sm_89 CTA may have 99 KiB).
int turbo_decode_smem_bytes(int head_dim, int group, bool wide, bool narrow);
size_t turbo_decode_workspace_bytes(const TurboDecodeArgs& a);

// The tiles of every pair for the current cache: blocks (prefill's, then flushed) and the pending buffer.
int turbo_decode_tiles(const TurboCacheArgs& c);

// One decode step's attention: the chains, then their merge. Returns the first launch error.
cudaError_t turbo_decode_attend(const TurboDecodeArgs& a, cudaStream_t stream);

// §3.3: appends one token per pair — k, v (pairs, d) FP32 — to the buffer at position tokens − P − flushed
// (INT8 with the universal scale, clamped), and, when that fills the buffer, flushes it into the next slot
// (Eq. 10 per channel in integers, the universal scale as the block's s_K/s_V) and clears it. The caller
// then advances c.tokens by one. int_scale_up: IntScale::up instead of Alg. 1's nearest.
cudaError_t turbo_decode_append(const TurboCacheArgs& c, const float* k, const float* v, bool int_scale_up,
                                cudaStream_t stream);

}  // namespace attnlab::kernels
