// attnlab tests: what the variant tests share — the skeleton issue's sweep problem, generated inputs,
// a variant's parameters with some set, a checked reference run, and FP64 → FP32 tensors.
#pragma once

#include "core/data/generators.h"
#include "core/variant.h"

#include <nlohmann/json.hpp>

#include <initializer_list>
#include <string>
#include <utility>

namespace attnlab::test {

// Batch 2, 4 query heads over 1 (GQA) or 4 KV heads; decode attends one query to the n keys.
inline Problem sweep_problem(int64_t d, int64_t n, bool causal, bool gqa, Phase phase) {
  Problem p;
  p.batch = 2;
  p.q_heads = 4;
  p.kv_heads = gqa ? 1 : 4;
  p.head_dim = d;
  p.kv_len = n;
  p.q_len = phase == Phase::decode ? 1 : n;
  p.causal = causal;
  p.phase = phase;
  return p;
}

// Any shape, non-causal; q_len 1 is a decode step.
inline Problem problem(int64_t batch, int64_t q_heads, int64_t kv_heads, int64_t q_len, int64_t kv_len, int64_t d) {
  Problem p;
  p.batch = batch;
  p.q_heads = q_heads;
  p.kv_heads = kv_heads;
  p.q_len = q_len;
  p.kv_len = kv_len;
  p.head_dim = d;
  if (q_len == 1) p.phase = Phase::decode;
  return p;
}

// Generator `gen`'s parameters: its defaults with `given` applied through a config's validation ("data.<name>").
inline ParamValues generator_params(const std::string& gen, const nlohmann::json& given = nlohmann::json::object()) {
  return ParamValues::parse(data::find_generator(gen)->params, given, "data");
}

// Inputs from generator `gen` with its default parameters, or those of `given` ({"sink_heads": 0.0}).
inline QKV generated(const Problem& p, const std::string& gen, uint64_t seed,
                     const nlohmann::json& given = nlohmann::json::object()) {
  return data::generate(p, gen, generator_params(gen, given), seed);
}

using ParamSettings = std::initializer_list<std::pair<const char*, nlohmann::json>>;

// v's defaults with `set` applied through the same validation a config gets (errors name v.id).
inline ParamValues params_of(const VariantSpec& v, ParamSettings set) {
  ParamValues pv = ParamValues::defaults(v.params);
  for (const auto& [name, value] : set) pv.set(v.params, name, value, v.id);
  return pv;
}

// v's cross-parameter check (when it has one), then its reference.
inline ReferenceOutput run_checked(const VariantSpec& v, const Problem& p, const QKV& in, const ParamValues& pv,
                                   const ProbeRequest& req = {}) {
  if (v.validate) v.validate(p, pv, v.id);
  return v.reference(p, in, pv, req);
}

inline Tensor to_float(const TensorF64& t) {
  Tensor f(t.shape());
  for (int64_t i = 0; i < t.size(); ++i) f.data()[i] = float(t.data()[i]);
  return f;
}

}  // namespace attnlab::test
