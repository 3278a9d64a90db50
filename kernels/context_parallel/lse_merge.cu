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

// A warp per row (a CTA's four warps, four rows): every lane reads the row's two logsumexps, merges its values at
// c = lane, lane + 32, …, and lane 0 writes the merged L once the warp has read the old one. The running result is
// updated in place, or (Store) the merged result goes straight to the output in `element`'s type and its L to l_out.
constexpr int kRowsPerCta = kThreads / 32;

template <class T, bool Store>
__global__ void merge_rows(float* o_acc, float* l_acc, const T* o, const float* l, T* out, float* l_out, size_t rows,
                           int d) {
  const size_t row = size_t(blockIdx.x) * kRowsPerCta + threadIdx.x / 32;
  const int lane = int(threadIdx.x % 32);
  if (row >= rows) return;
  const float a = l_acc[row], b = l[row];
  float* acc = o_acc + row * size_t(d);
  const T* x = o + row * size_t(d);
  if (b == -INFINITY || a == -INFINITY) {  // one side saw no key of this row: the other is the result
    const bool keep = b == -INFINITY;
    if constexpr (Store) {
      for (int c = lane; c < d; c += 32) out[row * size_t(d) + c] = keep ? from_float<T>(acc[c]) : x[c];
      if (lane == 0) l_out[row] = keep ? a : b;
    } else if (!keep) {
      for (int c = lane; c < d; c += 32) acc[c] = to_float(x[c]);
      __syncwarp();
      if (lane == 0) l_acc[row] = b;
    }
    return;
  }
  const float m = fmaxf(a, b), wa = expf(a - m), wb = expf(b - m);
  for (int c = lane; c < d; c += 32) {
    const float merged = (wa * acc[c] + wb * to_float(x[c])) / (wa + wb);
    if constexpr (Store) out[row * size_t(d) + c] = from_float<T>(merged);
    else acc[c] = merged;
  }
  __syncwarp();  // every lane has read a before lane 0 replaces it
  if (lane == 0) (Store ? l_out : l_acc)[row] = m + logf(wa + wb);
}

// The first of a chunk's blocks: its partial becomes the running result — a row it did not see (L = −∞) as a clear
// leaves it, O = 0, whatever its kernel wrote there.
template <class T>
__global__ void merge_first(float* o_acc, float* l_acc, const T* o, const float* l, size_t rows, int d) {
  const size_t i = size_t(blockIdx.x) * kThreads + threadIdx.x;
  if (i < rows * size_t(d)) o_acc[i] = l[i / size_t(d)] == -INFINITY ? 0.f : to_float(o[i]);
  if (i < rows) l_acc[i] = l[i];
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

template <class T>
cudaError_t launch_rows(bool store, float* o_acc, float* l_acc, const void* o, const float* l, void* out, float* l_out,
                        size_t rows, int d, cudaStream_t stream) {
  const unsigned ctas = unsigned((rows + kRowsPerCta - 1) / kRowsPerCta);
  if (store)
    merge_rows<T, true><<<ctas, kThreads, 0, stream>>>(o_acc, l_acc, static_cast<const T*>(o), l, static_cast<T*>(out),
                                                       l_out, rows, d);
  else
    merge_rows<T, false><<<ctas, kThreads, 0, stream>>>(o_acc, l_acc, static_cast<const T*>(o), l, nullptr, nullptr,
                                                        rows, d);
  return cudaGetLastError();
}

cudaError_t lse_merge_first(float* o_acc, float* l_acc, const void* o, OutputElement element, const float* l,
                            size_t rows, int d, cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  if (element == OutputElement::bf16)
    merge_first<<<blocks(rows * size_t(d)), kThreads, 0, stream>>>(o_acc, l_acc, static_cast<const __nv_bfloat16*>(o), l,
                                                                   rows, d);
  else
    merge_first<<<blocks(rows * size_t(d)), kThreads, 0, stream>>>(o_acc, l_acc, static_cast<const __half*>(o), l, rows, d);
  return cudaGetLastError();
}

cudaError_t lse_merge_add(float* o_acc, float* l_acc, const void* o, OutputElement element, const float* l, size_t rows,
                          int d, cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  return element == OutputElement::bf16
             ? launch_rows<__nv_bfloat16>(false, o_acc, l_acc, o, l, nullptr, nullptr, rows, d, stream)
             : launch_rows<__half>(false, o_acc, l_acc, o, l, nullptr, nullptr, rows, d, stream);
}

cudaError_t lse_merge_last(float* o_acc, float* l_acc, const void* o, OutputElement element, const float* l, void* out,
                           float* l_out, size_t rows, int d, cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  return element == OutputElement::bf16 ? launch_rows<__nv_bfloat16>(true, o_acc, l_acc, o, l, out, l_out, rows, d, stream)
                                        : launch_rows<__half>(true, o_acc, l_acc, o, l, out, l_out, rows, d, stream);
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
