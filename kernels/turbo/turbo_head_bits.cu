// attnlab kernels: Eq. 11–12 on the GPU (turbo_head_bits.h states the contract).
//
// Eq. 11 for one pair's keys x (tokens × d): g_c = max_t x[t, c] − min_t x[t, c]; gap = max − min over the whole
// head; std = sqrt(Σ_c (g_c − ḡ)² / d), ḡ = Σ_c g_c / d; priority = gap · std. The minima and maxima are exact in
// any order, so the first launch takes them over chunks of kChunk tokens in parallel (one thread per channel) and
// the second combines the chunks; the FP64 sums, whose value depends on their order, are one thread's, channel by
// channel as core/quant/head_priority.cpp adds them, each operation rounded once (__dadd_rn, __dmul_rn: no
// contraction into an FMA, which the host's build does not do either). Eq. 12 then ranks each sequence's pairs by
// (priority, head index) ascending — an insertion sort, stable as std::stable_sort — and the first n_h take bits_lo.
#include "kernels/turbo/turbo_head_bits.h"

#include "kernels/turbo/turbo_quant.cuh"

#include <cfloat>
#include <cmath>

namespace attnlab::kernels {

namespace {

constexpr int kChunk = 256;  // tokens per CTA of the first launch

// Grid (chunks, pairs), d threads: partial[pair][chunk][c] = (min, max) of channel c over the chunk's tokens.
template <class T>
__global__ void channel_ranges(const T* k, int tokens, int d, int64_t head_stride, float2* partial) {
  const int chunk = blockIdx.x, pair = blockIdx.y, c = threadIdx.x;
  const T* x = k + size_t(pair) * head_stride + size_t(chunk) * kChunk * d + c;
  const int n = min(kChunk, tokens - chunk * kChunk);
  float lo = FLT_MAX, hi = -FLT_MAX;
#pragma unroll 8
  for (int t = 0; t < n; ++t) {
    const float v = turbo_quant::input_value(x[size_t(t) * d]);
    lo = fminf(lo, v), hi = fmaxf(hi, v);
  }
  partial[(size_t(pair) * gridDim.x + chunk) * d + c] = make_float2(lo, hi);
}

// Grid = sequences, d threads: each of the sequence's pairs' score, then its bits.
__global__ void rank_heads(const float2* partial, int chunks, int kv_heads, int d, int metric, int two_bit_heads,
                           int bits_lo, int bits_hi, double* priorities_out, int* bits) {
  extern __shared__ double shared[];
  double* priority = shared;                                        // (kv_heads)
  float2* range = reinterpret_cast<float2*>(priority + kv_heads);   // (d) this pair's channel ranges
  const int b = blockIdx.x, c = threadIdx.x;
  for (int h = 0; h < kv_heads; ++h) {
    const size_t pair = size_t(b) * kv_heads + h;
    float lo = FLT_MAX, hi = -FLT_MAX;
    for (int i = 0; i < chunks; ++i) {
      const float2 r = partial[(pair * chunks + i) * d + c];
      lo = fminf(lo, r.x), hi = fmaxf(hi, r.y);
    }
    range[c] = make_float2(lo, hi);
    __syncthreads();
    if (c == 0) {  // head_range(): every sum channel by channel, in double
      float mn = range[0].x, mx = range[0].y;
      for (int i = 1; i < d; ++i) mn = fminf(mn, range[i].x), mx = fmaxf(mx, range[i].y);
      const double gap = __dsub_rn(double(mx), double(mn));
      double sum = 0, sum_sq = 0;
      for (int i = 0; i < d; ++i) sum = __dadd_rn(sum, __dsub_rn(double(range[i].y), double(range[i].x)));
      const double mean = __ddiv_rn(sum, double(d));
      for (int i = 0; i < d; ++i) {
        const double e = __dsub_rn(__dsub_rn(double(range[i].y), double(range[i].x)), mean);
        sum_sq = __dadd_rn(sum_sq, __dmul_rn(e, e));
      }
      const double gap_std = __dsqrt_rn(__ddiv_rn(sum_sq, double(d)));
      priority[h] = metric == int(quant::PriorityMetric::min_max)     ? gap
                    : metric == int(quant::PriorityMetric::variation) ? gap_std
                                                                      : __dmul_rn(gap, gap_std);  // Eq. 11
      if (priorities_out) priorities_out[pair] = priority[h];
    }
    __syncthreads();
  }
  if (c != 0) return;
  // Eq. 12: the heads in ascending (priority, index) order; the first n_h drop to bits_lo.
  for (int h = 0; h < kv_heads; ++h) {
    int rank = 0;  // heads before h in that order
    for (int o = 0; o < kv_heads; ++o) rank += priority[o] < priority[h] || (priority[o] == priority[h] && o < h);
    bits[size_t(b) * kv_heads + h] = rank < two_bit_heads ? bits_lo : bits_hi;
  }
}

template <class T>
cudaError_t launch(const TurboHeadBitsArgs& a, const T* k, cudaStream_t stream) {
  if (!turbo_head_bits_supports(a.metric) || a.batch < 1 || a.kv_heads < 1 || a.tokens < 1 ||
      (a.head_dim != 64 && a.head_dim != 128) || a.head_stride < int64_t(a.tokens) * a.head_dim ||
      a.two_bit_heads < 0 || a.two_bit_heads > a.kv_heads || a.scratch == nullptr || a.bits == nullptr)
    return cudaErrorInvalidValue;
  const int chunks = (a.tokens + kChunk - 1) / kChunk;
  auto* partial = static_cast<float2*>(a.scratch);
  channel_ranges<T><<<dim3(chunks, unsigned(a.batch * a.kv_heads)), unsigned(a.head_dim), 0, stream>>>(
      k, a.tokens, a.head_dim, a.head_stride, partial);
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  const size_t smem = size_t(a.kv_heads) * sizeof(double) + size_t(a.head_dim) * sizeof(float2);
  if (smem > 48 * 1024) return cudaErrorInvalidValue;
  rank_heads<<<unsigned(a.batch), unsigned(a.head_dim), smem, stream>>>(partial, chunks, a.kv_heads, a.head_dim,
                                                                        int(a.metric), a.two_bit_heads, a.bits_lo,
                                                                        a.bits_hi, a.priorities, a.bits);
  return cudaGetLastError();
}

}  // namespace

bool turbo_head_bits_supports(quant::PriorityMetric metric) { return metric != quant::PriorityMetric::entropy; }

size_t turbo_head_bits_scratch_bytes(const TurboHeadBitsArgs& a) {
  const size_t chunks = size_t(a.tokens + kChunk - 1) / kChunk;
  return size_t(a.batch) * size_t(a.kv_heads) * chunks * size_t(a.head_dim) * sizeof(float2);
}

cudaError_t turbo_head_bits(const TurboHeadBitsArgs& a, const float* k, cudaStream_t stream) { return launch(a, k, stream); }
cudaError_t turbo_head_bits(const TurboHeadBitsArgs& a, const __half* k, cudaStream_t stream) { return launch(a, k, stream); }

}  // namespace attnlab::kernels
