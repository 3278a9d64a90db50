#include "core/data/llm_like.h"

#include "core/data/random.h"
#include "core/error.h"
#include "core/parallel.h"
#include "core/rope.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

// No fused multiply-adds (core/data/random.h says why); Clang contracts by default, so turn it off here.
#if defined(__clang__)
#pragma clang fp contract(off)
#endif

namespace attnlab::data {

namespace {

// An outlier channel's offset, as a fraction of the head's magnitude.
constexpr double kOffsetLo = 0.6, kOffsetHi = 1.0;
// A value's per-token scale, uniform in [0.75, 1.25]: some tokens louder than others, uniformly over their
// channels (TurboAttention Fig. 4: "for value, there is no obvious outlier pattern" across channels).
constexpr double kValueTokenScaleLo = 0.75, kValueTokenScaleHi = 1.25;
// E[t²] of that scale: 1 + (0.5)²/12, what a value's own part contributes to its squared norm per channel.
constexpr double kValueTokenScaleSquare = 1.0 + 0.25 / 12.0;
// The sink direction spans this many of the lowest-frequency pairs that hold no outlier: where RoPE turns a
// vector least, so a query's alignment with the sink key survives every distance (Jin et al. §3: the
// low-frequency pairs carry what does not depend on position).
constexpr int64_t kSinkPairs = 4;
// The largest query component the solver tries, in units of a normal channel: 64 is six times a d = 128 query's
// own norm, a logit change of up to ~64 — far past any share a parameter can ask for on data where the share
// grows with it, and small enough that a share beyond reach (the target stays unmet) leaves FP16-safe values.
constexpr double kMaxAmplitude = 64;

int64_t head_kind_count(double share, int64_t heads) { return std::llround(share * double(heads)); }

// Unit vector over the channels of `pairs` (both members of each pair), N(0, 1) entries normalized.
std::vector<double> direction_over_pairs(const std::vector<int64_t>& pairs, int64_t dim, Rng& rng) {
  std::vector<double> u(static_cast<size_t>(dim), 0.0);
  const int64_t half = dim / 2;
  double norm2 = 0.0;
  for (int64_t i : pairs)
    for (int64_t c : {i, i + half}) {
      u[c] = rng.normal();
      norm2 += u[c] * u[c];
    }
  const double inv = norm2 > 0.0 ? 1.0 / std::sqrt(norm2) : 0.0;
  for (double& x : u) x *= inv;
  return u;
}

// x rotated as RoPE rotates the token at `position` (core/rope.h), in double; x unchanged when rope is off.
std::vector<double> rotated(std::vector<double> x, int64_t position, bool rope, double base) {
  if (!rope) return x;
  const int64_t dim = static_cast<int64_t>(x.size()), half = dim / 2;
  for (int64_t i = 0; i < half; ++i) {
    double s = 0.0, c = 0.0;
    portable_sincos(double(position) * rope_frequency(i, dim, base), s, c);
    const double a = x[i], b = x[i + half];
    x[i] = a * c - b * s;
    x[i + half] = b * c + a * s;
  }
  return x;
}

// The share of softmax(base + a·gain) on keys [first, last), for the query component a.
double share_at(const std::vector<double>& base, const std::vector<double>& gain, int64_t first, int64_t last,
                double a) {
  double m = -INFINITY;
  for (size_t n = 0; n < base.size(); ++n) m = std::max(m, base[n] + a * gain[n]);
  double in = 0.0, all = 0.0;
  for (size_t n = 0; n < base.size(); ++n) {
    const double e = portable_exp(base[n] + a * gain[n] - m);
    all += e;
    if (int64_t(n) >= first && int64_t(n) < last) in += e;
  }
  return in / all;
}

// The smallest a ≥ 0 (to 60 halvings) whose share on [first, last) reaches `target`: 0 when the data alone
// reaches it, kMaxAmplitude when nothing does. The share grows with a wherever the window's keys align with
// the component better than the rest — the sink keys by construction, the recent keys by RoPE's decay.
double solve_amplitude(const std::vector<double>& base, const std::vector<double>& gain, int64_t first,
                       int64_t last, double target) {
  if (share_at(base, gain, first, last, 0.0) >= target) return 0.0;
  double lo = 0.0, hi = 1.0;
  while (share_at(base, gain, first, last, hi) < target) {
    if (hi >= kMaxAmplitude) return kMaxAmplitude;
    lo = hi;
    hi = std::min(2.0 * hi, kMaxAmplitude);
  }
  for (int i = 0; i < 60; ++i) {
    const double mid = 0.5 * (lo + hi);
    (share_at(base, gain, first, last, mid) < target ? lo : hi) = mid;
  }
  return hi;
}

}  // namespace

const char* head_kind_name(HeadKind k) {
  switch (k) {
    case HeadKind::sink: return "sink";
    case HeadKind::local: return "local";
    case HeadKind::diffuse: return "diffuse";
  }
  return "?";
}

GeneratorSpec llm_like_spec() {
  return {
      "llm_like",
      "N(0,1) with the structure of real LLM activations: large key/query channels in low-frequency RoPE pairs, "
      "attention sinks, sink/local/diffuse heads, values with a common component, RoPE (Jin et al. 2025, "
      "StreamingLLM, KIVI, TurboAttention Fig. 4)",
      {ParamSpec::integer("outlier_channels", 8, 0, 64,
                          "large key channels per KV head, at most one per RoPE pair of the band: Llama-3.1-8B's "
                          "keys have eight outlier channel pairs (FireQ App. E.1, Fig. 11); 0 turns them off"),
       ParamSpec::real("outlier_scale", 10.0, 1.0, 1000.0,
                       "typical magnitude of an outlier key channel in units of a normal channel's: an order of "
                       "magnitude above the rest (KIVI Fig. 2, TurboAttention Fig. 4)"),
       ParamSpec::real("outlier_spread", 0.5, 0.0, 1.0,
                       "per-head magnitude factor, uniform in [1-spread, 1+spread]: heads differ in their "
                       "outliers' size, what TurboAttention's head priority ranks (Sec. 3.2, Fig. 4)"),
       ParamSpec::real("outlier_noise", 0.2, 0.0, 1.0,
                       "token-to-token variation of an outlier channel, a fraction of its magnitude: fixed channels "
                       "of consistent sign (KIVI Sec. 3, Fig. 2); 0.2 keeps the sign on 99.9% of tokens"),
       ParamSpec::real("outlier_band", 0.25, 0.0, 1.0,
                       "share of RoPE pairs, lowest frequency first, the outlier channels are drawn from: massive "
                       "Q/K values sit in low-frequency pairs (Jin et al., arXiv:2502.01563, Fig. 1); 1: any pair"),
       ParamSpec::boolean("query_outliers", true,
                          "query heads carry their KV head's outlier channels at sqrt of its magnitude (Jin et al.: "
                          "massive values in Q as in K)"),
       ParamSpec::real("sink_heads", 0.5, 0.0, 1.0,
                       "share of query heads dominated by an attention sink: beyond the first two layers most heads "
                       "attend heavily to the first token (StreamingLLM, arXiv:2309.17453, Fig. 2); 0: no sinks"),
       ParamSpec::real("sink_share", 0.5, 0.0, 0.99,
                       "in a sink head, the share of the last query's attention on the sink tokens (at least: the "
                       "data alone may give more)"),
       ParamSpec::integer("sink_tokens", 1, 1, 16,
                          "leading tokens that act as sinks (StreamingLLM keeps 4; the first takes most)"),
       ParamSpec::real("sink_value_scale", 0.2, 0.0, 1.0,
                       "the sink tokens' values relative to the others': a sink stores attention, not content "
                       "(Gu et al., arXiv:2410.10781)"),
       ParamSpec::real("local_heads", 0.25, 0.0, 1.0,
                       "share of query heads attending mostly to recent tokens (StreamingLLM Fig. 2's first layers; "
                       "DuoAttention's streaming heads, arXiv:2410.10819); 0: none"),
       ParamSpec::real("local_mass", 0.5, 0.0, 0.99,
                       "in a local head, the share of the last query's attention within its last 64 keys (at "
                       "least: the data alone may give more; RoPE makes it: with rope false none)"),
       ParamSpec::real("value_mean", 0.3, 0.0, 0.95,
                       "cosine similarity of two tokens' values: a common component, as contextual representations "
                       "share a direction (anisotropy, Ethayarajh, EMNLP 2019); 0: zero-mean values"),
       ParamSpec::boolean("rope", true, "apply RoPE to q and k after placing the outliers"),
       ParamSpec::real("rope_base", 500000.0, 2.0, 1e9,
                       "RoPE base (500000: Llama 3, the model of TurboAttention Fig. 4 and FireQ; 10000: Llama 2)")}};
}

LlmLikePlan llm_like_plan(const Problem& p, const ParamValues& params, uint64_t seed) {
  check_generator_shapes(p);
  const int64_t dim = p.head_dim, half = dim / 2;
  // At most one outlier channel per RoPE pair: RoPE mixes i with i + d/2 (FireQ §3.2.1), so two outliers in one
  // pair would be one outlier pair. The band holds the lowest-frequency pairs (θ_i = base^(−2i/d) falls with i).
  const int64_t band = std::clamp<int64_t>(std::llround(params.real("outlier_band") * double(half)), 0, half);
  const int64_t count = std::clamp<int64_t>(params.integer("outlier_channels"), 0, band);
  const double scale = params.real("outlier_scale"), spread = params.real("outlier_spread");
  const double sink_heads = params.real("sink_heads"), local_heads = params.real("local_heads");
  if (sink_heads + local_heads > 1.0)
    fail_input("data.local_heads", fmt::format("{} with sink_heads {} is over 1: both are shares of the query heads",
                                               local_heads, sink_heads));
  const int64_t n_sink = head_kind_count(sink_heads, p.q_heads);
  const int64_t n_local = std::min(head_kind_count(local_heads, p.q_heads), p.q_heads - n_sink);

  LlmLikePlan plan;
  plan.key.resize(static_cast<size_t>(p.kv_heads));
  plan.query.resize(static_cast<size_t>(p.q_heads));
  plan.sink_tokens = n_sink > 0 ? params.integer("sink_tokens") : 0;
  for (int64_t h = 0; h < p.kv_heads; ++h) {
    // One plan per KV head, the same for every batch entry: outlier channels are a property of the model's
    // projection weights, not of the input.
    Rng rng(stream_key(seed, uint64_t(StreamId::key_outliers), 0, uint64_t(h)));
    HeadOutliers& ho = plan.key[h];
    ho.magnitude = scale * rng.uniform(1.0 - spread, 1.0 + spread);  // drawn first: independent of `count`
    // `count` distinct pairs of the band by a partial Fisher–Yates shuffle, then which member of the pair, the
    // sign and the offset. With outlier_band 1 the draws are the ones this generator made before the band existed.
    std::vector<int64_t> pairs(static_cast<size_t>(band));
    std::iota(pairs.begin(), pairs.end(), half - band);
    for (int64_t j = 0; j < count; ++j) {
      const int64_t r = j + static_cast<int64_t>(rng.below(uint64_t(band - j)));
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
  if (params.flag("query_outliers")) {
    for (int64_t qh = 0; qh < p.q_heads; ++qh) {
      // Jin et al. find the massive values in Q at K's positions. Our choice of size: sqrt(M) (M the KV head's
      // magnitude), between a normal channel's 1 and the key's M; signs and offsets are the query head's own.
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

  auto is_outlier_pair = [&](int64_t h, int64_t pair) {
    return std::any_of(plan.key[h].channels.begin(), plan.key[h].channels.end(),
                       [&](const OutlierChannel& oc) { return oc.index % half == pair; });
  };
  for (int64_t h = 0; h < p.kv_heads && half > 0; ++h) {
    if (n_sink > 0) {
      std::vector<int64_t> pairs;  // the lowest-frequency pairs without an outlier, else the lowest pair
      for (int64_t i = half - 1; i >= 0 && int64_t(pairs.size()) < kSinkPairs; --i)
        if (!is_outlier_pair(h, i)) pairs.push_back(i);
      if (pairs.empty()) pairs.push_back(half - 1);
      Rng rng(stream_key(seed, uint64_t(StreamId::sink_direction), 0, uint64_t(h)));
      plan.sink_direction.push_back(direction_over_pairs(pairs, dim, rng));
    }
    if (n_local > 0) {
      // The highest-frequency half of the pairs: their phases part within a few tokens, so the component's
      // product with itself peaks at distance 0 and falls within tens of tokens.
      std::vector<int64_t> pairs(static_cast<size_t>(std::max<int64_t>(1, half / 2)));
      std::iota(pairs.begin(), pairs.end(), int64_t(0));
      Rng rng(stream_key(seed, uint64_t(StreamId::recent_direction), 0, uint64_t(h)));
      plan.recent_direction.push_back(direction_over_pairs(pairs, dim, rng));
    }
  }
  // value = μ + t·z with E|t·z|² = kValueTokenScaleSquare·d: cos(v₁, v₂) ≈ |μ|² / (|μ|² + E|t·z|²) = value_mean
  // when μ's entries have variance ρ² = value_mean · kValueTokenScaleSquare / (1 − value_mean).
  const double c = params.real("value_mean");
  const double rho = std::sqrt(c * kValueTokenScaleSquare / (1.0 - c));
  for (int64_t h = 0; h < p.kv_heads; ++h) {
    Rng rng(stream_key(seed, uint64_t(StreamId::value_mean), 0, uint64_t(h)));
    std::vector<double> mu(static_cast<size_t>(dim), 0.0);
    if (rho > 0.0)
      for (double& x : mu) x = rho * rng.normal();
    plan.value_mean.push_back(std::move(mu));
  }
  // Which query heads are which: exact counts, placed by a seeded shuffle.
  std::vector<int64_t> order(static_cast<size_t>(p.q_heads));
  std::iota(order.begin(), order.end(), int64_t(0));
  Rng rng(stream_key(seed, uint64_t(StreamId::head_kinds), 0, 0));
  for (int64_t j = 0; j + 1 < p.q_heads; ++j)
    std::swap(order[j], order[j + static_cast<int64_t>(rng.below(uint64_t(p.q_heads - j)))]);
  plan.kinds.assign(static_cast<size_t>(p.q_heads), HeadKind::diffuse);
  for (int64_t j = 0; j < n_sink + n_local; ++j) plan.kinds[order[j]] = j < n_sink ? HeadKind::sink : HeadKind::local;
  return plan;
}

namespace {

struct Fill {
  const Problem& p;
  const LlmLikePlan& plan;
  uint64_t seed;
  double outlier_noise, sink_value_scale;
};

// Pre-RoPE q or k of one (batch, head): N(0, 1), the plan's outlier channels replaced by
// magnitude · sign · (offset + outlier_noise · z) — the same z draw, so a channel's noise does not depend on
// whether it is an outlier. Keys also carry the recent component (a unit direction times √(its channels), so
// each of them moves by about one normal channel) and, on the sink tokens, point along the sink direction
// with a normal key's norm outside the outlier channels (Gu et al.: a sink is a direction, not a large key).
void fill_qk(const Fill& f, StreamId tensor, int64_t b, int64_t h, float* x) {
  Rng rng(stream_key(f.seed, uint64_t(tensor), uint64_t(b), uint64_t(h)));
  const bool key = tensor == StreamId::k;
  const int64_t len = key ? f.p.kv_len : f.p.q_len, dim = f.p.head_dim;
  const HeadOutliers& ho = key ? f.plan.key[h] : f.plan.query[h];
  const std::vector<double>* recent = key && !f.plan.recent_direction.empty() ? &f.plan.recent_direction[h] : nullptr;
  const std::vector<double>* sink = key && !f.plan.sink_direction.empty() ? &f.plan.sink_direction[h] : nullptr;
  const double recent_size =
      recent ? std::sqrt(double(std::count_if(recent->begin(), recent->end(), [](double u) { return u != 0.0; })))
             : 0.0;
  const double sink_norm = std::sqrt(double(dim - int64_t(ho.channels.size())));
  std::vector<double> z(static_cast<size_t>(dim));
  std::vector<bool> outlier(static_cast<size_t>(dim), false);
  for (const OutlierChannel& oc : ho.channels) outlier[oc.index] = true;
  for (int64_t n = 0; n < len; ++n) {
    for (int64_t c = 0; c < dim; ++c) z[c] = rng.normal();
    if (recent)
      for (int64_t c = 0; c < dim; ++c) z[c] += recent_size * (*recent)[c];
    if (sink && n < f.plan.sink_tokens)
      for (int64_t c = 0; c < dim; ++c)
        if (!outlier[c]) z[c] = sink_norm * (*sink)[c];
    for (const OutlierChannel& oc : ho.channels)
      z[oc.index] = ho.magnitude * (oc.sign * (oc.offset + f.outlier_noise * z[oc.index]));
    for (int64_t c = 0; c < dim; ++c) x[n * dim + c] = static_cast<float>(z[c]);
  }
}

// v of one (batch, KV head): the head's mean vector plus N(0, 1) times a mild per-token scale; the sink tokens'
// values scaled down by sink_value_scale.
void fill_v(const Fill& f, int64_t b, int64_t h, float* x) {
  Rng rng(stream_key(f.seed, uint64_t(StreamId::v), uint64_t(b), uint64_t(h)));
  const int64_t dim = f.p.head_dim;
  const std::vector<double>& mu = f.plan.value_mean[h];
  for (int64_t n = 0; n < f.p.kv_len; ++n) {
    const double t = rng.uniform(kValueTokenScaleLo, kValueTokenScaleHi);
    const double s = n < f.plan.sink_tokens ? f.sink_value_scale : 1.0;
    for (int64_t c = 0; c < dim; ++c) x[n * dim + c] = static_cast<float>(s * (mu[c] + t * rng.normal()));
  }
}

}  // namespace

void generate_llm_like(const Problem& p, const ParamValues& params, uint64_t seed, QKV& out) {
  const bool rope = params.flag("rope");
  const double base = params.real("rope_base");
  if (rope && p.head_dim % 2 != 0)
    fail_input("problem.head_dim", fmt::format("{} is odd; RoPE needs channel pairs", p.head_dim));
  const LlmLikePlan plan = llm_like_plan(p, params, seed);
  const Fill f{p, plan, seed, params.real("outlier_noise"), params.real("sink_value_scale")};

  struct Job {
    StreamId tensor;
    int64_t b, h;
  };
  std::vector<Job> jobs;
  for (int64_t b = 0; b < p.batch; ++b) {
    for (int64_t h = 0; h < p.q_heads; ++h) jobs.push_back({StreamId::q, b, h});
    for (int64_t h = 0; h < p.kv_heads; ++h) jobs.push_back({StreamId::k, b, h});
    for (int64_t h = 0; h < p.kv_heads; ++h) jobs.push_back({StreamId::v, b, h});
  }
  parallel_for(static_cast<int64_t>(jobs.size()), [&](int64_t i) {
    const Job& j = jobs[i];
    Tensor& t = j.tensor == StreamId::q ? out.q : j.tensor == StreamId::k ? out.k : out.v;
    float* x = t.data() + t.offset(j.b, j.h);
    if (j.tensor == StreamId::v) fill_v(f, j.b, j.h, x);
    else fill_qk(f, j.tensor, j.b, j.h, x);
  });
  // FireQ §3.2.1: RoPE comes after the projection, so everything placed above is pre-RoPE.
  if (rope) apply_rope(out.k, key_positions(p), base);

  // The sink and local heads' query components, sized on the last query row (position kv_len − 1): its logits
  // over every key are base + a·gain, base from the data, gain from the component u turned by RoPE.
  const int64_t dim = p.head_dim, keys = p.kv_len;
  if (p.q_len > 0 && keys > 0) {
    const double inv_sqrt_d = 1.0 / std::sqrt(double(dim));
    const double sink_share = params.real("sink_share"), local_mass = params.real("local_mass");
    parallel_for(p.batch * p.q_heads, [&](int64_t bh) {
      const int64_t b = bh / p.q_heads, qh = bh % p.q_heads, kvh = p.kv_head_of(qh);
      const HeadKind kind = plan.kinds[qh];
      // Without RoPE nothing in q·k depends on the distance: a local head has no recent keys to prefer, and
      // attends as the data alone makes it.
      if (kind == HeadKind::diffuse || (kind == HeadKind::local && !rope)) return;
      const std::vector<double>& u = kind == HeadKind::sink ? plan.sink_direction[kvh] : plan.recent_direction[kvh];
      float* q = out.q.data() + out.q.offset(b, qh);
      const int64_t last = p.q_len - 1, position = keys - 1;
      const std::vector<double> q_last =
          rotated(std::vector<double>(q + last * dim, q + (last + 1) * dim), position, rope, base);
      const std::vector<double> u_last = rotated(u, position, rope, base);
      std::vector<double> logit(static_cast<size_t>(keys)), gain(static_cast<size_t>(keys));
      const float* k = out.k.data() + out.k.offset(b, kvh);
      for (int64_t n = 0; n < keys; ++n) {
        double s = 0.0, g = 0.0;
        for (int64_t c = 0; c < dim; ++c) {
          s += q_last[c] * double(k[n * dim + c]);
          g += u_last[c] * double(k[n * dim + c]);
        }
        logit[n] = s * inv_sqrt_d;
        gain[n] = g * inv_sqrt_d;
      }
      const double a = kind == HeadKind::sink
                           ? solve_amplitude(logit, gain, 0, std::min(plan.sink_tokens, keys), sink_share)
                           : solve_amplitude(logit, gain, std::max<int64_t>(0, keys - kRecentWindow), keys, local_mass);
      for (int64_t m = 0; m < p.q_len; ++m)
        for (int64_t c = 0; c < dim; ++c) q[m * dim + c] = static_cast<float>(double(q[m * dim + c]) + a * u[c]);
    });
  }
  if (rope) apply_rope(out.q, query_positions(p), base);
}

}  // namespace attnlab::data
