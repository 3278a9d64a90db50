#include "kernels/context_parallel/lse_merge.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>

namespace attnlab::kernels {

namespace {

constexpr int kThreads = 128;

__device__ float to_float(__half x) { return __half2float(x); }
__device__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
template <class T>
__device__ T from_float(float x);
template <>
__device__ __half from_float<__half>(float x) { return __float2half_rn(x); }
template <>
__device__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }

// One thread per value; a row's L is read by every thread of it and written by none of them: merge_lse, launched
// after it on the same stream (lse_merge_add), updates the L, so no thread reads one already updated.
template <class T>
__global__ void merge_values(float* o_acc, const float* l_acc, const T* o, const float* l, size_t rows, int d) {
  const size_t i = size_t(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= rows * size_t(d)) return;
  const size_t row = i / size_t(d);
  const float a = l_acc[row], b = l[row];
  if (b == -INFINITY) return;  // the block saw no key of this row
  const float x = to_float(o[i]);
  if (a == -INFINITY) {
    o_acc[i] = x;
    return;
  }
  const float m = fmaxf(a, b), wa = expf(a - m), wb = expf(b - m);
  o_acc[i] = (wa * o_acc[i] + wb * x) / (wa + wb);
}

__global__ void merge_lse(float* l_acc, const float* l, size_t rows) {
  const size_t row = size_t(blockIdx.x) * kThreads + threadIdx.x;
  if (row >= rows) return;
  const float a = l_acc[row], b = l[row];
  if (b == -INFINITY) return;
  if (a == -INFINITY) {
    l_acc[row] = b;
    return;
  }
  const float m = fmaxf(a, b);
  l_acc[row] = m + logf(expf(a - m) + expf(b - m));
}

__global__ void clear(float* o_acc, float* l_acc, size_t rows, int d) {
  const size_t i = size_t(blockIdx.x) * kThreads + threadIdx.x;
  if (i < rows * size_t(d)) o_acc[i] = 0.f;
  if (i < rows) l_acc[i] = -INFINITY;
}

template <class T>
__global__ void store(const float* o_acc, const float* l_acc, T* o, float* l, size_t rows, int d) {
  const size_t i = size_t(blockIdx.x) * kThreads + threadIdx.x;
  if (i < rows * size_t(d)) o[i] = from_float<T>(o_acc[i]);
  if (i < rows) l[i] = l_acc[i];
}

// One thread per value of the merged output: its row's logsumexps from every part (a few floats, read by the row's d
// threads alike), the weights, the weighted sum in rank order; the row's first thread stores L.
template <class T>
__global__ void merge_parts(MergeParts parts, T* o, float* l, size_t rows, int d) {
  const size_t i = size_t(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= rows * size_t(d)) return;
  const size_t row = i / size_t(d);
  float m = -INFINITY;
  for (int r = 0; r < parts.count; ++r) m = fmaxf(m, parts.l[r][row]);
  float sum = 0.f, value = 0.f;
  if (m != -INFINITY)
    for (int r = 0; r < parts.count; ++r) {
      const float lr = parts.l[r][row];
      if (lr == -INFINITY) continue;  // a part that saw no key of this row
      const float w = expf(lr - m);
      sum += w;
      value += w * to_float(static_cast<const T*>(parts.o[r])[i]);
    }
  o[i] = from_float<T>(m == -INFINITY ? 0.f : value / sum);
  if (i % size_t(d) == 0) l[row] = m == -INFINITY ? -INFINITY : m + logf(sum);
}

unsigned blocks(size_t n) { return unsigned((n + kThreads - 1) / kThreads); }

}  // namespace

cudaError_t lse_merge_clear(float* o_acc, float* l_acc, size_t rows, int d, cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  clear<<<blocks(rows * size_t(d)), kThreads, 0, stream>>>(o_acc, l_acc, rows, d);
  return cudaGetLastError();
}

cudaError_t lse_merge_add(float* o_acc, float* l_acc, const void* o, OutputElement element, const float* l, size_t rows,
                          int d, cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  if (element == OutputElement::bf16)
    merge_values<<<blocks(rows * size_t(d)), kThreads, 0, stream>>>(o_acc, l_acc, static_cast<const __nv_bfloat16*>(o), l,
                                                                    rows, d);
  else
    merge_values<<<blocks(rows * size_t(d)), kThreads, 0, stream>>>(o_acc, l_acc, static_cast<const __half*>(o), l, rows, d);
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  merge_lse<<<blocks(rows), kThreads, 0, stream>>>(l_acc, l, rows);
  return cudaGetLastError();
}

cudaError_t lse_merge_store(const float* o_acc, const float* l_acc, void* o, OutputElement element, float* l,
                            size_t rows, int d, cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  if (element == OutputElement::bf16)
    store<<<blocks(rows * size_t(d)), kThreads, 0, stream>>>(o_acc, l_acc, static_cast<__nv_bfloat16*>(o), l, rows, d);
  else
    store<<<blocks(rows * size_t(d)), kThreads, 0, stream>>>(o_acc, l_acc, static_cast<__half*>(o), l, rows, d);
  return cudaGetLastError();
}

cudaError_t lse_merge_parts(const MergeParts& parts, void* o, OutputElement element, float* l, size_t rows, int d,
                            cudaStream_t stream) {
  if (parts.count < 1 || parts.count > kMaxMergeParts) return cudaErrorInvalidValue;
  if (rows == 0) return cudaSuccess;
  if (element == OutputElement::bf16)
    merge_parts<<<blocks(rows * size_t(d)), kThreads, 0, stream>>>(parts, static_cast<__nv_bfloat16*>(o), l, rows, d);
  else
    merge_parts<<<blocks(rows * size_t(d)), kThreads, 0, stream>>>(parts, static_cast<__half*>(o), l, rows, d);
  return cudaGetLastError();
}

}  // namespace attnlab::kernels
