// attnlab tests: the settings and shapes under which the storage declarations (core/storage.h) are held
// against the references' own cache counts, the cost model's schedule and the capacity model — each
// variant's defaults and the parameters that change its storage (bit widths, head mix, groups, residual,
// scale formats, the decode buffer), on shapes whose token counts are not block or group multiples.
#pragma once

#include "core/problem.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace attnlab::test {

struct StorageCase {
  std::string variant;
  nlohmann::json params;  // applied over the defaults
  bool decode_only = false;  // decode_steps: a prefill run has none
};

inline const std::vector<StorageCase>& storage_cases() {
  static const std::vector<StorageCase> cases = {
      {"naive", nlohmann::json::object()},
      {"flash2", nlohmann::json::object()},
      {"flash3_fp8", nlohmann::json::object()},
      {"flash3_fp8", {{"block_c", 48}, {"p_format", "fp16"}}},
      {"int_flash", nlohmann::json::object()},
      {"int_flash", {{"v_fp16", true}}},
      {"turbo", nlohmann::json::object()},
      {"turbo", {{"two_bit_heads", 1}, {"block_c", 48}}},
      {"turbo", {{"bits_hi", 8}, {"bits_lo", 4}, {"two_bit_heads", 1}}},
      {"turbo", {{"decode_steps", 5}, {"n_b", 16}}, true},                          // pending tokens only
      {"turbo", {{"decode_steps", 32}, {"n_b", 16}, {"two_bit_heads", 1}}, true},   // two flushes, none pending
      {"turbo", {{"decode_steps", 45}, {"n_b", 20}, {"bits_hi", 8}}, true},         // flushes and pending
      {"kivi", nlohmann::json::object()},
      {"kivi", {{"bits", 4}, {"group", 48}, {"residual", 16}}},                    // g not dividing d = 64
      {"kivi", {{"bits", 8}, {"group", 32}, {"residual", 0}}},
      {"fireq", nlohmann::json::object()},
      {"fireq", {{"scale_format", "fp32"}}},
      {"fireq", {{"prefill_kv", "fp8"}}},  // prefill reads E4M3 K/V + BF16 β (kv_in) and writes the INT4 cache
      {"fireq", {{"prefill_kv", "fp8"}, {"fp8_k_scale", "tile"}}},  // β_K per KV tile: kv_in groups block_c tokens
  };
  return cases;
}

// Batch 2 over 2 of 4 query heads' KV heads, batch 1 with one KV head, batch 1 with 4: token counts 70, 130
// and 300 fill no block of 16…224 and no group of 32 or 48 exactly.
inline std::vector<Problem> storage_shapes(Phase phase) {
  std::vector<Problem> out;
  for (auto [batch, kv_heads, d, n] : {std::tuple{2, 2, 64, 70}, {1, 1, 128, 130}, {1, 4, 64, 300}}) {
    Problem p;
    p.batch = batch, p.q_heads = 4, p.kv_heads = kv_heads, p.head_dim = d, p.kv_len = n;
    p.q_len = phase == Phase::decode ? 1 : 24;  // a short prefill: the cache is the whole K/V either way
    p.phase = phase;
    out.push_back(p);
  }
  return out;
}

}  // namespace attnlab::test
