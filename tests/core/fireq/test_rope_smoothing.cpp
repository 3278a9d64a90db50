// FireQ §3.2.1: RPN's bound (Theorem 3.1) after RoPE at arbitrary positions, RPN's pre-/post-RoPE
// equivalence, q·kᵀ kept by folding the inverses into the query, CRS's effect on outlier channels, and
// the INT4 per-token error of K with and without the two-stage smoothing.
#include "core/error.h"
#include "core/fireq/rope_smoothing.h"
#include "core/fireq/token_int4.h"
#include "core/rope.h"
#include "tests/catch.h"
#include "tests/support/compare.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <vector>

namespace attnlab::fireq {
namespace ATTNLAB_FILE_LOCAL {

constexpr double kU = 0x1p-24;      // FP32 unit roundoff
constexpr double kBase = 10000.0;   // RoPE base (Llama 2); Llama 3 uses 500000, also swept below

// Keys of one head, pre-RoPE, (tokens, d): N(0, 1), plus `outliers` pairs given large per-channel
// offsets the way real keys carry them (a few channels with a persistent large value, App. E.2, Fig. 11).
// The outlier pairs are spread over high- and low-frequency positions; their indices are returned.
struct Keys {
  std::vector<float> k;
  std::vector<int64_t> outlier_pairs;
};
Keys make_keys(int64_t tokens, int64_t d, int outliers, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z(0.0, 1.0);
  Keys r{std::vector<float>(static_cast<size_t>(tokens * d)), {}};
  const int64_t h = d / 2;
  for (int o = 0; o < outliers; ++o) r.outlier_pairs.push_back((o * (h - 1)) / std::max(outliers - 1, 1));
  std::vector<double> mean_i(static_cast<size_t>(h), 0.0), mean_j(static_cast<size_t>(h), 0.0);
  for (size_t o = 0; o < r.outlier_pairs.size(); ++o) {
    mean_i[r.outlier_pairs[o]] = (o % 2 ? -1.0 : 1.0) * (20.0 + 4.0 * double(o));
    mean_j[r.outlier_pairs[o]] = 6.0;
  }
  for (int64_t n = 0; n < tokens; ++n)
    for (int64_t i = 0; i < h; ++i) {
      r.k[n * d + i] = static_cast<float>(mean_i[i] + z(rng));
      r.k[n * d + i + h] = static_cast<float>(mean_j[i] + z(rng));
    }
  return r;
}

std::vector<int64_t> random_positions(int64_t tokens, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> p(0, 100000);
  std::vector<int64_t> pos(static_cast<size_t>(tokens));
  for (int64_t& v : pos) v = p(rng);
  return pos;
}

std::vector<int64_t> positions_from_zero(int64_t tokens) {  // 0, 1, …, tokens − 1 (a prefill)
  std::vector<int64_t> pos(static_cast<size_t>(tokens));
  for (int64_t n = 0; n < tokens; ++n) pos[n] = n;
  return pos;
}

// RoPE on a (tokens, d) matrix through core/rope.h, wrapped as a (1, 1, tokens, d) tensor.
std::vector<float> rope(std::vector<float> x, int64_t tokens, int64_t d, const std::vector<int64_t>& pos,
                        bool inverse = false, double base = kBase) {
  Tensor t(Shape4{1, 1, tokens, d});
  std::copy(x.begin(), x.end(), t.data());
  if (inverse)
    apply_rope_inverse(t, pos, base);
  else
    apply_rope(t, pos, base);
  std::copy(t.data(), t.data() + t.size(), x.begin());
  return x;
}

std::vector<float> divided(std::vector<float> x, int64_t tokens, int64_t d, const PairScales& s) {
  divide_channels(x.data(), tokens, d, s);
  return x;
}
std::vector<float> multiplied(std::vector<float> x, int64_t tokens, int64_t d, const PairScales& s) {
  multiply_channels(x.data(), tokens, d, s);
  return x;
}

double pair_norm(const std::vector<float>& x, int64_t n, int64_t i, int64_t d) {
  return std::hypot(double(x[n * d + i]), double(x[n * d + i + d / 2]));
}

// ‖a − b‖_F / ‖b‖_F in double.
double rel_fro(const std::vector<double>& a, const std::vector<double>& b) {
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < a.size(); ++i) num += (a[i] - b[i]) * (a[i] - b[i]), den += b[i] * b[i];
  return std::sqrt(num / den);
}

// Q·Kᵀ (nq, nk) in double from float operands (nq, d), (nk, d).
std::vector<double> logits(const std::vector<float>& q, const std::vector<float>& k, int64_t nq, int64_t nk, int64_t d) {
  std::vector<double> s(static_cast<size_t>(nq * nk), 0.0);
  for (int64_t a = 0; a < nq; ++a)
    for (int64_t b = 0; b < nk; ++b)
      for (int64_t c = 0; c < d; ++c) s[a * nk + b] += double(q[a * d + c]) * k[b * d + c];
  return s;
}

TEST_CASE("Theorem 3.1: after RPN every post-RoPE pair norm is at most 1/α", "[fireq]") {
  // Float slack, relative to 1/α: s = α·max‖pair‖ rounded to float once (u), k/s rounded per component
  // (u), RoPE computed in double and rounded to float once per component (u; core/rope.h): about 3u in
  // all; we allow 8u. The pair that reaches the maximum has norm exactly 1/α before RoPE, so the bound
  // is tight and also checked from below.
  for (int64_t d : {64, 96, 128})
    for (int64_t tokens : {1, 37, 200})
      for (int outliers : {0, 4})
        for (double alpha : {0.25, 1.0, 8.0, 1000.0}) {
          INFO("d " << d << ", tokens " << tokens << ", outlier pairs " << outliers << ", alpha " << alpha);
          const Keys k = make_keys(tokens, d, outliers, uint64_t(d * 7 + tokens * 3 + outliers));
          const PairScales s = rpn_scales(k.k.data(), tokens, d, alpha);
          for (int64_t i = 0; i < d / 2; ++i) CHECK(s.per_channel[i] == s.per_channel[i + d / 2]);
          for (double base : {kBase, 500000.0}) {
            const std::vector<float> post =
                rope(divided(k.k, tokens, d, s), tokens, d, random_positions(tokens, uint64_t(tokens + d)), false, base);
            double worst = 0.0;
            for (int64_t n = 0; n < tokens; ++n)
              for (int64_t i = 0; i < d / 2; ++i) worst = std::max(worst, alpha * pair_norm(post, n, i, d));
            CHECK(worst <= 1.0 + 8 * kU);
            CHECK(worst >= 1.0 - 8 * kU);
          }
        }
}

TEST_CASE("RPN on post-RoPE data: same factors, and un-rotate/scale/re-rotate equals scaling pre-RoPE", "[fireq]") {
  // A pair-shared factor commutes with the rotation: (k/s)·R = (k·R)/s. So (a) the factors computed from
  // post-RoPE keys equal the pre-RoPE ones (pair norms are rotation invariant), and (b) the three ways of
  // applying them agree: paper (divide pre-RoPE, then RoPE), the variant's (un-rotate post-RoPE data,
  // divide, re-rotate), and plain division of the post-RoPE keys.
  // Tolerance per element, relative to its pair's norm: each path carries at most two RoPE passes (each
  // rounded to float once: u), a division (u) and a factor that differs by ≤ 2u between pre and post
  // (the RoPE rounding of the norm, then the factor's own rounding): < 8u in all; we allow 16u.
  for (int64_t d : {64, 96, 128})
    for (int64_t tokens : {5, 37, 200}) {
      INFO("d " << d << ", tokens " << tokens);
      const Keys k = make_keys(tokens, d, 4, uint64_t(d + tokens));
      const std::vector<int64_t> pos = random_positions(tokens, uint64_t(3 * tokens + d));
      const std::vector<float> k_post = rope(k.k, tokens, d, pos);
      const PairScales s_pre = rpn_scales(k.k.data(), tokens, d, 8.0);
      const PairScales s_post = rpn_scales(k_post.data(), tokens, d, 8.0);
      for (int64_t c = 0; c < d; ++c)
        CHECK(std::abs(double(s_post.per_channel[c]) - s_pre.per_channel[c]) <= 4 * kU * s_pre.per_channel[c]);

      const std::vector<float> paper = rope(divided(k.k, tokens, d, s_pre), tokens, d, pos);
      const std::vector<float> variant = rope(divided(rope(k_post, tokens, d, pos, true), tokens, d, s_post), tokens, d, pos);
      const std::vector<float> direct = divided(k_post, tokens, d, s_post);
      TensorF64 ref(Shape4{1, 1, tokens, d});
      Tensor out_paper(Shape4{1, 1, tokens, d}), out_variant(Shape4{1, 1, tokens, d});
      std::vector<double> atol(static_cast<size_t>(tokens * d));
      for (int64_t n = 0; n < tokens; ++n)
        for (int64_t c = 0; c < d; ++c) {
          const int64_t idx = n * d + c;
          ref.data()[idx] = direct[idx];
          out_paper.data()[idx] = paper[idx];
          out_variant.data()[idx] = variant[idx];
          atol[idx] = 16 * kU * pair_norm(direct, n, c % (d / 2), d);
        }
      CHECK_CLOSE(ref, out_paper, atol, 0.0);
      CHECK_CLOSE(ref, out_variant, atol, 0.0);
    }
}

TEST_CASE("folding the inverse scales into Q keeps q·kᵀ (RPN + CRS)", "[fireq]") {
  // (q·s)·(k/s)ᵀ = q·kᵀ term by term up to two float roundings (q·s and k/s): ≤ (2u + u²)·Σ|q_c·k_c|.
  // The dot products run in double; the result's float rounding is rtol = u; 2.5u covers the rest.
  for (int64_t d : {64, 96, 128}) {
    const int64_t nk = 53, nq = 11;
    const Keys k = make_keys(nk, d, 8, uint64_t(d));
    const std::vector<float> k_post = rope(k.k, nk, d, positions_from_zero(nk));
    const std::vector<float> q_post = rope(make_keys(nq, d, 0, uint64_t(d + 1)).k, nq, d, random_positions(nq, 9));
    const TwoStageScales s = two_stage_scales(k_post.data(), nk, d, SmoothingParams{});
    const std::vector<float> k_s = divided(k_post, nk, d, s.combined);
    const std::vector<float> q_s = multiplied(q_post, nq, d, s.combined);
    const std::vector<double> ref_logits = logits(q_post, k_post, nq, nk, d);
    const std::vector<double> got_logits = logits(q_s, k_s, nq, nk, d);
    TensorF64 ref(Shape4{1, 1, nq, nk});
    Tensor got(Shape4{1, 1, nq, nk});
    std::vector<double> atol(static_cast<size_t>(nq * nk));
    for (int64_t a = 0; a < nq; ++a)
      for (int64_t b = 0; b < nk; ++b) {
        double mag = 0.0;
        for (int64_t c = 0; c < d; ++c) mag += std::abs(double(q_post[a * d + c]) * k_post[b * d + c]);
        ref.data()[a * nk + b] = ref_logits[a * nk + b];
        got.data()[a * nk + b] = static_cast<float>(got_logits[a * nk + b]);
        atol[a * nk + b] = 2.5 * kU * mag;
      }
    INFO("d " << d);
    CHECK_CLOSE(ref, got, atol, kU);
  }
}

TEST_CASE("pair-distinct (CRS-like) factors applied pre-RoPE break q·kᵀ; pair-shared ones do not", "[fireq]") {
  // Why CRS must be post-RoPE: diag(a, b) does not commute with a rotation unless a = b.
  const int64_t d = 64, nk = 40, nq = 7;
  const std::vector<float> k_pre = make_keys(nk, d, 4, 1).k, q_pre = make_keys(nq, d, 0, 2).k;
  const std::vector<int64_t> pk = positions_from_zero(nk), pq = random_positions(nq, 3);
  const std::vector<double> ref = logits(rope(q_pre, nq, d, pq), rope(k_pre, nk, d, pk), nq, nk, d);
  PairScales shared{std::vector<float>(d, 1.0f)}, distinct{std::vector<float>(d, 1.0f)};
  for (int64_t i = 0; i < d / 2; i += 3) {
    shared.per_channel[i] = shared.per_channel[i + d / 2] = 10.0f;
    distinct.per_channel[i] = 10.0f, distinct.per_channel[i + d / 2] = 0.1f;
  }
  const auto pre_scaled = [&](const PairScales& s) {
    return logits(rope(multiplied(q_pre, nq, d, s), nq, d, pq), rope(divided(k_pre, nk, d, s), nk, d, pk), nq, nk, d);
  };
  const auto post_scaled = [&](const PairScales& s) {
    return logits(multiplied(rope(q_pre, nq, d, pq), nq, d, s), divided(rope(k_pre, nk, d, pk), nk, d, s), nq, nk, d);
  };
  const double shared_pre = rel_fro(pre_scaled(shared), ref), distinct_pre = rel_fro(pre_scaled(distinct), ref),
               distinct_post = rel_fro(post_scaled(distinct), ref);
  std::printf("[fireq] q·kᵀ rel. error: pair-shared pre-RoPE %.2e, pair-distinct pre-RoPE %.2e, post-RoPE %.2e\n",
              shared_pre, distinct_pre, distinct_post);
  CHECK(shared_pre < 1e-5);    // float rounding only
  CHECK(distinct_post < 1e-5);
  CHECK(distinct_pre > 0.1);   // the rotation mixes the two factors
}

TEST_CASE("outlier pairs, RPN and CRS factors on their own sets (§3.2.1, App. E.2)", "[fireq]") {
  const int64_t d = 128, tokens = 64;
  const Keys k = make_keys(tokens, d, 8, 77);
  const std::vector<float> k_post = rope(k.k, tokens, d, positions_from_zero(tokens));
  std::vector<int64_t> picked = select_outlier_pairs(k_post.data(), tokens, d, 8), injected = k.outlier_pairs;
  std::sort(picked.begin(), picked.end());
  CHECK(picked == injected);
  CHECK(select_outlier_pairs(k.k.data(), tokens, d, 8) == select_outlier_pairs(k_post.data(), tokens, d, 8));

  const TwoStageScales s = two_stage_scales(k_post.data(), tokens, d, SmoothingParams{});
  std::vector<bool> outlier(static_cast<size_t>(d / 2), false);
  for (int64_t i : s.outlier_pairs) outlier[i] = true;
  for (int64_t i = 0; i < d / 2; ++i)
    for (int64_t c : {i, i + d / 2}) {
      INFO("channel " << c);
      CHECK((outlier[i] ? s.rpn.per_channel[c] == 1.0f : s.crs.per_channel[c] == 1.0f));
      CHECK(s.combined.per_channel[c] == s.rpn.per_channel[c] * s.crs.per_channel[c]);
      if (outlier[i]) {  // t_c = β·maxₙ|k_cⁿ|: the channel's absmax becomes 1/β
        double m = 0.0;
        for (int64_t n = 0; n < tokens; ++n) m = std::max(m, std::abs(double(k_post[n * d + c])));
        CHECK(s.crs.per_channel[c] == static_cast<float>(8.0 * m));
      }
    }
  // top_k = 0: CRS does nothing and RPN takes every pair; top_k = d/2: RPN does nothing (E.2).
  CHECK(crs_scales(k_post.data(), tokens, d, 0, 8.0).per_channel == std::vector<float>(d, 1.0f));
  const TwoStageScales all = two_stage_scales(k_post.data(), tokens, d, SmoothingParams{int(d / 2), 8.0, 8.0});
  CHECK(all.rpn.per_channel == std::vector<float>(d, 1.0f));

  // An all-zero pair or channel keeps factor 1 (no division by zero).
  std::vector<float> z = k_post;
  for (int64_t n = 0; n < tokens; ++n) z[n * d + 5] = z[n * d + 5 + d / 2] = 0.0f;
  CHECK(rpn_scales(z.data(), tokens, d, 8.0).per_channel[5] == 1.0f);
  CHECK(crs_scales(z.data(), tokens, d, std::vector<int64_t>{5}, 8.0).per_channel[5 + d / 2] == 1.0f);
}

TEST_CASE("CRS lowers the max/mean channel ratio of keys with outlier channels", "[fireq]") {
  for (int64_t d : {64, 96, 128}) {
    const int64_t tokens = 256;
    const Keys k = make_keys(tokens, d, 8, uint64_t(d * 5));
    const std::vector<float> k_post = rope(k.k, tokens, d, positions_from_zero(tokens));
    const double before = channel_stats(k_post.data(), tokens, d).max_over_mean_ratio;
    const PairScales crs = crs_scales(k_post.data(), tokens, d, 8, 8.0);
    const double after_crs = channel_stats(divided(k_post, tokens, d, crs).data(), tokens, d).max_over_mean_ratio;
    const TwoStageScales two = two_stage_scales(k_post.data(), tokens, d, SmoothingParams{});
    const double after_two =
        channel_stats(divided(k_post, tokens, d, two.combined).data(), tokens, d).max_over_mean_ratio;
    std::printf("[fireq] d = %lld: channel max/mean ratio before %.2f, CRS %.2f, RPN+CRS %.2f\n",
                static_cast<long long>(d), before, after_crs, after_two);
    INFO("d " << d);
    CHECK(after_crs * 2 <= before);
    CHECK(after_two * 2 <= before);
  }
}

TEST_CASE("RPN + CRS lowers the INT4 per-token error of K on outlier keys", "[fireq]") {
  // K is quantized per token after smoothing and scaled back (K̂ = deq(quant(K/s))·s, which is what
  // Q·K̂ᵀ sees once s is folded into Q); we compare K̂ and Q·K̂ᵀ with the unsmoothed round trip.
  for (ScaleFormat f : {ScaleFormat::fp32, ScaleFormat::fp8_e4m3})
    for (int64_t d : {64, 128}) {
      const int64_t tokens = 256, nq = 16;
      const Keys k = make_keys(tokens, d, 8, uint64_t(d * 11));
      const std::vector<float> k_post = rope(k.k, tokens, d, positions_from_zero(tokens));
      const std::vector<float> q_post = rope(make_keys(nq, d, 0, 5).k, nq, d, random_positions(nq, 6));
      const auto round_trip = [&](const PairScales& s) {
        const std::vector<float> ks = divided(k_post, tokens, d, s);
        const TokenInt4 t = quantize_token_int4(ks.data(), tokens, d, f);
        std::vector<float> back(ks.size());
        dequantize_token_int4(t, back.data());
        return multiplied(back, tokens, d, s);
      };
      const std::vector<double> kd(k_post.begin(), k_post.end()), ref = logits(q_post, k_post, nq, tokens, d);
      const auto errors = [&](const PairScales& s) {
        const std::vector<float> kh = round_trip(s);
        return std::pair{rel_fro(std::vector<double>(kh.begin(), kh.end()), kd),
                         rel_fro(logits(q_post, kh, nq, tokens, d), ref)};
      };
      const auto [k_none, s_none] = errors(PairScales{std::vector<float>(d, 1.0f)});
      const auto [k_rpn, s_rpn] = errors(rpn_scales(k_post.data(), tokens, d, 8.0));
      const auto [k_two, s_two] = errors(two_stage_scales(k_post.data(), tokens, d, SmoothingParams{}).combined);
      std::printf("[fireq] INT4 K (%s scale, d = %lld) rel. error of K / of Q·Kᵀ: none %.4f / %.4f, "
                  "RPN %.4f / %.4f, RPN+CRS %.4f / %.4f\n",
                  f == ScaleFormat::fp32 ? "FP32" : "E4M3", static_cast<long long>(d), k_none, s_none, k_rpn,
                  s_rpn, k_two, s_two);
      // A clear reduction: 1.5×, below the 2.0–2.5× measured on these keys, so the check fails when the
      // smoothing stops helping, not on the seed.
      INFO("d " << d);
      CHECK(k_two * 1.5 <= k_none);
      CHECK(s_two * 1.5 <= s_none);
      CHECK(k_two < k_rpn);  // CRS adds to RPN on the outlier pairs
    }
}

TEST_CASE("RoPE smoothing rejects bad input with InputError", "[fireq]") {
  const int64_t d = 8, tokens = 3;
  const std::vector<float> k(tokens * d, 1.0f);
  std::vector<float> bad = k;
  bad[4] = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> inf = k;
  inf[2] = std::numeric_limits<float>::infinity();
  CHECK_THROWS_AS(rpn_scales(k.data(), tokens, d, 0.0), InputError);
  CHECK_THROWS_AS(rpn_scales(k.data(), tokens, d, -1.0), InputError);
  CHECK_THROWS_AS(rpn_scales(k.data(), tokens, d, std::nan("")), InputError);
  CHECK_THROWS_AS(crs_scales(k.data(), tokens, d, 2, 0.0), InputError);
  CHECK_THROWS_AS(crs_scales(k.data(), tokens, d, 2, -8.0), InputError);
  CHECK_THROWS_AS(crs_scales(k.data(), tokens, d, 5, 8.0), InputError);   // top_k > d/2
  CHECK_THROWS_AS(crs_scales(k.data(), tokens, d, -1, 8.0), InputError);  // top_k < 0
  CHECK_THROWS_AS(select_outlier_pairs(k.data(), tokens, d, 5), InputError);
  CHECK_THROWS_AS(rpn_scales(k.data(), 3, 7, 8.0), InputError);  // d odd
  CHECK_THROWS_AS(crs_scales(k.data(), 3, 7, 1, 8.0), InputError);
  CHECK_THROWS_AS(rpn_scales(k.data(), 0, d, 8.0), InputError);  // empty
  CHECK_THROWS_AS(rpn_scales(k.data(), tokens, 0, 8.0), InputError);
  CHECK_THROWS_AS(rpn_scales(bad.data(), tokens, d, 8.0), InputError);
  CHECK_THROWS_AS(crs_scales(inf.data(), tokens, d, 1, 8.0), InputError);
  CHECK_THROWS_AS(channel_stats(bad.data(), tokens, d), InputError);
  CHECK_THROWS_AS(rpn_scales(k.data(), tokens, d, 8.0, {4}), InputError);     // pair index ≥ d/2
  CHECK_THROWS_AS(rpn_scales(k.data(), tokens, d, 8.0, {1, 1}), InputError);  // listed twice
  CHECK_THROWS_AS(two_stage_scales(k.data(), tokens, d, SmoothingParams{5, 8.0, 8.0}), InputError);
  std::vector<float> x = k;
  CHECK_THROWS_AS(divide_channels(x.data(), tokens, d, PairScales{std::vector<float>(d - 1, 1.0f)}), InputError);
  CHECK_THROWS_AS(multiply_channels(x.data(), tokens, d, PairScales{std::vector<float>(d, 0.0f)}), InputError);
}

}  // namespace
}  // namespace attnlab::fireq
