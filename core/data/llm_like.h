// attnlab data: the llm_like generator — synthetic Q/K/V with the structure published measurements of real
// LLMs show, each property from a paper and each one a parameter that switches it off:
//
//   massive Q/K values in low-frequency RoPE pairs   a few key channels of large magnitude and consistent sign
//     (Jin et al., arXiv:2502.01563,                  across tokens (the per-channel key outliers of KIVI §3,
//      §3, Fig. 1; KIVI Fig. 2;                        Fig. 2), in pairs drawn from the lowest-frequency share of
//      TurboAttention Fig. 4)                          RoPE's pairs (outlier_band); the group's query heads carry
//                                                      the same channels, smaller; none in V.
//   attention sinks (StreamingLLM, Xiao et al.,      the first sink_tokens keys point along one direction of the
//     arXiv:2309.17453, Fig. 2; the key-bias          low-frequency pairs, with an ordinary key's norm; a sink
//     mechanism of Gu et al., arXiv:2410.10781)       head's queries share a component along it, sized so that
//                                                      the last query puts sink_share of its attention on them;
//                                                      their values are small (they store attention, not content).
//   local heads (StreamingLLM Fig. 2's first layers,  keys and a local head's queries share a direction over the
//     DuoAttention's streaming heads,                 high-frequency pairs: RoPE makes their product largest at
//     arXiv:2410.10819)                                distance 0 and dephase with distance (RoFormer §3.4.3's
//                                                      long-term decay); sized so that the last query puts
//                                                      local_mass of its attention within its last 64 keys.
//   diffuse heads                                     neither component: attention spread by the data alone.
//   values' common component (anisotropy of          every value = the KV head's mean vector + its own N(0, 1)
//     contextual representations, Ethayarajh,         draw; value_mean is the cosine similarity of two tokens'
//     EMNLP 2019)                                      values that this gives.
//
// Order of generation (each head from its own streams, random.h; the bytes depend only on parameters, seed
// and shapes): plan → pre-RoPE K, V, Q → RoPE on K → per (batch, query head) of a sink or local kind, the
// query component's size solved on the last query row (position kv_len − 1, the one decode computes and the
// one that sees every key under a causal mask) → component added to the head's queries → RoPE on Q.
#pragma once

#include "core/data/attention_stats.h"  // kRecentWindow: local_mass is measured as attn.recent_mass is
#include "core/data/generators.h"

#include <cstdint>
#include <vector>

namespace attnlab::data {

// The registry row: parameters, defaults (each with its source) and ranges.
GeneratorSpec llm_like_spec();

// What kind each query head is (llm_like's head mix: sink_heads and local_heads are shares of the query heads).
enum class HeadKind { sink, local, diffuse };
const char* head_kind_name(HeadKind k);

// One outlier channel of a head, pre-RoPE: magnitude · sign · (offset + outlier_noise · z), z the head's
// N(0, 1) draw for that element.
struct OutlierChannel {
  int64_t index = 0;    // channel in [0, d); at most one per RoPE pair (i, i + d/2)
  double sign = 1.0;    // ±1
  double offset = 1.0;  // in [0.6, 1.0]
};
struct HeadOutliers {
  double magnitude = 0.0;                // 0 when the head has none
  std::vector<OutlierChannel> channels;  // sorted by index
};

// Everything llm_like decides before drawing tokens; exposed so tests and views can say what was made.
struct LlmLikePlan {
  std::vector<HeadOutliers> key;    // one per KV head (shared by every batch entry)
  std::vector<HeadOutliers> query;  // one per query head; the channels of its KV head
  // Per KV head, unit vectors of length d, pre-RoPE; empty when the property is off (no sink or no local heads).
  std::vector<std::vector<double>> sink_direction;
  std::vector<std::vector<double>> recent_direction;
  std::vector<std::vector<double>> value_mean;  // per KV head, length d (all zero when value_mean is 0)
  std::vector<HeadKind> kinds;                  // per query head
  int64_t sink_tokens = 0;                      // 0 when sinks are off
};
LlmLikePlan llm_like_plan(const Problem& p, const ParamValues& params, uint64_t seed);

// Fills out (shaped by the caller) with llm_like data; InputError "problem.head_dim" when RoPE meets an odd
// head dimension, "data.local_heads" when sink_heads + local_heads exceeds 1.
void generate_llm_like(const Problem& p, const ParamValues& params, uint64_t seed, QKV& out);

}  // namespace attnlab::data
