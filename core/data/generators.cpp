#include "core/data/generators.h"

#include "core/data/llm_like.h"
#include "core/data/random.h"
#include "core/error.h"
#include "core/parallel.h"
#include "core/rope.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

// No fused multiply-adds (core/data/random.h says why). GCC: the project compiles with -std=c++20 and
// CMAKE_CXX_EXTENSIONS OFF, under which GCC's default is -ffp-contract=off — keep it that way (do not
// switch to gnu++20 or add -ffp-contract=fast). Clang contracts by default, so turn it off here.
#if defined(__clang__)
#pragma clang fp contract(off)
#endif

namespace attnlab::data {

namespace {

// Ranges wide enough for any experiment, narrow enough that float holds the results.
constexpr double kBig = 1e6;

std::vector<GeneratorSpec> make_registry() {
  return {
      {"normal",
       "i.i.d. normal N(mean, std^2) for q, k and v",
       {ParamSpec::real("mean", 0.0, -kBig, kBig, "mean of every element"),
        ParamSpec::real("std", 1.0, 0.0, kBig, "standard deviation of every element")}},
      {"uniform",
       "i.i.d. uniform on [low, high) for q, k and v",
       {ParamSpec::real("low", -1.0, -kBig, kBig, "lower bound (inclusive)"),
        ParamSpec::real("high", 1.0, -kBig, kBig, "upper bound (exclusive); must exceed low")}},
      {"student_t",
       "i.i.d. heavy-tailed scale * Student-t(nu) for q, k and v",
       {ParamSpec::real("nu", 3.0, 1.0, 100.0,
                        "degrees of freedom: 1 is Cauchy, small is heavy-tailed, 100 is nearly normal"),
        ParamSpec::real("scale", 1.0, 0.0, kBig, "multiplies every element")}},
      llm_like_spec(),
  };
}

// One head of one tensor: which stream, where the (N, d) block lives.
struct HeadJob {
  StreamId tensor;
  int64_t b = 0, h = 0;
  Tensor* out = nullptr;
};

float* head_ptr(const HeadJob& job) { return job.out->data() + job.out->offset(job.b, job.h); }

void fill_normal(const HeadJob& job, uint64_t seed, double mean, double stddev) {
  Rng rng(stream_key(seed, uint64_t(job.tensor), uint64_t(job.b), uint64_t(job.h)));
  float* x = head_ptr(job);
  const int64_t count = job.out->shape().head_count();
  for (int64_t i = 0; i < count; ++i) x[i] = static_cast<float>(mean + stddev * rng.normal());
}

void fill_uniform(const HeadJob& job, uint64_t seed, double low, double high) {
  Rng rng(stream_key(seed, uint64_t(job.tensor), uint64_t(job.b), uint64_t(job.h)));
  float* x = head_ptr(job);
  const int64_t count = job.out->shape().head_count();
  // Rounding to float can land on `high` itself when high − low is large; clamp so the documented
  // bounds [low, high] hold for the stored floats too.
  const float lo = static_cast<float>(low), hi = static_cast<float>(high);
  for (int64_t i = 0; i < count; ++i)
    x[i] = std::clamp(static_cast<float>(rng.uniform(low, high)), lo, hi);
}

void fill_student_t(const HeadJob& job, uint64_t seed, double nu, double scale) {
  Rng rng(stream_key(seed, uint64_t(job.tensor), uint64_t(job.b), uint64_t(job.h)));
  float* x = head_ptr(job);
  const int64_t count = job.out->shape().head_count();
  for (int64_t i = 0; i < count; ++i) x[i] = static_cast<float>(scale * rng.student_t(nu));
}

}  // namespace

void check_generator_shapes(const Problem& p) {
  auto non_negative = [](const char* field, int64_t v) {
    if (v < 0) fail_input(fmt::format("problem.{}", field), fmt::format("must not be negative, got {}", v));
  };
  non_negative("batch", p.batch);
  non_negative("q_heads", p.q_heads);
  non_negative("q_len", p.q_len);
  non_negative("kv_len", p.kv_len);
  non_negative("head_dim", p.head_dim);
  if (p.kv_heads <= 0) fail_input("problem.kv_heads", fmt::format("must be positive, got {}", p.kv_heads));
  if (p.q_heads % p.kv_heads != 0)
    fail_input("problem.kv_heads", fmt::format("{} does not divide q_heads ({})", p.kv_heads, p.q_heads));
}

const std::vector<GeneratorSpec>& generator_registry() {
  static const std::vector<GeneratorSpec> registry = make_registry();
  return registry;
}

const GeneratorSpec* find_generator(const std::string& name) {
  for (const auto& g : generator_registry())
    if (g.name == name) return &g;
  return nullptr;
}

std::vector<int64_t> key_positions(const Problem& p) { return rope_positions(p.kv_len, 0); }

std::vector<int64_t> query_positions(const Problem& p) {
  return rope_positions(p.q_len, p.kv_len - p.q_len);
}

QKV generate(const Problem& p, const std::string& name, const ParamValues& params, uint64_t seed) {
  const GeneratorSpec* spec = find_generator(name);
  if (!spec) fail_input("data.generator", fmt::format("unknown generator '{}'", name));
  check_generator_shapes(p);

  QKV out{Tensor(p.q_shape()), Tensor(p.kv_shape()), Tensor(p.kv_shape())};
  std::vector<HeadJob> jobs;
  jobs.reserve(static_cast<size_t>(p.batch * (p.q_heads + 2 * p.kv_heads)));
  for (int64_t b = 0; b < p.batch; ++b) {
    for (int64_t h = 0; h < p.q_heads; ++h) jobs.push_back({StreamId::q, b, h, &out.q});
    for (int64_t h = 0; h < p.kv_heads; ++h) jobs.push_back({StreamId::k, b, h, &out.k});
    for (int64_t h = 0; h < p.kv_heads; ++h) jobs.push_back({StreamId::v, b, h, &out.v});
  }
  const auto run = [&](const auto& fill) {
    parallel_for(static_cast<int64_t>(jobs.size()), [&](int64_t i) { fill(jobs[i]); });
  };

  if (name == "normal") {
    const double mean = params.real("mean"), stddev = params.real("std");
    run([&](const HeadJob& j) { fill_normal(j, seed, mean, stddev); });
  } else if (name == "uniform") {
    const double low = params.real("low"), high = params.real("high");
    if (!(low < high)) fail_input("data.high", fmt::format("{} must be greater than low ({})", high, low));
    run([&](const HeadJob& j) { fill_uniform(j, seed, low, high); });
  } else if (name == "student_t") {
    const double nu = params.real("nu"), scale = params.real("scale");
    run([&](const HeadJob& j) { fill_student_t(j, seed, nu, scale); });
  } else if (name == "llm_like") {
    generate_llm_like(p, params, seed, out);
  } else {
    throw std::logic_error("generator '" + name + "' is registered but not implemented");
  }
  return out;
}

}  // namespace attnlab::data
