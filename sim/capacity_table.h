// attnlab sim: the comparison `attnlab capacity` prints and attnlab.kv_capacity (Python) returns — for one
// model, GPU and context, each variant's KV cache, the batch that fits and the decode throughput there
// (capacity.h has the arithmetic). Both front ends render these rows, so they cannot disagree on a number.
#pragma once

#include "core/config.h"
#include "sim/capacity.h"
#include "sim/gpu_spec.h"

#include <cstdint>
#include <string>
#include <vector>

namespace attnlab::sim {

// The variants compared when none are given: every registered variant at its defaults, then turbo with
// half of m's KV heads at 2 bits (TurboAttention's 2/4-bit mix), labelled "turbo 2/4-bit mix". `where`
// names the model in a refusal ("--model 'llama-3-8b'").
std::vector<VariantRequest> default_capacity_variants(const LlmConfig& m, const std::string& where);

struct CapacityRow {
  CacheFormat format;
  Capacity capacity;
  double bytes_per_token = 0;  // the cache per token over all layers (format.bytes_per_token is one layer's)
  double speedup = 0;          // tokens/s over those of the first row that fits; 0 when this row does not fit

  // One sequence fits: only then is there a decode step (step_ms, tokens_per_s and speedup are 0 otherwise).
  bool fits() const { return capacity.max_batch > 0; }
};

// One row per variant, in order. Refused as "--context: …" when not even the smallest cache of one sequence
// fits the memory the weights leave: a table of zero batches would hide it. Every row is computed before
// anything is returned, so the refusal comes before a front end prints anything.
std::vector<CapacityRow> capacity_table(const LlmConfig& m, const GpuSpec& g, int64_t context,
                                        const std::vector<VariantRequest>& variants);

}  // namespace attnlab::sim
