// attnlab core: the probes every variant records the same way — one writer each, so that names, shapes
// and units agree across variants (core/variants/README.md):
//   - per-head arrays [B, H, n] (scales per block or token, smoothing factors),
//   - the channel ranges of K and V as the variant receives them (TurboAttention Fig. 4),
//   - the tile stepper's online-softmax trace of one query row block (after each KV tile: its index, the
//     running max m and sum ℓ of the block's rows, the bytes its CTA has loaded so far),
//   - the per-row logsumexp.
#pragma once

#include "core/probes.h"
#include "core/problem.h"
#include "core/tensor.h"

#include <string>
#include <vector>

namespace attnlab::variants {

struct TraceProbes {
  const std::vector<double>& kv_tile;  // (steps) tile index j at each step
  const std::vector<double>& m;        // (steps × rows) running max after each step
  const std::vector<double>& l;        // (steps × rows) running sum after each step
  const std::vector<double>& bytes;    // (steps) bytes loaded so far
  int64_t trace_block, block_r, block_c;
  std::string l_help = "running sum ℓ after each KV tile";
  std::string bytes_help = "bytes loaded by the traced row block's CTA so far (Qᵢ, then Kⱼ and Vⱼ)";
};

// [B, heads, n] from one row of n values per (batch, head), in (batch, head) order. A row of another length
// is a bug in the variant: std::logic_error. The second form takes n from the rows.
ProbeArray per_head(const Problem& p, int64_t heads, int64_t n, const std::vector<const std::vector<float>*>& rows,
                    std::string unit, std::string help);
ProbeArray per_head(const Problem& p, int64_t heads, const std::vector<std::vector<float>>& rows, std::string help);

// channels.k.min/max and channels.v.min/max, [B, H_kv, d]: the range of each channel over tokens.
void add_channel_probes(Probes& probes, const Problem& p, const QKV& in);
// <prefix>.min/max, [B, H_kv, d]: the channel range of one K-shaped tensor (e.g. K before RoPE).
void add_key_channel_probes(Probes& probes, const Problem& p, const Tensor& k, const std::string& prefix,
                            const std::string& help);

// Adds trace.kv_tile, trace.m, trace.l, trace.hbm_bytes, trace.block for request `req` on problem p.
void add_trace_probes(Probes& probes, const Problem& p, const ProbeRequest& req, const TraceProbes& t);

// Adds "lse" (B, H_q, q_len) from lse (B, H_q, q_len, 1), with the variant's definition in `help`.
void add_lse_probe(Probes& probes, const Problem& p, const Tensor& lse, std::string help);

}  // namespace attnlab::variants
