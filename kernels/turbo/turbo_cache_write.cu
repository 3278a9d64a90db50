// attnlab kernels: the prefill's compressed cache on the GPU (turbo_cache_write.h states the contract).
//
// One CTA per (block, pair), one thread per channel, K then V:
//   Alg. 1 l. 8 / Eq. 9   s = fl(max|X_j| / 119) over the block's tokens × channels (FLT_MIN floor: 1),
//                         q8 = clamp(rne(fl(x / s)), ±119)            — quant::quantize, block granularity
//   Alg. 1 l. 13–18 / Eq. 10   per channel s^int, z^int and the codes   — turbo_compress.cuh
// The block's max is a CTA reduction; each block's max also goes into its pair's span (an atomicMax on the
// float's bits, which order as the floats do for non-negative values), and a second kernel turns the spans
// into the universal scales. The decode buffer is cleared. The same pass can write the INT8 tiles the
// prefill's attention reads (TurboPrefillTiles: K^q1, and V^q1 transposed for the INT8 wgmma), so that each
// K/V block is quantized once for every query block (Alg. 1 re-quantizes it per query block: the same
// numbers, one per-tile scale either way); and turbo_quantize_q_blocks does Alg. 1 l. 7 for Q.
#include "kernels/turbo/turbo_cache_write.h"

#include "core/variants/turbo_layout.h"
#include "kernels/turbo/turbo_compress.cuh"
#include "kernels/turbo/turbo_quant.cuh"
#include "kernels/common/vt_permutation.h"

#include <cfloat>

namespace attnlab::kernels {

size_t turbo_cache_write_scratch_bytes(const TurboCacheArgs& c) { return size_t(2) * c.pairs * sizeof(unsigned); }

namespace {

namespace layout = attnlab::turbo_layout;
using turbo_quant::scale_for_span;
// The inputs arrive in FP16 (the attention's, as flash2 reads them) or FP32 (the tests' exact comparison with
// the reference); each value is taken to FP32, exactly, before anything is computed from it.
using turbo_quant::input_value;

// The maximum of `span` over the CTA's D threads (every thread gets it). warp_max: D/32 floats of shared memory,
// free again when this returns.
template <int D>
__device__ __forceinline__ float cta_max(float span, float* warp_max) {
#pragma unroll
  for (int o = 16; o > 0; o /= 2) span = fmaxf(span, __shfl_xor_sync(0xffffffffu, span, o));
  if (threadIdx.x % 32 == 0) warp_max[threadIdx.x / 32] = span;
  __syncthreads();
  span = warp_max[0];
#pragma unroll
  for (int w = 1; w < D / 32; ++w) span = fmaxf(span, warp_max[w]);
  __syncthreads();  // every thread has read warp_max before anyone writes it again
  return span;
}

template <int D, class T>
__global__ void __launch_bounds__(D) turbo_prefill_cache_kernel(const TurboCacheArgs c, const T* k, const T* v,
                                                                int64_t head_stride, bool up, unsigned* spans,
                                                                TurboPrefillTiles tiles) {
  __shared__ uint32_t words[2 * kTurboBlock * D * 4 / 8 / 4];  // K | V codes of one block at ≤ 4 bits
  __shared__ float warp_max[D / 32];
  const int slot = blockIdx.x, pair = blockIdx.y, ch = threadIdx.x;
  const int rows = min(kTurboBlock, c.prefill_tokens - slot * kTurboBlock);
  const int bits = c.bits[pair];
  const int code_bytes = kTurboBlock * D * bits / 8;
  for (int i = ch; i < 2 * code_bytes / 4; i += D) words[i] = 0u;
  int8_t* sz = c.scale_zero + (int64_t(pair) * c.slots + slot) * layout::scale_zero_bytes(D);
  float block_scale[2];
  for (int which = 0; which < 2; ++which) {
    const T* x = (which == 0 ? k : v) + int64_t(pair) * head_stride + int64_t(slot) * kTurboBlock * D + ch;
    float col[kTurboBlock];
    float span = 0.0f;
#pragma unroll
    for (int tau = 0; tau < kTurboBlock; ++tau) {
      col[tau] = tau < rows ? input_value(x[int64_t(tau) * D]) : 0.0f;
      span = fmaxf(span, fabsf(col[tau]));
    }
    span = cta_max<D>(span, warp_max);
    if (ch == 0) atomicMax(&spans[2 * pair + which], __float_as_uint(span));
    const float s = scale_for_span(span);
    block_scale[which] = s;
    int8_t q[kTurboBlock];
#pragma unroll
    for (int tau = 0; tau < kTurboBlock; ++tau)
      q[tau] = int8_t(min(max(__float2int_rn(__fdiv_rn(col[tau], s)), -119), 119));
    if (which == 0 && tiles.k8 != nullptr) {  // K^q1 rows: consecutive channels, coalesced
      int8_t* out = tiles.k8 + (int64_t(pair) * tiles.pad + int64_t(slot) * kTurboBlock) * D + ch;
#pragma unroll
      for (int tau = 0; tau < kTurboBlock; ++tau) out[int64_t(tau) * D] = q[tau];
    }
    if (which == 1 && tiles.vt8 != nullptr) {  // Vᵀ: this channel's 64 keys, permuted per 16, as words
      uint32_t* out = reinterpret_cast<uint32_t*>(tiles.vt8 + (int64_t(pair) * D + ch) * tiles.pad +
                                                  int64_t(slot) * kTurboBlock);
#pragma unroll
      for (int w = 0; w < kTurboBlock / 4; ++w) {
        uint32_t word = 0;
#pragma unroll
        for (int b = 0; b < 4; ++b) {
          const int pos = 4 * w + b, key = 16 * (pos / 16) + vt_key_at(pos % 16);
          word |= uint32_t(uint8_t(q[key])) << (8 * b);
        }
        out[w] = word;
      }
    }
    if (!tiles.cache) continue;
    int s_int, z_int;
    turbo_compress::compress_channel(q, rows, ch, D, bits, up, which == 1, code_bytes, words, s_int, z_int);
    sz[2 * D * which + ch] = int8_t(s_int);
    sz[2 * D * which + D + ch] = int8_t(z_int);
    turbo_compress::write_flag_word(sz, D, which, ch, layout::may_saturate(s_int, z_int, bits));
  }
  __syncthreads();
  if (tiles.cache) {
    uint32_t* dst = reinterpret_cast<uint32_t*>(c.codes + c.code_offset[pair] + int64_t(slot) * 2 * code_bytes);
    for (int i = ch; i < 2 * code_bytes / 4; i += D) dst[i] = words[i];
  }
  if (ch == 0) {
    c.block_scales[(int64_t(pair) * c.slots + slot) * 2] = block_scale[0];
    c.block_scales[(int64_t(pair) * c.slots + slot) * 2 + 1] = block_scale[1];
  }
  if (slot == 0 && tiles.cache) {  // the decode buffer starts empty
    uint32_t* kz = reinterpret_cast<uint32_t*>(c.k_buffer + int64_t(pair) * kTurboBlock * D);
    uint32_t* vz = reinterpret_cast<uint32_t*>(c.v_buffer + int64_t(pair) * kTurboBlock * D);
    for (int i = ch; i < kTurboBlock * D / 4; i += D) kz[i] = 0u, vz[i] = 0u;
  }
}

// Alg. 1 l. 7: one block of block_r rows of one head; one thread per channel.
template <int D, class T>
__global__ void __launch_bounds__(D) turbo_q_blocks_kernel(const T* q, int q_len, int block_r, int8_t* q8,
                                                           float* s_q) {
  __shared__ float warp_max[D / 32];
  const int block = blockIdx.x, head = blockIdx.y, ch = threadIdx.x;
  const int row0 = block * block_r, rows = min(block_r, q_len - row0);
  const T* x = q + (int64_t(head) * q_len + row0) * D + ch;
  float span = 0.0f;
  for (int r = 0; r < rows; ++r) span = fmaxf(span, fabsf(input_value(x[int64_t(r) * D])));
  span = cta_max<D>(span, warp_max);
  const float s = scale_for_span(span);
  int8_t* out = q8 + (int64_t(head) * q_len + row0) * D + ch;
  for (int r = 0; r < rows; ++r) out[int64_t(r) * D] = int8_t(min(max(__float2int_rn(__fdiv_rn(input_value(x[int64_t(r) * D]), s)), -119), 119));
  if (ch == 0) s_q[int64_t(head) * gridDim.x + block] = s;
}

// §3.3: the universal scales, max|·| over the prefill's tokens / 119 (quant::universal_scale).
__global__ void turbo_universal_kernel(float* universal, const unsigned* spans, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) universal[i] = scale_for_span(__uint_as_float(spans[i]));
}


template <class T>
cudaError_t cache_write_prefill(const TurboCacheArgs& c, const T* k, const T* v, int64_t head_stride, bool int_scale_up,
                                void* scratch, cudaStream_t stream, const TurboPrefillTiles& tiles) {
  const int blocks = (c.prefill_tokens + kTurboBlock - 1) / kTurboBlock;
  if ((c.head_dim != 64 && c.head_dim != 128) || c.prefill_tokens < 1 || blocks > c.slots ||
      head_stride < int64_t(c.prefill_tokens) * c.head_dim || scratch == nullptr ||
      ((tiles.k8 != nullptr || tiles.vt8 != nullptr) && tiles.pad < int64_t(blocks) * kTurboBlock))
    return cudaErrorInvalidValue;
  unsigned* spans = static_cast<unsigned*>(scratch);
  if (const cudaError_t e = cudaMemsetAsync(spans, 0, turbo_cache_write_scratch_bytes(c), stream); e != cudaSuccess)
    return e;
  const dim3 grid(blocks, c.pairs);
  if (c.head_dim == 64) turbo_prefill_cache_kernel<64, T><<<grid, 64, 0, stream>>>(c, k, v, head_stride, int_scale_up, spans, tiles);
  else turbo_prefill_cache_kernel<128, T><<<grid, 128, 0, stream>>>(c, k, v, head_stride, int_scale_up, spans, tiles);
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  if (!tiles.cache) return cudaSuccess;
  const int n = 2 * c.pairs;
  turbo_universal_kernel<<<(n + 127) / 128, 128, 0, stream>>>(const_cast<float*>(c.universal), spans, n);
  return cudaGetLastError();
}

template <class T>
cudaError_t quantize_q_blocks(const T* q, int heads, int q_len, int d, int block_r, int8_t* q8, float* s_q,
                              cudaStream_t stream) {
  if ((d != 64 && d != 128) || heads < 1 || q_len < 1 || block_r < 1 || block_r > 256) return cudaErrorInvalidValue;
  const dim3 grid((q_len + block_r - 1) / block_r, heads);
  if (d == 64) turbo_q_blocks_kernel<64, T><<<grid, 64, 0, stream>>>(q, q_len, block_r, q8, s_q);
  else turbo_q_blocks_kernel<128, T><<<grid, 128, 0, stream>>>(q, q_len, block_r, q8, s_q);
  return cudaGetLastError();
}

}  // namespace

cudaError_t turbo_cache_write_prefill(const TurboCacheArgs& c, const float* k, const float* v, int64_t head_stride,
                                      bool int_scale_up, void* scratch, cudaStream_t stream,
                                      const TurboPrefillTiles& tiles) {
  return cache_write_prefill(c, k, v, head_stride, int_scale_up, scratch, stream, tiles);
}
cudaError_t turbo_cache_write_prefill(const TurboCacheArgs& c, const __half* k, const __half* v, int64_t head_stride,
                                      bool int_scale_up, void* scratch, cudaStream_t stream,
                                      const TurboPrefillTiles& tiles) {
  return cache_write_prefill(c, k, v, head_stride, int_scale_up, scratch, stream, tiles);
}
cudaError_t turbo_quantize_q_blocks(const float* q, int heads, int q_len, int d, int block_r, int8_t* q8, float* s_q,
                                    cudaStream_t stream) {
  return quantize_q_blocks(q, heads, q_len, d, block_r, q8, s_q, stream);
}
cudaError_t turbo_quantize_q_blocks(const __half* q, int heads, int q_len, int d, int block_r, int8_t* q8, float* s_q,
                                    cudaStream_t stream) {
  return quantize_q_blocks(q, heads, q_len, d, block_r, q8, s_q, stream);
}

}  // namespace attnlab::kernels
