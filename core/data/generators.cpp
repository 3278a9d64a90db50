#include "core/data/generators.h"

#include "core/data/random.h"
#include "core/error.h"
#include "core/parallel.h"
#include "core/rope.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
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

// llm_like: the offset of an outlier channel, as a fraction of the head's magnitude.
constexpr double kOffsetLo = 0.6, kOffsetHi = 1.0;
// llm_like values: a mild per-token scale, uniform in [0.75, 1.25].
constexpr double kValueTokenScaleLo = 0.75, kValueTokenScaleHi = 1.25;

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
      {"llm_like",
       "N(0,1) with a few large key (and query) channels per head, head-to-head range differences and "
       "RoPE, like real LLM activations (TurboAttention Fig. 4, FireQ 3.2.1)",
       {ParamSpec::integer("outlier_channels", 4, 0, 64,
                           "outlier key channels per KV head, at most one per RoPE pair (clamped to "
                           "head_dim/2)"),
        ParamSpec::real("outlier_scale", 10.0, 1.0, 1000.0,
                        "typical magnitude of an outlier key channel, in units of a normal channel's"),
        ParamSpec::real("outlier_spread", 0.5, 0.0, 1.0,
                        "per-head magnitude factor drawn uniformly in [1-spread, 1+spread]"),
        ParamSpec::boolean("query_outliers", true,
                           "query heads share their KV head's outlier channels at sqrt of its magnitude"),
        ParamSpec::boolean("rope", true, "apply RoPE to q and k after placing the outliers"),
        ParamSpec::real("rope_base", 10000.0, 2.0, 1e9,
                        "RoPE base (10000: Llama 2; 500000: Llama 3)")}},
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

// llm_like, one head before RoPE. q and k: N(0, 1), with the plan's outlier channels replaced by
// magnitude · sign · (offset + kOutlierNoise · z) — the same z draw, so a channel's noise does not
// depend on whether it is an outlier. v: N(0, 1) times a mild per-token scale.
void fill_llm_like(const HeadJob& job, uint64_t seed, const OutlierPlan& plan) {
  Rng rng(stream_key(seed, uint64_t(job.tensor), uint64_t(job.b), uint64_t(job.h)));
  float* x = head_ptr(job);
  const int64_t len = job.out->shape().len, dim = job.out->shape().dim;
  if (job.tensor == StreamId::v) {
    // TurboAttention Fig. 4: "for value, there is no obvious outlier pattern" across channels; the
    // per-token scale only makes some tokens louder than others, uniformly over their channels.
    for (int64_t n = 0; n < len; ++n) {
      const double t = rng.uniform(kValueTokenScaleLo, kValueTokenScaleHi);
      for (int64_t c = 0; c < dim; ++c) x[n * dim + c] = static_cast<float>(t * rng.normal());
    }
    return;
  }
  const HeadOutliers& ho = job.tensor == StreamId::k ? plan.key[job.h] : plan.query[job.h];
  std::vector<double> z(static_cast<size_t>(dim));
  for (int64_t n = 0; n < len; ++n) {
    for (int64_t c = 0; c < dim; ++c) z[c] = rng.normal();
    for (const OutlierChannel& oc : ho.channels)
      z[oc.index] = ho.magnitude * (oc.sign * (oc.offset + kOutlierNoise * z[oc.index]));
    for (int64_t c = 0; c < dim; ++c) x[n * dim + c] = static_cast<float>(z[c]);
  }
}

void check_shapes(const Problem& p) {
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

}  // namespace

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

OutlierPlan llm_like_outlier_plan(const Problem& p, const ParamValues& params, uint64_t seed) {
  check_shapes(p);
  const int64_t half = p.head_dim / 2;
  // At most one outlier channel per RoPE pair: RoPE mixes i with i + d/2 (FireQ §3.2.1), so two
  // outliers in one pair would just be one outlier pair; d/2 is therefore the most that can differ.
  const int64_t count = std::clamp<int64_t>(params.integer("outlier_channels"), 0, half);
  const double scale = params.real("outlier_scale");
  const double spread = params.real("outlier_spread");
  const bool queries = params.flag("query_outliers");

  OutlierPlan plan;
  plan.key.resize(static_cast<size_t>(p.kv_heads));
  plan.query.resize(static_cast<size_t>(p.q_heads));
  for (int64_t h = 0; h < p.kv_heads; ++h) {
    // One plan per KV head, the same for every batch entry: outlier channels are a property of the
    // model's projection weights, not of the input.
    Rng rng(stream_key(seed, uint64_t(StreamId::key_outliers), 0, uint64_t(h)));
    HeadOutliers& ho = plan.key[h];
    // TurboAttention Fig. 4 / §3.2: heads differ in how large their outlier channels are, which is
    // what its head priority ranks; the factor is drawn first so it does not depend on `count`.
    ho.magnitude = scale * rng.uniform(1.0 - spread, 1.0 + spread);
    // `count` distinct pairs by a partial Fisher–Yates shuffle, then which member of the pair, the
    // sign and the offset: a consistent large value with a consistent sign on a few channels, as in
    // Fig. 4's min–max bands (and KIVI's per-channel key outliers).
    std::vector<int64_t> pairs(static_cast<size_t>(half));
    std::iota(pairs.begin(), pairs.end(), int64_t(0));
    for (int64_t j = 0; j < count; ++j) {
      const int64_t r = j + static_cast<int64_t>(rng.below(uint64_t(half - j)));
      std::swap(pairs[j], pairs[r]);
      OutlierChannel oc;
      oc.index = pairs[j] + ((rng.next_u64() >> 63) ? half : 0);
      oc.sign = (rng.next_u64() >> 63) ? -1.0 : 1.0;
      oc.offset = rng.uniform(kOffsetLo, kOffsetHi);
      ho.channels.push_back(oc);
    }
    std::sort(ho.channels.begin(), ho.channels.end(),
              [](const OutlierChannel& a, const OutlierChannel& b) { return a.index < b.index; });
  }
  if (queries) {
    for (int64_t qh = 0; qh < p.q_heads; ++qh) {
      // Fig. 4 shows the same kind of large channels in query heads, smaller than the keys'. Our
      // choice: the group's query heads use their KV head's channels with magnitude sqrt(M) (M the
      // KV head's magnitude), between a normal channel's 1 and the key's M, so q·k's outlier term
      // grows like M^1.5 rather than M^2; signs and offsets are the query head's own.
      const HeadOutliers& kh = plan.key[p.kv_head_of(qh)];
      Rng rng(stream_key(seed, uint64_t(StreamId::query_outliers), 0, uint64_t(qh)));
      HeadOutliers& ho = plan.query[qh];
      ho.magnitude = std::sqrt(kh.magnitude);
      for (const OutlierChannel& k : kh.channels) {
        OutlierChannel oc;
        oc.index = k.index;
        oc.sign = (rng.next_u64() >> 63) ? -1.0 : 1.0;
        oc.offset = rng.uniform(kOffsetLo, kOffsetHi);
        ho.channels.push_back(oc);
      }
    }
  }
  return plan;
}

QKV generate(const Problem& p, const std::string& name, const ParamValues& params, uint64_t seed) {
  const GeneratorSpec* spec = find_generator(name);
  if (!spec) fail_input("data.generator", fmt::format("unknown generator '{}'", name));
  check_shapes(p);

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
    const bool rope = params.flag("rope");
    const double base = params.real("rope_base");
    if (rope && p.head_dim % 2 != 0)
      fail_input("problem.head_dim", fmt::format("{} is odd; RoPE needs channel pairs", p.head_dim));
    const OutlierPlan plan = llm_like_outlier_plan(p, params, seed);
    run([&](const HeadJob& j) { fill_llm_like(j, seed, plan); });
    // FireQ §3.2.1: RoPE comes after the projection, so the outliers placed above are pre-RoPE and
    // each is now spread over its pair (i, i + d/2), more so the higher the pair's frequency.
    if (rope) {
      apply_rope(out.q, query_positions(p), base);
      apply_rope(out.k, key_positions(p), base);
    }
  } else {
    throw std::logic_error("generator '" + name + "' is registered but not implemented");
  }
  return out;
}

}  // namespace attnlab::data
