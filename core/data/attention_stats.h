// attnlab data: what the data does to attention, per head — so a user sees how close generated or loaded Q/K/V
// come to a real model's (DESIGN.md, Data). Measured on the last query row of every (batch, query head): the
// row decode computes, and under a causal mask the one that sees every key. In FP64 from the inputs as given
// (after RoPE where the data has it), with the softmax scale 1/√d:
//   attn.entropy      −Σ p ln p over the row's keys, divided by ln(keys): 1 is uniform, 0 a single key
//   attn.sink_share   p on the first key (StreamingLLM's attention sink; Gu et al. call a head a sink head when
//                     its first-key share passes 0.3, arXiv:2410.10781 §3)
//   attn.recent_mass  p within the last kRecentWindow (64) keys
//   attn.logit_range  max − min of the row's scaled logits q·k/√d
// Each is a [B, H_q] probe.
#pragma once

#include "core/probes.h"
#include "core/problem.h"
#include "core/tensor.h"

#include <cstdint>

namespace attnlab::data {

// The recent window attn.recent_mass sums over, in keys (llm_like's local_mass targets the same).
inline constexpr int64_t kRecentWindow = 64;

// Gu et al.'s threshold for a sink head (the views draw it beside attn.sink_share).
inline constexpr double kSinkHeadThreshold = 0.3;

struct RowStatistics {
  double entropy = 0, sink_share = 0, recent_mass = 0, logit_range = 0;
};
// The statistics of query row `row` of (b, query head h) against keys [0, visible).
RowStatistics row_statistics(const Problem& p, const QKV& in, int64_t b, int64_t h, int64_t row, int64_t visible);

// attn.* for the last query row of every (batch, query head); no probes when there is no query or no key.
Probes attention_statistics(const Problem& p, const QKV& in);

}  // namespace attnlab::data
