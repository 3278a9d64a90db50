// naive and flash2 references against the FP64 ground truth, over the shape sweep of the skeleton
// issue: d ∈ {32, 64, 96, 128}, N ∈ {1, 7, 64, 100, 257, 1024}, causal on/off, MHA and GQA (H_kv = H_q/4),
// prefill and decode.
//
// Tolerances, per output element o_i = Σⱼ pⱼ vⱼ (row r, channel c), with a_i = Σⱼ pⱼ |vⱼ| computed in FP64
// (attention of Q, K, |V|: the largest the output can be moved by relative errors in pⱼ or vⱼ):
//   naive (all FP32, u = 2⁻²⁴): the scores carry summation error ≤ γ_d·|S|ₘₐₓ, exp adds a few ulp, the
//     normalizing sum and PV add γ_N each, so |o − o*| ≤ 2(d + N)·u·(1 + |S|ₘₐₓ)·a_i + u·|o*|. This is a
//     worst-case bound (errors are linear in the number of terms, not √n), so it never fails by chance.
//   flash2 (FP16 storage, u₁₆ = 2⁻¹¹): compared with "simple16" — the FP64 attention of the FP16-rounded
//     Q, K, V, with O rounded to FP16 — which carries exactly the storage rounding. flash2 adds only the
//     rounding of P̃ to FP16 before P̃V (≤ u₁₆·a_i), its FP32 arithmetic (bounded as for naive), and at most one
//     FP16 ulp more in the stored O (≤ u₁₆·|o*|). So |o − o*| ≤ |simple16 − o*| + u₁₆·a_i + u₁₆·|o*| + FP32 term.
//   Over the whole output, flash2's rel_l2 must stay within 2× simple16's (FlashAttention's own test rule).
#include "core/ground_truth.h"
#include "core/metrics.h"
#include "core/registry.h"
#include "core/data/generators.h"
#include "core/formats/round.h"
#include "tests/catch.h"

#include <nlohmann/json.hpp>
#include "tests/support/compare.h"
#include "tests/support/sweep.h"

#include <fmt/format.h>

#include <cmath>

namespace attnlab {
namespace ATTNLAB_FILE_LOCAL {

constexpr double kU32 = 0x1p-24, kU16 = 0x1p-11;

struct Case {
  int64_t d, n;
  bool causal, gqa;
  Phase phase;
};

Problem problem_for(const Case& c) {
  Problem p;
  p.batch = 2;
  p.q_heads = 4;
  p.kv_heads = c.gqa ? 1 : 4;
  p.head_dim = c.d;
  p.kv_len = c.n;
  p.q_len = c.phase == Phase::decode ? 1 : c.n;
  p.causal = c.causal;
  p.phase = c.phase;
  return p;
}

QKV normal_inputs(const Problem& p, uint64_t seed) {
  const auto* gen = data::find_generator("normal");
  return data::generate(p, "normal", ParamValues::defaults(gen->params), seed);
}

Tensor absolute(const Tensor& t) {
  Tensor a = t;
  for (float& x : a.values()) x = std::abs(x);
  return a;
}

QKV rounded_fp16(const QKV& in) {
  QKV r = in;
  for (Tensor* t : {&r.q, &r.k, &r.v}) formats::round_fp16_inplace(t->data(), t->size());
  return r;
}

double max_abs_score(const Problem& p, const QKV& in) {
  double m = 0;
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t h = 0; h < p.q_heads; ++h) {
      const RowMatrix<double> S =
          in.q.head(b, h).cast<double>() * in.k.head(b, p.kv_head_of(h)).cast<double>().transpose() * p.scale();
      m = std::max(m, S.cwiseAbs().maxCoeff());
    }
  return m;
}

std::vector<Case> sweep(Phase phase) {
  std::vector<Case> cases;
  for (int64_t d : {32, 64, 96, 128})
    for (int64_t n : test::sweep_lengths({1, 7, 64, 100, 257, 1024}))
      for (bool causal : {false, true})
        for (bool gqa : {false, true}) cases.push_back({d, n, causal, gqa, phase});
  return cases;
}

ReferenceOutput run_variant(const std::string& id, const Problem& p, const QKV& in) {
  const VariantSpec& v = *find_variant(id);
  return v.reference(p, in, ParamValues::defaults(v.params), ProbeRequest{});
}

void check_naive(Phase phase) {
  for (const Case& c : sweep(phase)) {
    const Problem p = problem_for(c);
    const QKV in = normal_inputs(p, 100 + c.n + c.d);
    const TensorF64 truth = attention_fp64(p, in);
    const TensorF64 a = attention_fp64(p, {in.q, in.k, absolute(in.v)});
    const double s_max = max_abs_score(p, in);
    std::vector<double> atol(a.size());
    for (int64_t i = 0; i < a.size(); ++i)
      atol[i] = 2.0 * double(c.d + c.n) * kU32 * (1.0 + s_max) * a.data()[i] + 1e-30;
    const Tensor out = run_variant("naive", p, in).o;
    INFO(fmt::format("d={} N={} causal={} gqa={} phase={}", c.d, c.n, c.causal, c.gqa, to_string(phase)));
    CHECK_CLOSE(truth, out, atol, kU32);
  }
}

void check_flash2(Phase phase) {
  for (const Case& c : sweep(phase)) {
    const Problem p = problem_for(c);
    const QKV in = normal_inputs(p, 200 + c.n + c.d);
    const TensorF64 truth = attention_fp64(p, in);
    const TensorF64 a = attention_fp64(p, {in.q, in.k, absolute(in.v)});
    // simple16: FP16 storage rounding only, everything else exact; O stored in FP16.
    Tensor simple16(p.q_shape());
    const TensorF64 s16 = attention_fp64(p, rounded_fp16(in));
    for (int64_t i = 0; i < s16.size(); ++i) simple16.data()[i] = float(s16.data()[i]);
    formats::round_fp16_inplace(simple16.data(), simple16.size());
    const double s_max = max_abs_score(p, in);
    std::vector<double> atol(a.size());
    for (int64_t i = 0; i < a.size(); ++i) {
      const double storage = std::abs(double(simple16.data()[i]) - truth.data()[i]);
      const double fp32 = 2.0 * double(c.d + c.n) * kU32 * (1.0 + s_max) * a.data()[i];
      atol[i] = storage + kU16 * a.data()[i] + fp32 + 1e-30;
    }
    const Tensor out = run_variant("flash2", p, in).o;
    INFO(fmt::format("d={} N={} causal={} gqa={} phase={}", c.d, c.n, c.causal, c.gqa, to_string(phase)));
    CHECK_CLOSE(truth, out, atol, kU16);
    const Metrics mine = compare_to_truth(out, truth), simple = compare_to_truth(simple16, truth);
    INFO(fmt::format("rel_l2 flash2 {:.3e} simple16 {:.3e}", mine.rel_l2, simple.rel_l2));
    CHECK(mine.rel_l2 <= 2.0 * simple.rel_l2 + 1e-7);
  }
}

TEST_CASE("naive matches FP64 within FP32 rounding, prefill sweep", "[variants][naive]") { check_naive(Phase::prefill); }
TEST_CASE("naive matches FP64 within FP32 rounding, decode sweep", "[variants][naive]") { check_naive(Phase::decode); }
TEST_CASE("flash2 matches FP64 within FP16 storage rounding, prefill sweep", "[variants][flash2]") {
  check_flash2(Phase::prefill);
}
TEST_CASE("flash2 matches FP64 within FP16 storage rounding, decode sweep", "[variants][flash2]") {
  check_flash2(Phase::decode);
}

TEST_CASE("flash2 result does not depend on its tile sizes beyond FP32 reassociation", "[variants][flash2]") {
  Problem p;
  p.batch = 1, p.q_heads = 2, p.kv_heads = 1, p.q_len = 257, p.kv_len = 300, p.head_dim = 64, p.causal = true;
  const QKV in = normal_inputs(p, 5);
  const VariantSpec& v = *find_variant("flash2");
  ParamValues a = ParamValues::defaults(v.params), b = a;
  b.set(v.params, "block_r", 16, "test");
  b.set(v.params, "block_c", 32, "test");
  const Tensor oa = v.reference(p, in, a, {}).o, ob = v.reference(p, in, b, {}).o;
  TensorF64 ref(oa.shape());
  for (int64_t i = 0; i < oa.size(); ++i) ref.data()[i] = oa.data()[i];
  // Different tilings round P̃ against different running maxima, so they agree to a few FP16 ulps.
  CHECK_CLOSE(ref, ob, 1e-3, 4 * kU16);
}

TEST_CASE("rows that see no key produce zeros (causal, more queries than keys)", "[variants]") {
  Problem p;
  p.batch = 1, p.q_heads = 1, p.kv_heads = 1, p.q_len = 10, p.kv_len = 4, p.head_dim = 32, p.causal = true;
  REQUIRE(p.visible_keys(0) == 0);
  REQUIRE(p.visible_keys(5) == 0);
  REQUIRE(p.visible_keys(6) == 1);
  REQUIRE(p.visible_keys(9) == 4);
  const QKV in = normal_inputs(p, 9);
  for (const char* id : {"naive", "flash2"}) {
    const Tensor o = run_variant(id, p, in).o;
    for (int64_t n = 0; n < 6; ++n)
      for (int64_t c = 0; c < 32; ++c) CHECK(o.at(0, 0, n, c) == 0.0f);
    CHECK(o.at(0, 0, 6, 0) == Approx(in.v.at(0, 0, 0, 0)).epsilon(1e-3));  // one key: o = v₀ (FP16 for flash2)
  }
}

}  // namespace
}  // namespace attnlab
