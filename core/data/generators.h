// attnlab data: seeded synthetic Q/K/V, identical for the same seed on every machine.
//
// Four generators, each declaring its parameters as ParamSpec rows (core/params.h):
//   normal     i.i.d. N(mean, std²) for q, k and v.
//   uniform    i.i.d. U[low, high).
//   student_t  i.i.d. scale · t_ν: heavy tails (ν = 3 has infinite kurtosis), the hard case for
//              absmax scaling.
//   llm_like   the structure of real LLM activations, each property from a published measurement and each
//              one switchable: core/data/llm_like.h.
//
// Determinism: every (tensor, batch entry, head) draws from its own stream, keyed by a hash of
// (seed, tensor id, b, h) (core/data/random.h), and the per-head outlier plan from streams keyed by
// (seed, plan id, 0, head). Heads are generated in parallel; the bytes depend only on
// (generator, parameters, seed, shapes), never on the thread count or the machine.
#pragma once

#include "core/params.h"
#include "core/problem.h"
#include "core/tensor.h"

#include <cstdint>
#include <string>
#include <vector>

namespace attnlab::data {

struct GeneratorSpec {
  std::string name;               // "normal", "uniform", "student_t", "llm_like"
  std::string help;               // one line
  std::vector<ParamSpec> params;  // declared as data, validated by ParamValues::parse
};

const std::vector<GeneratorSpec>& generator_registry();
// nullptr if unknown.
const GeneratorSpec* find_generator(const std::string& name);

// Fills q (p.q_shape()), k and v (p.kv_shape()). Deterministic in (name, params, seed, shapes).
// `params` must hold the generator's parameters (ParamValues::parse / defaults of its rows).
// InputError: "data.generator" for an unknown name, "data.high" when low ≥ high, "problem.head_dim"
// when llm_like applies RoPE to an odd head dimension (llm_like.h lists its own).
QKV generate(const Problem& p, const std::string& name, const ParamValues& params, uint64_t seed);

// The RoPE positions llm_like uses: keys 0 … kv_len − 1; queries kv_len − q_len … kv_len − 1, so the
// queries are the last q_len tokens of the sequence and decode's single query sits at the last position.
std::vector<int64_t> key_positions(const Problem& p);
std::vector<int64_t> query_positions(const Problem& p);

// Stream ids hashed into every stream key (fixed forever: changing one changes every data set).
enum class StreamId : uint64_t {
  q = 0, k = 1, v = 2, key_outliers = 3, query_outliers = 4,
  sink_direction = 5, recent_direction = 6, head_kinds = 7, value_mean = 8,  // llm_like's plan (llm_like.h)
};

// InputError naming the problem field when a shape is negative or kv_heads does not divide q_heads.
void check_generator_shapes(const Problem& p);

}  // namespace attnlab::data

namespace attnlab {
using data::GeneratorSpec;  // config.cpp and the front ends name it without the namespace
}
