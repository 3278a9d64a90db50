// Synthetic data generators (core/data/generators.h) and their portable random numbers
// (core/data/random.h): reproducibility (seed, thread count, pinned golden bits), moments, the
// llm_like structure (outlier key channels pre-RoPE, no value outliers, RoPE consistency) and the
// bad-input paths.
#include "core/data/generators.h"
#include "core/data/random.h"
#include "core/error.h"
#include "core/rope.h"
#include "tests/catch.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace attnlab::data {
namespace {

using nlohmann::json;

const std::vector<std::string> kNames = {"normal", "uniform", "student_t", "llm_like"};

Problem make_problem(int64_t batch, int64_t q_heads, int64_t kv_heads, int64_t q_len, int64_t kv_len,
                     int64_t head_dim) {
  Problem p;
  p.batch = batch;
  p.q_heads = q_heads;
  p.kv_heads = kv_heads;
  p.q_len = q_len;
  p.kv_len = kv_len;
  p.head_dim = head_dim;
  return p;
}

ParamValues params_of(const std::string& gen, const json& given = json::object()) {
  const GeneratorSpec* spec = find_generator(gen);
  REQUIRE(spec != nullptr);
  return ParamValues::parse(spec->params, given, "data");
}

QKV gen(const Problem& p, const std::string& name, uint64_t seed, const json& given = json::object()) {
  return generate(p, name, params_of(name, given), seed);
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() &&
         std::memcmp(a.data(), b.data(), static_cast<size_t>(a.size()) * sizeof(float)) == 0;
}
bool same_bytes(const QKV& a, const QKV& b) {
  return same_bytes(a.q, b.q) && same_bytes(a.k, b.k) && same_bytes(a.v, b.v);
}

// Sets ATTNLAB_THREADS for the scope and restores what was there.
class ThreadsEnv {
 public:
  explicit ThreadsEnv(const char* value) {
    if (const char* old = std::getenv("ATTNLAB_THREADS")) {
      had_ = true;
      old_ = old;
    }
    setenv("ATTNLAB_THREADS", value, 1);
  }
  ~ThreadsEnv() {
    if (had_)
      setenv("ATTNLAB_THREADS", old_.c_str(), 1);
    else
      unsetenv("ATTNLAB_THREADS");
  }

 private:
  bool had_ = false;
  std::string old_;
};

struct Moments {
  double mean = 0, sd = 0, excess_kurtosis = 0;
};
Moments moments(const std::vector<float>& x) {
  const double n = double(x.size());
  double m = 0;
  for (float v : x) m += v;
  m /= n;
  double m2 = 0, m4 = 0;
  for (float v : x) {
    const double d = double(v) - m;
    m2 += d * d;
    m4 += d * d * d * d;
  }
  m2 /= n;
  m4 /= n;
  return {m, std::sqrt(m2), m4 / (m2 * m2) - 3.0};
}

double tail_fraction(const std::vector<float>& x, double threshold) {
  return double(std::count_if(x.begin(), x.end(), [&](float v) { return std::fabs(v) > threshold; })) /
         double(x.size());
}

double median(std::vector<double> x) {
  std::nth_element(x.begin(), x.begin() + x.size() / 2, x.end());
  return x[x.size() / 2];
}

// max over tokens of |x| for every channel of head (b, h).
std::vector<double> channel_absmax(const Tensor& t, int64_t b, int64_t h) {
  std::vector<double> out(static_cast<size_t>(t.shape().dim), 0.0);
  for (int64_t n = 0; n < t.shape().len; ++n)
    for (int64_t c = 0; c < t.shape().dim; ++c)
      out[c] = std::max(out[c], std::fabs(double(t.at(b, h, n, c))));
  return out;
}

// The message of the InputError `fn` throws, or "" when it throws none.
template <class F>
std::string input_error(F&& fn) {
  try {
    fn();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST_CASE("generators: the registry declares four generators with valid defaults", "[data]") {
  std::vector<std::string> names;
  for (const auto& g : generator_registry()) {
    names.push_back(g.name);
    CHECK(!g.help.empty());
    CHECK(find_generator(g.name) == &g);
    // Every default passes its own row's validation.
    CHECK_NOTHROW(ParamValues::parse(g.params, ParamValues::defaults(g.params).to_json(), "data"));
  }
  CHECK(names == kNames);
  CHECK(find_generator("gaussian") == nullptr);
  const auto llm = ParamValues::defaults(find_generator("llm_like")->params);
  CHECK(llm.integer("outlier_channels") == 4);
  CHECK(llm.real("outlier_scale") == 10.0);
  CHECK(llm.real("outlier_spread") == 0.5);
  CHECK(llm.flag("query_outliers"));
  CHECK(llm.flag("rope"));
  CHECK(llm.real("rope_base") == 10000.0);
}

TEST_CASE("generators: same seed gives the same bytes, another seed different ones", "[data]") {
  const Problem p = make_problem(2, 4, 2, 16, 24, 32);
  for (const auto& name : kNames) {
    INFO(name);
    const QKV a = gen(p, name, 7), b = gen(p, name, 7), c = gen(p, name, 8);
    CHECK(a.q.shape() == p.q_shape());
    CHECK(a.k.shape() == p.kv_shape());
    CHECK(a.v.shape() == p.kv_shape());
    CHECK(same_bytes(a, b));
    CHECK(!same_bytes(a.q, c.q));
    CHECK(!same_bytes(a.k, c.k));
    CHECK(!same_bytes(a.v, c.v));
    // Heads and tensors draw from independent streams: no two heads are copies of each other.
    CHECK(std::memcmp(a.k.data(), a.k.data() + a.k.offset(0, 1), 32 * sizeof(float)) != 0);
    CHECK(std::memcmp(a.k.data(), a.v.data(), 32 * sizeof(float)) != 0);
  }
}

TEST_CASE("generators: the thread count does not change the bytes", "[data]") {
  const Problem p = make_problem(2, 8, 2, 33, 65, 64);
  for (const auto& name : kNames) {
    INFO(name);
    QKV one, two, five;
    {
      ThreadsEnv env("1");
      one = gen(p, name, 42);
    }
    {
      ThreadsEnv env("2");
      two = gen(p, name, 42);
    }
    {
      ThreadsEnv env("5");
      five = gen(p, name, 42);
    }
    CHECK(same_bytes(one, two));
    CHECK(same_bytes(one, five));
  }
}

TEST_CASE("generators: golden values pin the bits across machines", "[data]") {
  // These numbers were computed once with this implementation and pasted here. The generators use
  // only integer hashing, IEEE +, −, ×, ÷, sqrt and the portable log/exp/sincos of random.h, with
  // floating-point contraction off, so every machine and standard library must reproduce them bit
  // for bit. A failure here means data sets (and every result computed from a seed) changed: either
  // a portability bug or an intentional change of the generators that must be announced.
  const Problem p = make_problem(1, 2, 1, 4, 8, 16);

  const QKV n = gen(p, "normal", 1);
  const float normal_q[4] = {-0x1.f1a0c6p+0f, 0x1.400dc2p-1f, 0x1.bb92b4p-2f, -0x1.c38848p-5f};
  for (int i = 0; i < 4; ++i) CHECK(n.q.data()[i] == normal_q[i]);

  // student_t (ν = 3): exercises Marsaglia–Tsang, the normal draws, portable_log and portable_exp.
  const QKV t = gen(p, "student_t", 1);
  const float student_v[4] = {-0x1.a4ad86p-5f, -0x1.435aa8p-1f, -0x1.5cbc5cp+0f, 0x1.860594p-3f};
  for (int i = 0; i < 4; ++i) CHECK(t.v.data()[i] == student_v[i]);

  // llm_like defaults: key head 0 has outlier channels 1, 12, 13, 15 (magnitude ≈ 14.0); token 5
  // (position 5) after RoPE — channel 9 carries most of channel 1's outlier, rotated by 5·θ_1 ≈ π/2.
  const QKV l = gen(p, "llm_like", 1);
  const auto plan = llm_like_outlier_plan(p, params_of("llm_like"), 1);
  REQUIRE(plan.key[0].channels.size() == 4);
  CHECK(plan.key[0].channels[0].index == 1);
  CHECK(plan.key[0].channels[1].index == 12);
  CHECK(plan.key[0].channels[2].index == 13);
  CHECK(plan.key[0].channels[3].index == 15);
  const float llm_k[8] = {0x1.5dcc8ep-1f, -0x1.f813fap+2f, 0x1.3ea8bcp-2f, 0x1.86226cp+0f,
                          -0x1.c2accp+3f, -0x1.eaec14p+3f, -0x1.ff5826p-2f, -0x1.07cd4ep-1f};
  for (int c = 0; c < 8; ++c) CHECK(l.k.at(0, 0, 5, 8 + c) == llm_k[c]);
}

TEST_CASE("generators: normal has the requested mean and standard deviation", "[data]") {
  // 2·256·128 = 131072 samples per tensor. Standard errors: mean σ/√n, standard deviation ≈ σ/√(2n);
  // tolerances are 5 standard errors.
  const Problem p = make_problem(1, 2, 2, 256, 256, 128);
  for (double mean : {0.0, 3.0}) {
    for (double sd : {1.0, 2.5}) {
      const QKV d = gen(p, "normal", 5, {{"mean", mean}, {"std", sd}});
      for (const Tensor* t : {&d.q, &d.k, &d.v}) {
        const double n = double(t->size());
        const Moments m = moments(t->values());
        INFO("mean " << mean << ", std " << sd);
        CHECK(std::fabs(m.mean - mean) <= 5 * sd / std::sqrt(n));
        CHECK(std::fabs(m.sd - sd) <= 5 * sd / std::sqrt(2 * n));
        CHECK(std::fabs(m.excess_kurtosis) <= 5 * std::sqrt(24 / n));
      }
      // Independent streams: q and k are uncorrelated (|r| ≤ 5/√n).
      double r = 0;
      for (int64_t i = 0; i < d.q.size(); ++i) r += (d.q.data()[i] - mean) * (d.k.data()[i] - mean);
      r /= double(d.q.size()) * sd * sd;
      CHECK(std::fabs(r) <= 5 / std::sqrt(double(d.q.size())));
    }
  }
}

TEST_CASE("generators: uniform stays within [low, high] and fills it evenly", "[data]") {
  const Problem p = make_problem(1, 2, 2, 256, 256, 128);
  const double low = -2.0, high = 5.0;
  const QKV d = gen(p, "uniform", 3, {{"low", low}, {"high", high}});
  for (const Tensor* t : {&d.q, &d.k, &d.v}) {
    const auto [lo, hi] = std::minmax_element(t->values().begin(), t->values().end());
    CHECK(*lo >= low);
    CHECK(*hi <= high);
    CHECK(*lo < low + 0.01);  // 131072 draws reach within 7/131072·(a few) of both ends
    CHECK(*hi > high - 0.01);
    const double n = double(t->size()), sd = (high - low) / std::sqrt(12.0);
    const Moments m = moments(t->values());
    CHECK(std::fabs(m.mean - (low + high) / 2) <= 5 * sd / std::sqrt(n));
    CHECK(std::fabs(m.sd - sd) <= 0.01 * sd);  // se of the sd of a uniform ≈ 0.45·σ/√n ≈ 0.0012σ
  }
}

TEST_CASE("generators: student_t has heavy tails", "[data]") {
  const Problem p = make_problem(1, 2, 2, 256, 256, 128);  // 131072 samples per tensor
  const std::vector<float> normal = gen(p, "normal", 2).k.values();
  const std::vector<float> t3 = gen(p, "student_t", 2, {{"nu", 3.0}}).k.values();
  // P(|Z| > 4) = 6.3e-5, P(|t_3| > 4) = 0.028: the tail fraction separates them by orders of magnitude.
  CHECK(tail_fraction(normal, 4.0) < 0.001);
  CHECK(tail_fraction(t3, 4.0) > 0.02);
  CHECK(tail_fraction(t3, 4.0) < 0.036);
  // t_3 has infinite kurtosis; the sample excess kurtosis is far above the normal's 0 ± 0.014.
  CHECK(moments(t3).excess_kurtosis > 3.0);
  // The median of |t_ν| is the 0.75 quantile: 0.7649 for ν = 3, 1 for ν = 1 (Cauchy, which goes
  // through the shape < 1 boost of the gamma sampler). Standard errors 0.003 and 0.005; 5 of them.
  auto median_abs = [](const std::vector<float>& x) {
    std::vector<double> a(x.size());
    for (size_t i = 0; i < x.size(); ++i) a[i] = std::fabs(double(x[i]));
    return median(a);
  };
  CHECK(std::fabs(median_abs(t3) - 0.76489) <= 0.016);
  CHECK(std::fabs(median_abs(gen(p, "student_t", 2, {{"nu", 1.0}}).q.values()) - 1.0) <= 0.025);
  // ν = 100 is nearly normal: sd √(100/98) = 1.0102, scale multiplies it.
  const Moments m100 = moments(gen(p, "student_t", 2, {{"nu", 100.0}, {"scale", 2.0}}).v.values());
  CHECK(std::fabs(m100.sd - 2.0 * 1.0102) <= 0.02);
}

TEST_CASE("random: Marsaglia–Tsang gamma has the right mean and variance", "[data]") {
  // Gamma(a, 1): mean a, variance a. 10^5 draws; tolerances 5 standard errors (the variance's se uses
  // the fourth central moment 3a² + 6a).
  for (double a : {0.5, 1.0, 1.5, 7.0}) {
    Rng rng(stream_key(9, 99, 0, 0));
    const int n = 100000;
    double s = 0, s2 = 0;
    std::vector<double> x(n);
    for (auto& v : x) v = rng.gamma(a);
    for (double v : x) s += v;
    const double mean = s / n;
    for (double v : x) s2 += (v - mean) * (v - mean);
    const double var = s2 / n;
    INFO("shape " << a);
    CHECK(std::fabs(mean - a) <= 5 * std::sqrt(a / n));
    CHECK(std::fabs(var - a) <= 5 * std::sqrt((3 * a * a + 6 * a - a * a) / n));
  }
}

TEST_CASE("random: the portable elementary functions agree with the C library", "[data]") {
  Rng rng(stream_key(1, 2, 3, 4));
  double worst_log = 0, worst_exp = 0, worst_sin = 0;
  for (int i = 0; i < 20000; ++i) {
    // log over the whole positive range, and densely near 1.
    const double x = std::ldexp(1.0 + rng.uniform(), int(rng.below(2000)) - 1000);
    const double y = 1.0 + (rng.uniform() - 0.5) * 1e-3;
    for (double v : {x, y})
      worst_log = std::max(worst_log, std::fabs(portable_log(v) - std::log(v)) /
                                          std::max(std::fabs(std::log(v)), 1e-300));
    const double e = rng.uniform(-700.0, 700.0);
    worst_exp = std::max(worst_exp, std::fabs(portable_exp(e) - std::exp(e)) / std::exp(e));
    const double a = rng.uniform(-2e6, 2e6) * (i % 2 ? 1.0 : 1e-6);
    double s = 0, c = 0;
    portable_sincos(a, s, c);
    worst_sin = std::max({worst_sin, std::fabs(s - std::sin(a)), std::fabs(c - std::cos(a))});
  }
  // A few ulp (2.2e-16 each) of the libm value.
  CHECK(worst_log <= 1e-15);
  CHECK(worst_exp <= 1e-15);
  CHECK(worst_sin <= 1e-15);
  CHECK(portable_log(1.0) == 0.0);
  CHECK(portable_exp(0.0) == 1.0);
  double s = 1, c = 0;
  portable_sincos(0.0, s, c);
  CHECK((s == 0.0 && c == 1.0));
}

TEST_CASE("generators: llm_like puts large key channels pre-RoPE and none in values", "[data]") {
  const int64_t d = 64, kv_heads = 4;
  const Problem p = make_problem(2, 8, kv_heads, 512, 1024, d);
  const double scale = 10.0, spread = 0.5;
  const json given = {{"rope", false}, {"outlier_scale", scale}, {"outlier_spread", spread}};
  const QKV x = gen(p, "llm_like", 17, given);
  const OutlierPlan plan = llm_like_outlier_plan(p, params_of("llm_like", given), 17);

  REQUIRE(plan.key.size() == size_t(kv_heads));
  REQUIRE(plan.query.size() == size_t(p.q_heads));
  std::vector<double> magnitudes;
  for (int64_t h = 0; h < kv_heads; ++h) {
    const HeadOutliers& ho = plan.key[h];
    REQUIRE(ho.channels.size() == 4);
    CHECK(ho.magnitude >= scale * (1 - spread));
    CHECK(ho.magnitude <= scale * (1 + spread));
    magnitudes.push_back(ho.magnitude);
    std::vector<int64_t> pairs;
    for (const auto& oc : ho.channels) pairs.push_back(oc.index % (d / 2));
    std::sort(pairs.begin(), pairs.end());
    CHECK(std::adjacent_find(pairs.begin(), pairs.end()) == pairs.end());  // one per RoPE pair

    for (int64_t b = 0; b < p.batch; ++b) {
      INFO("KV head " << h << ", batch " << b);
      const auto k = channel_absmax(x.k, b, h), v = channel_absmax(x.v, b, h);
      const double k_median = median(k), v_median = median(v);
      // Outlier channels: |x| ≥ M·(offset + 0.5·z_max) ≥ 5·(0.6 + 1.5) against a median channel's
      // ≈ 3.3 — at least (1 − spread)·outlier_scale/2 × the median, the Fig. 4 picture.
      std::vector<bool> is_outlier(d, false);
      for (const auto& oc : ho.channels) {
        is_outlier[oc.index] = true;
        CHECK(k[oc.index] >= (1 - spread) * scale / 2 * k_median);
      }
      // The other key channels and all value channels are plain N(0, 1) maxima: within 3× the median.
      for (int64_t c = 0; c < d; ++c)
        if (!is_outlier[c]) CHECK(k[c] < 3 * k_median);
      CHECK(*std::max_element(v.begin(), v.end()) < 3 * v_median);
    }
  }
  // Heads differ in range (TurboAttention's head priority needs something to rank).
  CHECK(*std::max_element(magnitudes.begin(), magnitudes.end()) >
        1.2 * *std::min_element(magnitudes.begin(), magnitudes.end()));

  // Query heads share their KV head's channels, at sqrt of its magnitude.
  for (int64_t qh = 0; qh < p.q_heads; ++qh) {
    const HeadOutliers& kh = plan.key[p.kv_head_of(qh)];
    const HeadOutliers& qo = plan.query[qh];
    REQUIRE(qo.channels.size() == kh.channels.size());
    CHECK(qo.magnitude == std::sqrt(kh.magnitude));
    const auto q = channel_absmax(x.q, 0, qh);
    const double q_median = median(q);
    for (size_t j = 0; j < qo.channels.size(); ++j) {
      CHECK(qo.channels[j].index == kh.channels[j].index);
      CHECK(q[qo.channels[j].index] >= std::sqrt((1 - spread) * scale) / 2 * q_median);
    }
  }

  // Without query outliers the queries are plain N(0, 1).
  const QKV plain_q = gen(p, "llm_like", 17, {{"rope", false}, {"query_outliers", false}});
  const auto q = channel_absmax(plain_q.q, 0, 0);
  CHECK(*std::max_element(q.begin(), q.end()) < 3 * median(q));
  // Outliers change nothing but their own channels: the rest of k is the same draw either way.
  const QKV none = gen(p, "llm_like", 17, {{"rope", false}, {"outlier_channels", 0}});
  bool rest_same = true;
  for (int64_t n = 0; n < p.kv_len; ++n)
    for (int64_t c = 0; c < d; ++c) {
      bool outlier = false;
      for (const auto& oc : plan.key[1].channels) outlier = outlier || oc.index == c;
      if (!outlier) rest_same = rest_same && none.k.at(1, 1, n, c) == x.k.at(1, 1, n, c);
    }
  CHECK(rest_same);
  CHECK(same_bytes(none.v, x.v));
}

TEST_CASE("generators: llm_like clamps outlier_channels to one per RoPE pair", "[data]") {
  const Problem p = make_problem(1, 2, 2, 4, 8, 16);
  const OutlierPlan plan = llm_like_outlier_plan(p, params_of("llm_like", {{"outlier_channels", 64}}), 3);
  for (const auto& ho : plan.key) {
    REQUIRE(ho.channels.size() == 8);  // head_dim / 2
    for (int64_t i = 0; i < 8; ++i)    // exactly one of i, i + 8
      CHECK(std::count_if(ho.channels.begin(), ho.channels.end(),
                          [&](const OutlierChannel& oc) { return oc.index % 8 == i; }) == 1);
  }
  const OutlierPlan none = llm_like_outlier_plan(p, params_of("llm_like", {{"outlier_channels", 0}}), 3);
  for (const auto& ho : none.key) CHECK(ho.channels.empty());
}

TEST_CASE("generators: llm_like with RoPE is RoPE applied to the rope = false data", "[data]") {
  for (bool decode : {false, true}) {
    const int64_t d = 32;
    Problem p = make_problem(1, 4, 2, decode ? 1 : 20, 48, d);
    if (decode) p.phase = Phase::decode;
    const QKV with = gen(p, "llm_like", 23, {{"rope_base", 500000.0}});
    const QKV without = gen(p, "llm_like", 23, {{"rope", false}, {"rope_base", 500000.0}});
    CHECK(same_bytes(with.v, without.v));

    // Positions: keys 0 … kv_len − 1, queries the last q_len of them.
    CHECK(key_positions(p).front() == 0);
    CHECK(key_positions(p).back() == p.kv_len - 1);
    CHECK(query_positions(p).front() == p.kv_len - p.q_len);
    CHECK(query_positions(p).back() == p.kv_len - 1);

    // Same bits as apply_rope on the rope = false tensors at those positions.
    Tensor q = without.q, k = without.k;
    apply_rope(q, query_positions(p), 500000.0);
    apply_rope(k, key_positions(p), 500000.0);
    CHECK(same_bytes(q, with.q));
    CHECK(same_bytes(k, with.k));

    // And the q·k products match RoPE evaluated independently here (std::pow, std::cos, std::sin) at
    // query position kv_len − q_len + i and key position j: one float rounding per rotated element,
    // so within 1e-6·|q||k|.
    auto rotated = [&](const Tensor& t, int64_t h, int64_t n, int64_t pos) {
      std::vector<double> r(static_cast<size_t>(d));
      for (int64_t i = 0; i < d / 2; ++i) {
        const double th = double(pos) * std::pow(500000.0, -2.0 * double(i) / double(d));
        const double a = t.at(0, h, n, i), b = t.at(0, h, n, i + d / 2);
        r[i] = a * std::cos(th) - b * std::sin(th);
        r[i + d / 2] = b * std::cos(th) + a * std::sin(th);
      }
      return r;
    };
    double worst = 0;
    for (int64_t qh = 0; qh < p.q_heads; ++qh) {
      const int64_t kh = p.kv_head_of(qh);
      for (int64_t i = 0; i < p.q_len; ++i) {
        const auto qr = rotated(without.q, qh, i, p.kv_len - p.q_len + i);
        for (int64_t j = 0; j < p.kv_len; ++j) {
          const auto kr = rotated(without.k, kh, j, j);
          double ref = 0, got = 0, qn = 0, kn = 0;
          for (int64_t c = 0; c < d; ++c) {
            ref += qr[c] * kr[c];
            got += double(with.q.at(0, qh, i, c)) * double(with.k.at(0, kh, j, c));
            qn += qr[c] * qr[c];
            kn += kr[c] * kr[c];
          }
          worst = std::max(worst, std::fabs(got - ref) / std::sqrt(qn * kn));
        }
      }
    }
    INFO("decode " << decode);
    CHECK(worst <= 1e-6);
  }
}

TEST_CASE("generators: bad parameters are InputErrors naming the field", "[data]") {
  auto parse_error = [](const std::string& name, const json& given) {
    return input_error([&] { params_of(name, given); });
  };
  CHECK(parse_error("student_t", {{"nu", 0.5}}).find("data.nu") != std::string::npos);
  CHECK(parse_error("student_t", {{"nu", 101}}).find("data.nu") != std::string::npos);
  CHECK(parse_error("normal", {{"std", -1.0}}).find("data.std") != std::string::npos);
  CHECK(parse_error("normal", {{"sigma", 1.0}}).find("data.sigma") != std::string::npos);
  CHECK(parse_error("llm_like", {{"outlier_channels", 65}}).find("data.outlier_channels") !=
        std::string::npos);
  CHECK(parse_error("llm_like", {{"outlier_channels", 2.5}}).find("data.outlier_channels") !=
        std::string::npos);
  CHECK(parse_error("llm_like", {{"outlier_spread", 1.5}}).find("data.outlier_spread") != std::string::npos);
  CHECK(parse_error("llm_like", {{"rope", "yes"}}).find("data.rope") != std::string::npos);
  CHECK(parse_error("llm_like", {{"rope_base", 1.0}}).find("data.rope_base") != std::string::npos);

  // low < high is checked when generating (the rows cannot express it).
  const Problem p = make_problem(1, 1, 1, 4, 4, 16);
  for (const json& given : {json{{"low", 1.0}, {"high", 1.0}}, json{{"low", 2.0}, {"high", -2.0}}}) {
    const std::string msg = input_error([&] { gen(p, "uniform", 1, given); });
    CHECK(msg.find("data.high") != std::string::npos);
    CHECK(msg.find("greater than low") != std::string::npos);
  }
  // An unknown name: the caller checks find_generator, and generate itself refuses too.
  CHECK(find_generator("llama") == nullptr);
  CHECK(input_error([&] { generate(p, "llama", ParamValues{}, 1); }).find("data.generator") !=
        std::string::npos);
}

}  // namespace
}  // namespace attnlab::data
