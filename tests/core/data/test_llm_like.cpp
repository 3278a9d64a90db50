// The llm_like generator (core/data/llm_like.h): each property its parameters claim, measured on the data it
// makes — outlier channels in the low-frequency band and none in V, the head kinds in their counts, sink heads'
// share on the first token, local heads' mass on the last 64 keys, the values' common component — and each
// property gone when its parameter switches it off.
#include "core/data/attention_stats.h"
#include "core/data/generators.h"
#include "core/data/llm_like.h"
#include "core/error.h"
#include "core/rope.h"
#include "tests/catch.h"
#include "tests/support/variant_cases.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace attnlab::data {
namespace ATTNLAB_FILE_LOCAL {

using nlohmann::json;

using test::problem;

ParamValues llm_params(const json& given = json::object()) { return test::generator_params("llm_like", given); }

QKV llm(const Problem& p, uint64_t seed, const json& given = json::object()) {
  return test::generated(p, "llm_like", seed, given);
}

// max over tokens of |x| for every channel of head (b, h).
std::vector<double> channel_absmax(const Tensor& t, int64_t b, int64_t h) {
  std::vector<double> out(static_cast<size_t>(t.shape().dim), 0.0);
  for (int64_t n = 0; n < t.shape().len; ++n)
    for (int64_t c = 0; c < t.shape().dim; ++c) out[c] = std::max(out[c], std::fabs(double(t.at(b, h, n, c))));
  return out;
}

double median(std::vector<double> x) {
  std::nth_element(x.begin(), x.begin() + x.size() / 2, x.end());
  return x[x.size() / 2];
}

std::string input_error(const Problem& p, const json& given) {
  try {
    llm(p, 1, given);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST_CASE("llm_like: the defaults are the cited ones", "[data]") {
  const ParamValues d = ParamValues::defaults(find_generator("llm_like")->params);
  CHECK(d.integer("outlier_channels") == 8);  // FireQ App. E.1
  CHECK(d.real("outlier_band") == 0.25);
  CHECK(d.real("outlier_noise") == 0.2);
  CHECK(d.real("sink_heads") == 0.5);
  CHECK(d.real("local_heads") == 0.25);
  CHECK(d.real("rope_base") == 500000.0);  // Llama 3
  for (const ParamSpec& row : find_generator("llm_like")->params) {
    INFO(row.name);
    CHECK(!row.help.empty());
  }
}

TEST_CASE("llm_like: large key channels in the low-frequency band, in queries too, none in values", "[data]") {
  const int64_t d = 64, half = d / 2, kv_heads = 4;
  const Problem p = problem(2, 8, kv_heads, 256, 1024, d);
  const double scale = 10.0, spread = 0.5;
  // Sinks and local heads off: the keys are N(0, 1) plus the outliers, whose size this checks.
  const json given = {{"rope", false}, {"sink_heads", 0.0}, {"local_heads", 0.0}};
  const QKV x = llm(p, 17, given);
  const LlmLikePlan plan = llm_like_plan(p, llm_params(given), 17);
  const int64_t band = 8;  // 0.25 of the 32 pairs: pairs 24 … 31, the lowest frequencies
  for (int64_t h = 0; h < kv_heads; ++h) {
    const HeadOutliers& ho = plan.key[h];
    REQUIRE(ho.channels.size() == 8);
    CHECK(ho.magnitude >= scale * (1 - spread));
    CHECK(ho.magnitude <= scale * (1 + spread));
    std::vector<int64_t> pairs;
    for (const auto& oc : ho.channels) pairs.push_back(oc.index % half);
    std::sort(pairs.begin(), pairs.end());
    CHECK(std::adjacent_find(pairs.begin(), pairs.end()) == pairs.end());  // one per RoPE pair
    CHECK(pairs.front() >= half - band);                                   // all in the band
    for (int64_t b = 0; b < p.batch; ++b) {
      INFO("KV head " << h << ", batch " << b);
      const auto k = channel_absmax(x.k, b, h), v = channel_absmax(x.v, b, h);
      const double k_median = median(k), v_median = median(v);
      std::vector<bool> is_outlier(d, false);
      // |x| ≥ M·(offset − 0.2·|z|) over 1024 tokens: the largest reaches M·(0.6 + 0.2·3) ≥ 6 against a normal
      // channel's maximum ≈ 3.3: at least (1 − spread)·scale/3 = 1.7× the median.
      for (const auto& oc : ho.channels) {
        is_outlier[oc.index] = true;
        CHECK(k[oc.index] >= (1 - spread) * scale / 3 * k_median);
      }
      for (int64_t c = 0; c < d; ++c)
        if (!is_outlier[c]) CHECK(k[c] < 3 * k_median);
      // Values: N(0, 1)·t plus a common mean of ≈ 0.66 per channel: no channel beyond 2× the median.
      CHECK(*std::max_element(v.begin(), v.end()) < 2 * v_median);
    }
  }
  // Every token keeps each outlier channel's sign (offset ≥ 0.6 against noise 0.2·z: a flip is a 3σ event):
  // over 2 × 1024 tokens per channel, at most 1% flips.
  int64_t flips = 0, total = 0;
  for (int64_t h = 0; h < kv_heads; ++h)
    for (const auto& oc : plan.key[h].channels)
      for (int64_t b = 0; b < p.batch; ++b)
        for (int64_t n = 0; n < p.kv_len; ++n, ++total) flips += (x.k.at(b, h, n, oc.index) * oc.sign < 0);
  CHECK(double(flips) / double(total) < 0.01);
  // Query heads carry their KV head's channels at sqrt of its magnitude.
  for (int64_t qh = 0; qh < p.q_heads; ++qh) {
    const HeadOutliers& kh = plan.key[p.kv_head_of(qh)];
    REQUIRE(plan.query[qh].channels.size() == kh.channels.size());
    CHECK(plan.query[qh].magnitude == std::sqrt(kh.magnitude));
    for (size_t j = 0; j < kh.channels.size(); ++j) CHECK(plan.query[qh].channels[j].index == kh.channels[j].index);
  }
}

TEST_CASE("llm_like: outlier_band 1 draws from every pair, the draws of the generator before the band", "[data]") {
  // Before the band existed, seed 1 on this problem gave key head 0 the channels 1, 12, 13, 15 (a golden value
  // of test_generators.cpp then): the band's Fisher–Yates over all pairs makes the same draws.
  Problem p = problem(1, 2, 1, 4, 8, 16);
  const LlmLikePlan plan = llm_like_plan(p, llm_params({{"outlier_band", 1.0}, {"outlier_channels", 4}}), 1);
  REQUIRE(plan.key[0].channels.size() == 4);
  CHECK(plan.key[0].channels[0].index == 1);
  CHECK(plan.key[0].channels[1].index == 12);
  CHECK(plan.key[0].channels[2].index == 13);
  CHECK(plan.key[0].channels[3].index == 15);
  // outlier_channels is clamped to the band's pairs: 0.25 of 8 pairs is 2.
  CHECK(llm_like_plan(p, llm_params({{"outlier_channels", 64}}), 1).key[0].channels.size() == 2);
  CHECK(llm_like_plan(p, llm_params({{"outlier_channels", 64}, {"outlier_band", 1.0}}), 1).key[0].channels.size() == 8);
}

TEST_CASE("llm_like: every new property off is the generator before them, bit for bit", "[data]") {
  // The golden keys the generator made before the band, the sinks, the local heads and the values' mean existed
  // (4 outlier channels of noise 0.5 anywhere, RoPE base 10000; test_generators.cpp pinned them then): a lesson
  // can show the earlier data, and what each property changes, from the same seed.
  const Problem p = problem(1, 2, 1, 4, 8, 16);
  const json before = {{"outlier_band", 1.0}, {"outlier_noise", 0.5}, {"outlier_channels", 4}, {"sink_heads", 0.0},
                       {"local_heads", 0.0}, {"value_mean", 0.0},      {"rope_base", 10000.0}};
  const QKV l = llm(p, 1, before);
  const float llm_k[8] = {0x1.5dcc8ep-1f, -0x1.f813fap+2f, 0x1.3ea8bcp-2f, 0x1.86226cp+0f,
                          -0x1.c2accp+3f, -0x1.eaec14p+3f, -0x1.ff5826p-2f, -0x1.07cd4ep-1f};
  for (int c = 0; c < 8; ++c) CHECK(l.k.at(0, 0, 5, 8 + c) == llm_k[c]);
}

TEST_CASE("llm_like: the head kinds come in the stated counts", "[data]") {
  const Problem p = problem(1, 32, 8, 1, 16, 32);
  auto count = [](const LlmLikePlan& plan, HeadKind k) { return std::count(plan.kinds.begin(), plan.kinds.end(), k); };
  const LlmLikePlan d = llm_like_plan(p, llm_params(), 5);
  CHECK(count(d, HeadKind::sink) == 16);
  CHECK(count(d, HeadKind::local) == 8);
  CHECK(count(d, HeadKind::diffuse) == 8);
  const LlmLikePlan other = llm_like_plan(p, llm_params({{"sink_heads", 0.3}, {"local_heads", 0.7}}), 5);
  CHECK(count(other, HeadKind::sink) == 10);  // round(9.6)
  CHECK(count(other, HeadKind::local) == 22);  // round(22.4), capped at the 22 heads left
  CHECK(count(other, HeadKind::diffuse) == 0);
  // The placement depends on the seed, the counts do not.
  CHECK(llm_like_plan(p, llm_params(), 6).kinds != d.kinds);
  CHECK(count(llm_like_plan(p, llm_params(), 6), HeadKind::sink) == 16);
  // Shares over 1 are refused, naming the field.
  const std::string msg = input_error(p, {{"sink_heads", 0.8}, {"local_heads", 0.3}});
  CHECK(msg.find("data.local_heads") != std::string::npos);
  CHECK(msg.find("over 1") != std::string::npos);
}

TEST_CASE("llm_like: sink heads put sink_share on the first key, local heads local_mass on the last 64", "[data]") {
  // The query component is solved on the last query row to 60 halvings; what is stored is rounded to float,
  // which moves a logit by ~1e-7·|q||k|/√d ≈ 1e-5: the shares hold to 1e-3.
  for (const bool decode : {true, false}) {
    for (const uint64_t seed : {1, 2, 3}) {
      const Problem p = problem(2, 8, 2, decode ? 1 : 512, 2048, 128);
      const json given = {{"sink_share", 0.6}, {"local_mass", 0.4}};
      const QKV x = llm(p, seed, given);
      const LlmLikePlan plan = llm_like_plan(p, llm_params(given), seed);
      const Probes stats = attention_statistics(p, x);
      const auto& sink = stats.at("attn.sink_share").values;
      const auto& recent = stats.at("attn.recent_mass").values;
      for (int64_t b = 0; b < p.batch; ++b)
        for (int64_t h = 0; h < p.q_heads; ++h) {
          const size_t i = size_t(b * p.q_heads + h);
          INFO("decode " << decode << ", seed " << seed << ", b " << b << ", head " << h << " ("
                         << head_kind_name(plan.kinds[h]) << ")");
          switch (plan.kinds[h]) {
            case HeadKind::sink: CHECK(std::fabs(sink[i] - 0.6) < 1e-3); break;
            case HeadKind::local: CHECK(std::fabs(recent[i] - 0.4) < 1e-3); break;
            case HeadKind::diffuse:
              CHECK(sink[i] < kSinkHeadThreshold);
              CHECK(recent[i] < 0.2);
              break;
          }
          if (plan.kinds[h] != HeadKind::sink) CHECK(sink[i] < kSinkHeadThreshold);
        }
    }
  }
}

TEST_CASE("llm_like: each property is gone when its parameter switches it off", "[data]") {
  const Problem p = problem(1, 8, 2, 1, 1024, 64);
  const json off = {{"sink_heads", 0.0}, {"local_heads", 0.0}, {"value_mean", 0.0}, {"outlier_channels", 0}};
  const LlmLikePlan plan = llm_like_plan(p, llm_params(off), 4);
  CHECK(plan.sink_tokens == 0);
  CHECK(plan.sink_direction.empty());
  CHECK(plan.recent_direction.empty());
  CHECK(std::all_of(plan.kinds.begin(), plan.kinds.end(), [](HeadKind k) { return k == HeadKind::diffuse; }));
  for (const auto& mu : plan.value_mean) CHECK(std::all_of(mu.begin(), mu.end(), [](double m) { return m == 0.0; }));
  for (const auto& ho : plan.key) CHECK(ho.channels.empty());
  const Probes stats = attention_statistics(p, llm(p, 4, off));
  for (double s : stats.at("attn.sink_share").values) CHECK(s < kSinkHeadThreshold);
  for (double r : stats.at("attn.recent_mass").values) CHECK(r < 0.3);
}

TEST_CASE("llm_like: without RoPE local heads get no component, and no query grows without bound", "[data]") {
  // RoPE's decay is what makes a local head; without it the solver could only push the query along a direction
  // every key shares. A share beyond reach stops at the solver's cap (64 units), never at values FP16 cannot hold.
  const Problem p = problem(1, 8, 2, 1, 512, 64);
  const QKV with = llm(p, 6), without = llm(p, 6, {{"rope", false}});
  const LlmLikePlan plan = llm_like_plan(p, llm_params(), 6);
  const Probes stats = attention_statistics(p, without);
  for (int64_t h = 0; h < p.q_heads; ++h) {
    INFO("head " << h << " (" << head_kind_name(plan.kinds[h]) << ")");
    if (plan.kinds[h] == HeadKind::local) CHECK(stats.at("attn.recent_mass").values[size_t(h)] < 0.3);
  }
  for (const QKV* x : {&with, &without})
    for (float v : x->q.values()) REQUIRE(std::fabs(v) < 100.0f);
  // An unreachable share (0.99 on the sink when the sink key is no better aligned than the rest: no sink pairs
  // left once every pair holds an outlier) stays finite too.
  const Problem tiny = problem(1, 2, 1, 1, 256, 16);
  const QKV t = llm(tiny, 2, {{"outlier_band", 1.0}, {"outlier_channels", 8}, {"sink_share", 0.99}});
  for (float v : t.q.values()) REQUIRE(std::fabs(v) < 100.0f);
}

TEST_CASE("llm_like: values share a common component of cosine value_mean", "[data]") {
  // cos(v_i, v_j) over token pairs ≈ |μ|²/(|μ|² + E|t·z|²) = value_mean in expectation; a head's |μ|² is ρ²·χ²_d,
  // whose relative spread √(2/d) = 0.18 at d 64 moves one head's cosine by ±c(1 − c)·0.18 ≈ ±0.04: the mean over
  // 8 KV heads × 3 seeds is within 0.02 (2.5σ), and each head within 0.15.
  for (const double c : {0.0, 0.3, 0.6}) {
    double sum = 0;
    int heads = 0;
    for (const uint64_t seed : {1, 2, 3}) {
      const Problem p = problem(1, 8, 8, 1, 512, 64);
      const QKV x = llm(p, seed, {{"value_mean", c}, {"sink_heads", 0.0}});
      for (int64_t h = 0; h < p.kv_heads; ++h) {
        double cos_sum = 0;
        int pairs = 0;
        for (int64_t i = 0; i + 1 < p.kv_len; i += 2) {
          double dot = 0, ni = 0, nj = 0;
          for (int64_t ch = 0; ch < p.head_dim; ++ch) {
            const double a = x.v.at(0, h, i, ch), b = x.v.at(0, h, i + 1, ch);
            dot += a * b, ni += a * a, nj += b * b;
          }
          cos_sum += dot / std::sqrt(ni * nj);
          ++pairs;
        }
        const double head_cos = cos_sum / pairs;
        INFO("value_mean " << c << ", seed " << seed << ", head " << h);
        CHECK(std::fabs(head_cos - c) < 0.15);
        sum += head_cos;
        ++heads;
      }
    }
    INFO("value_mean " << c);
    CHECK(std::fabs(sum / heads - c) < 0.02);
  }
}

TEST_CASE("llm_like: sink tokens' values are scaled by sink_value_scale", "[data]") {
  const Problem p = problem(1, 2, 1, 1, 64, 32);
  const QKV full = llm(p, 9, {{"sink_value_scale", 1.0}}), small = llm(p, 9, {{"sink_value_scale", 0.25}});
  for (int64_t c = 0; c < p.head_dim; ++c) CHECK(small.v.at(0, 0, 0, c) == static_cast<float>(0.25 * double(full.v.at(0, 0, 0, c))) );
  for (int64_t c = 0; c < p.head_dim; ++c) CHECK(small.v.at(0, 0, 1, c) == full.v.at(0, 0, 1, c));
}

TEST_CASE("llm_like: RoPE on keys is apply_rope on the rope = false keys", "[data]") {
  // K does not depend on the query components, so its rotation is checkable bit for bit; Q is (with sinks and
  // local heads off, so nothing is solved in either space).
  const Problem p = problem(1, 4, 2, 20, 48, 32);
  const QKV with = llm(p, 23), without = llm(p, 23, {{"rope", false}});
  Tensor k = without.k;
  apply_rope(k, key_positions(p), 500000.0);
  CHECK(std::equal(k.data(), k.data() + k.size(), with.k.data()));
  CHECK(std::equal(with.v.data(), with.v.data() + with.v.size(), without.v.data()));
  const json plain = {{"sink_heads", 0.0}, {"local_heads", 0.0}};
  const QKV qw = llm(p, 23, plain), qo = llm(p, 23, {{"sink_heads", 0.0}, {"local_heads", 0.0}, {"rope", false}});
  Tensor q = qo.q;
  apply_rope(q, query_positions(p), 500000.0);
  CHECK(std::equal(q.data(), q.data() + q.size(), qw.q.data()));
}

}  // namespace
}  // namespace attnlab::data
