// attnlab kernels: INT8 quantization on the GPU (quantize_int8.h states the rules it shares with the
// reference quantizer; the [gpu] tests hold the two equal, codes and scales, bit for bit).
#include "kernels/int8/quantize_int8.h"

#include <cfloat>
#include <cmath>

namespace attnlab::kernels {

namespace {

constexpr float kQMax = 127.f;

// Eq. 4 with the reference's rules: FP32 division (correctly rounded), 1 for a scale that is not normal.
__device__ __forceinline__ float scale_of(float max_abs) {
  const float s = max_abs / kQMax;
  return s >= FLT_MIN ? s : 1.f;
}
// Eq. 3: ⌈x / s⌋, ties to even (rintf under the default rounding mode), clamped to ±127.
__device__ __forceinline__ int8_t code_of(float x, float s) {
  return static_cast<int8_t>(fminf(fmaxf(rintf(x / s), -kQMax), kQMax));
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// One warp per row.
__global__ void quantize_rows_kernel(const float* x, int64_t rows, int cols, int64_t group_rows,
                                     int64_t scale_group_stride, int8_t* q, float* scale) {
  const int64_t r = int64_t(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (r >= rows) return;
  const float* xr = x + r * cols;
  float m = 0.f;
  for (int c = lane; c < cols; c += 32) m = fmaxf(m, fabsf(xr[c]));
  const float s = scale_of(warp_max(m));
  for (int c = lane; c < cols; c += 32) q[r * cols + c] = code_of(xr[c], s);
  if (lane == 0) scale[(r / group_rows) * scale_group_stride + r % group_rows] = s;
}

// One CTA per head: max|V| by a block reduction, then every code into Vᵀ.
__global__ void quantize_heads_vt_kernel(const float* v, int keys, int d, int kv_pad, const int* position_of_key,
                                         int8_t* vt, float* scale) {
  __shared__ float partial[32];
  __shared__ int position[16];
  const int64_t head = blockIdx.x, n = int64_t(keys) * d;
  const float* vh = v + head * n;
  if (threadIdx.x < 16) position[threadIdx.x] = position_of_key[threadIdx.x];
  float m = 0.f;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) m = fmaxf(m, fabsf(vh[i]));
  m = warp_max(m);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = m;
  __syncthreads();
  if (threadIdx.x < 32) {
    m = threadIdx.x < blockDim.x / 32 ? partial[threadIdx.x] : 0.f;
    m = warp_max(m);
    if (threadIdx.x == 0) partial[0] = m;
  }
  __syncthreads();
  const float s = scale_of(partial[0]);
  int8_t* vth = vt + head * int64_t(d) * kv_pad;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    const int key = int(i / d), c = int(i % d);
    vth[int64_t(c) * kv_pad + key / 16 * 16 + position[key % 16]] = code_of(vh[i], s);
  }
  if (threadIdx.x == 0) scale[head] = s;
}

}  // namespace

cudaError_t quantize_rows_int8(const float* x, int64_t rows, int cols, int64_t group_rows, int64_t scale_group_stride,
                               int8_t* q, float* scale, cudaStream_t stream) {
  if (rows <= 0) return cudaSuccess;
  constexpr int kWarps = 8;
  quantize_rows_kernel<<<unsigned((rows + kWarps - 1) / kWarps), 32 * kWarps, 0, stream>>>(
      x, rows, cols, group_rows, scale_group_stride, q, scale);
  return cudaGetLastError();
}

cudaError_t quantize_heads_int8_vt(const float* v, int heads, int keys, int d, int kv_pad, const int* position_of_key,
                                   int8_t* vt, float* scale, cudaStream_t stream) {
  if (heads <= 0) return cudaSuccess;
  quantize_heads_vt_kernel<<<unsigned(heads), 512, 0, stream>>>(v, keys, d, kv_pad, position_of_key, vt, scale);
  return cudaGetLastError();
}

}  // namespace attnlab::kernels
