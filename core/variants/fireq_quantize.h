// attnlab core — the two steps of `fireq` (core/variants/fireq.cpp, whose head comment is the specification)
// that the reference and the GPU kernels' host sides share, so that a kernel starts from the reference's own
// operands: §3.2.1's smoothing of one KV head's keys (RPN + CRS, or one of them, or none), and Eq. 2 on the
// smoothed queries Q̃ = Q·s.
#pragma once

#include "core/fireq/token_fp8.h"
#include "core/variants/fireq_cache.h"

#include <cstdint>
#include <vector>

namespace attnlab::variants::fireq_detail {

struct SmoothedKeys {
  std::vector<float> s;            // (d) per-channel factor: k ← k/s, q ← q·s
  std::vector<int64_t> outliers;   // the CRS pairs (empty for rpn / none)
  std::vector<float> k;            // (n, d) K̃ = K/s (K itself under Smoothing::none)
};
// k is one KV head's (n, d) post-RoPE keys (FP32); the fireq functions reject non-finite keys.
SmoothedKeys smooth_keys(const float* k, int64_t n, int64_t d, const Settings& st);

// Eq. 2 on Q̃ = Q·s (q·s per channel when `smooth`), in place: q (rows, d) holds Q̂'s E4M3 values on return,
// and the result β per row (fireq::quantize_token_fp8).
fireq::TokenFp8 quantize_query(float* q, int64_t rows, int64_t d, const std::vector<float>& s, bool smooth);

}  // namespace attnlab::variants::fireq_detail
