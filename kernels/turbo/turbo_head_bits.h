// attnlab kernels: TurboAttention's head priority and bit assignment (§3.2, Eq. 11–12) on the GPU, from the keys the
// prefill reads — so that a prefill from FP16 Q/K/V needs no host pass over K to choose its cache widths.
// core/quant/head_priority.h defines the metrics; this computes the same doubles, bit for bit, on the values it is
// given (FP16 keys: the ranking of the FP16-rounded keys, which is what a prefill from FP16 inputs sees).
#pragma once

#include "core/quant/head_priority.h"

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace attnlab::kernels {

struct TurboHeadBitsArgs {
  int batch = 0, kv_heads = 0;
  int tokens = 0;            // the keys each pair is ranked on: its first `tokens` (the prefill's)
  int head_dim = 0;          // 64 or 128
  int64_t head_stride = 0;   // elements from one pair's keys to the next (≥ tokens · head_dim)
  quant::PriorityMetric metric = quant::PriorityMetric::gap_std;  // turbo_head_bits_supports
  int two_bit_heads = 0, bits_lo = 2, bits_hi = 4;               // Eq. 12's n_h and the two widths
  void* scratch = nullptr;   // turbo_head_bits_scratch_bytes(args)
  double* priorities = nullptr;  // (batch · kv_heads) out: Eq. 11's score of each pair (nullptr: not kept)
  int* bits = nullptr;           // (batch · kv_heads) out: each pair's width
};

// Whether the GPU computes this metric bit for bit: not entropy, whose histogram and log₂ run on the host (the GPU's
// log2 does not match its libm bit for bit).
bool turbo_head_bits_supports(quant::PriorityMetric metric);

size_t turbo_head_bits_scratch_bytes(const TurboHeadBitsArgs& a);

// Two launches: the channels' min and max over chunks of tokens, then per sequence each pair's score (one thread
// adds the channels' terms in order, as the host does) and Eq. 12's stable ranking. k: (pairs, ≥ tokens, d).
cudaError_t turbo_head_bits(const TurboHeadBitsArgs& a, const float* k, cudaStream_t stream);
cudaError_t turbo_head_bits(const TurboHeadBitsArgs& a, const __half* k, cudaStream_t stream);

}  // namespace attnlab::kernels
