// attnlab core: the probes every tiled variant records for the tile stepper — the online-softmax trace
// of one query row block (after each KV tile: its index, the running max m and sum ℓ of the block's
// rows, the bytes its CTA has loaded so far) — and the per-row logsumexp. One writer, so that every
// variant's probes have the same names, shapes and units (core/variants/README.md).
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

// Adds trace.kv_tile, trace.m, trace.l, trace.hbm_bytes, trace.block for request `req` on problem p.
void add_trace_probes(Probes& probes, const Problem& p, const ProbeRequest& req, const TraceProbes& t);

// Adds "lse" (B, H_q, q_len) from lse (B, H_q, q_len, 1), with the variant's definition in `help`.
void add_lse_probe(Probes& probes, const Problem& p, const Tensor& lse, std::string help);

}  // namespace attnlab::variants
