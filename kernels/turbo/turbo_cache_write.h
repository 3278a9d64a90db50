// attnlab kernels: TurboAttention's prefill cache written on the GPU (App. A Alg. 1 lines 13–18; §3.1–3.3)
// — every pair's K and V cut into blocks of kTurboBlock tokens, each block quantized to INT8 with
// max|block| / 119 and compressed per channel to the pair's 2 or 4 bits (Eq. 10), in the layout the decode
// kernels read (core/variants/turbo_layout.h), and the decode buffer's universal scales; so that prefill →
// decode runs on the GPU with no host round trip. The same bytes as the `turbo` reference's cache
// (core/variants/turbo_cache.h, decode_cache), bit for bit.
#pragma once

#include "kernels/turbo/turbo_decode.h"

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace attnlab::kernels {

// The INT8 tiles Alg. 1's attention reads (the pre-pass that quantizes each K/V block once; the scales are
// the cache's block scales, c.block_scales): K^q1 as (pairs, pad, d) row-major, V^q1 transposed as (pairs,
// d, pad) with its keys permuted per 16 as the INT8 warpgroup-MMA kernels read Vᵀ (vt_permutation.h). pad:
// the tokens rounded up to whole blocks; tokens past the prefill hold 0. nullptr: not written.
struct TurboPrefillTiles {
  int8_t* k8 = nullptr;
  int8_t* vt8 = nullptr;
  int64_t pad = 0;
  bool cache = true;  // false: the tiles and the block scales only (what the cache write costs is measured so)
};

// Bytes of scratch turbo_cache_write_prefill needs for c.pairs pairs.
size_t turbo_cache_write_scratch_bytes(const TurboCacheArgs& c);

// Writes slots 0 … ⌈P / kTurboBlock⌉ − 1 of every pair (P = c.prefill_tokens; the last block may be short,
// its absent tokens code 0), the universal scales (max|·| / 119 over the P tokens, §3.3), and clears the
// decode buffers. k, v: (pairs, tokens, d) FP32 or FP16, `head_stride` elements from one pair to the next (≥ P·d).
// The cache's other slots are left as they are. int_scale_up: IntScale::up instead of Alg. 1's nearest.
// The pairs' widths come from c.bits (Eq. 11–12's ranking, computed by the caller).
cudaError_t turbo_cache_write_prefill(const TurboCacheArgs& c, const float* k, const float* v, int64_t head_stride,
                                      bool int_scale_up, void* scratch, cudaStream_t stream,
                                      const TurboPrefillTiles& tiles = {});
cudaError_t turbo_cache_write_prefill(const TurboCacheArgs& c, const __half* k, const __half* v, int64_t head_stride,
                                      bool int_scale_up, void* scratch, cudaStream_t stream,
                                      const TurboPrefillTiles& tiles = {});

// Alg. 1 l. 7: each block of block_r query rows of each head to INT8, s_Q = fl(max|Q_i| / 119) (FLT_MIN floor:
// 1), Q^q1 = clamp(rne(fl(q / s_Q)), ±119) — quant::quantize at block granularity. q: (heads, q_len, d) FP32 or FP16;
// q8: the same shape INT8; s_q: (heads, ⌈q_len / block_r⌉). d ∈ {64, 128}, block_r ≤ 256.
cudaError_t turbo_quantize_q_blocks(const float* q, int heads, int q_len, int d, int block_r, int8_t* q8, float* s_q,
                                    cudaStream_t stream);
cudaError_t turbo_quantize_q_blocks(const __half* q, int heads, int q_len, int d, int block_r, int8_t* q8, float* s_q,
                                    cudaStream_t stream);

}  // namespace attnlab::kernels
