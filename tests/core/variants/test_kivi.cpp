// kivi (KIVI cache + flash2 arithmetic) against FP64 and against flash2.
//
// Yardsticks.
//   truth   attention_fp64 of the inputs as given.
//   simple  "quantize, then float": attention_fp64 of Q and of the K̂, V̂ that quant::kivi_quantize /
//           kivi_dequantize make of K and V (the same bits, group, residual). It carries exactly the
//           cache's error and nothing else.
// Assertions and why they are tight.
//   1. rel_l2(kivi) ≤ kFactor·rel_l2(simple) + kAbs. kivi = flash2's arithmetic on (fp16(Q), K̂, V̂); K̂ and
//      V̂ are FP16 values already, so kivi adds to simple only what flash2 adds to its FP16 inputs: the FP16
//      storage of Q (2⁻¹¹ relative per element), P̃ rounded to FP16 and O stored in FP16 (≤ 2⁻¹¹ each), and
//      FP32 arithmetic. Those are ~10⁻³ relative, while the cache error wherever anything is quantized
//      (N ≥ 100 here) is ≥ 0.06 at 4 bits and ≥ 0.4 at 2 bits (measured), so kFactor = 1.05 (5% of the
//      cache error; measured ≤ 1.0014) plus kAbs = 4·2⁻¹¹ ≈ 2·10⁻³ (the FP16 terms, for the short N where
//      nothing is quantized and both errors are at FP16 level).
//   2. Per element, kivi against attention_fp64(Q, K̂, V̂) within flash2's own bound (the rule of
//      test_forward_references.cpp): |o − o*| ≤ |simple16 − o*| + 2⁻¹¹·a_i + 2(d + N)·2⁻²⁴·(1 + |S|ₘₐₓ)·a_i
//      + 2⁻¹¹·|o*|, with simple16 = attention_fp64(fp16(Q), K̂, V̂) stored in FP16 and a_i = Σⱼ pⱼ|v̂ⱼ|.
//      A wrong dequantization, a wrong split, a wrong KV head would exceed it by orders of magnitude.
//   3. bits = 8 ≈ flash2, at the 8-bit level. An 8-bit asymmetric code errs uniformly within half a step
//      Δ = (max − min)/255 of its group (RMS Δ/√12); for a group of 32 roughly Gaussian values the range is
//      ≈ 4.1σ, so the RMS error is ≈ 4.6·10⁻³σ, while FP16's RMS rounding error of the same values is
//      ≈ 2.1·10⁻⁴σ (2⁻¹¹ relative, less on average over a binade). Both enter the output linearly, so the
//      8-bit cache costs ≈ 22× flash2's FP16 storage error: we require 2× ≤ rel_l2(kivi8) / rel_l2(flash2)
//      ≤ 32× (measured 9–15×). The lower end fails if nothing is quantized, the upper if the width is
//      not 8 (4 bits would be ≈ 17× coarser again).
//   4. With residual ≥ kv_len nothing is quantized, the cache is fp16(K), fp16(V), and the loop is
//      flash2's: the output must equal flash2's bit for bit.
// Phases: decode (KIVI's phase) and prefill (a query chunk attending to an already-compressed cache).
#include "core/ground_truth.h"
#include "core/metrics.h"
#include "core/data/generators.h"
#include "core/formats/half.h"
#include "core/formats/round.h"
#include "core/quant/kivi.h"
#include "core/variants/variants.h"
#include "tests/catch.h"
#include "tests/support/variant_cases.h"
#include "tests/support/compare.h"
#include "tests/support/input_error.h"
#include "tests/support/sweep.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <string>

namespace attnlab {
namespace ATTNLAB_FILE_LOCAL {

constexpr double kU32 = 0x1p-24, kU16 = 0x1p-11;
constexpr double kFactor = 1.05, kAbs = 4 * kU16;

Problem problem_for(int64_t d, int64_t n, bool causal, bool gqa, Phase phase) {
  return test::sweep_problem(d, n, causal, gqa, phase);
}

QKV inputs(const Problem& p, const std::string& gen, uint64_t seed) { return test::generated(p, gen, seed); }

ParamValues params(test::ParamSettings set) { return test::params_of(variants::kivi(), set); }

ReferenceOutput run(const Problem& p, const QKV& in, const ParamValues& pv) {
  return test::run_checked(variants::kivi(), p, in, pv);
}

// The inputs with K and V replaced by what the KIVI cache holds (dequantized FP16 values).
QKV cached(const Problem& p, const QKV& in, const ParamValues& pv) {
  QKV c = in;
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t h = 0; h < p.kv_heads; ++h) {
      const quant::KiviCache kc =
          quant::kivi_quantize(in.k.head(b, h).data(), in.v.head(b, h).data(), p.kv_len, p.head_dim,
                               int(pv.integer("bits")), pv.integer("group"), pv.integer("residual"));
      quant::kivi_dequantize(kc, c.k.head(b, h).data(), c.v.head(b, h).data());
    }
  return c;
}

using test::to_float;

Tensor absolute(const Tensor& t) {
  Tensor a = t;
  for (float& x : a.values()) x = std::abs(x);
  return a;
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

// Assertion 2: kivi within flash2's per-element bound of attention_fp64(Q, K̂, V̂).
void check_against_cache(const Problem& p, const QKV& c, const Tensor& out) {
  const TensorF64 ref = attention_fp64(p, c);
  const TensorF64 a = attention_fp64(p, {c.q, c.k, absolute(c.v)});
  QKV c16 = c;
  formats::round_fp16_inplace(c16.q.data(), c16.q.size());
  Tensor s16 = to_float(attention_fp64(p, c16));
  formats::round_fp16_inplace(s16.data(), s16.size());
  const double s_max = max_abs_score(p, c);
  std::vector<double> atol(static_cast<size_t>(a.size()));
  for (int64_t i = 0; i < a.size(); ++i)
    atol[i] = std::abs(double(s16.data()[i]) - ref.data()[i]) + kU16 * a.data()[i] +
              2.0 * double(p.head_dim + p.kv_len) * kU32 * (1.0 + s_max) * a.data()[i] + 1e-30;
  CHECK_CLOSE(ref, out, atol, kU16);
}

void check_sweep(Phase phase, const std::string& gen) {
  double worst = 0;
  int cases = 0;
  for (int64_t d : {64, 96, 128})
    for (int64_t n : test::sweep_lengths({1, 7, 100, 257, 1024}))
      for (bool causal : {false, true})
        for (bool gqa : {false, true}) {
          // Prefill at N = 1024: one case per generator (normal: causal GQA; llm_like: full MHA), at
          // d = 128, without the per-element check (each FP64 attention there has 2·4·1024² scores).
          if (phase == Phase::prefill && n == 1024 && (d != 128 || causal != gqa || causal != (gen == "normal")))
            continue;
          const Problem p = problem_for(d, n, causal, gqa, phase);
          const QKV in = inputs(p, gen, 500 + n + d);
          // R = 32 so that every N ≥ 100 quantizes most of its tokens; 2 bits (KIVI's headline width),
          // 4 bits on every other case.
          const ParamValues pv = params({{"residual", 32}, {"bits", (cases++ % 2) ? 4 : 2}});
          const Tensor out = run(p, in, pv).o;
          const TensorF64 truth = attention_fp64(p, in);
          const QKV c = cached(p, in, pv);
          const Metrics mine = compare_to_truth(out, truth);
          const Metrics simple = compare_to_truth(to_float(attention_fp64(p, c)), truth);
          INFO(fmt::format("{} {} d={} N={} causal={} gqa={} bits={}: rel_l2 kivi {:.3e} simple {:.3e}", gen,
                           to_string(phase), d, n, causal, gqa, pv.integer("bits"), mine.rel_l2, simple.rel_l2));
          CHECK(mine.rel_l2 <= kFactor * simple.rel_l2 + kAbs);
          if (simple.rel_l2 > 1e-2) worst = std::max(worst, mine.rel_l2 / simple.rel_l2);
          if (!(phase == Phase::prefill && n == 1024)) check_against_cache(p, c, out);  // 3 more FP64 runs
        }
  WARN(fmt::format("kivi {} {}: worst rel_l2 / simple = {:.4f} (where simple > 1e-2)", gen, to_string(phase), worst));
}

TEST_CASE("kivi decode within 1.05x of quantize-then-FP64 and within flash2's bound of the cache, sweep",
          "[variants][kivi]") {
  check_sweep(Phase::decode, "normal");
  check_sweep(Phase::decode, "llm_like");
}

TEST_CASE("kivi prefill (a chunk over a compressed cache) within 1.05x of quantize-then-FP64, sweep",
          "[variants][kivi]") {
  check_sweep(Phase::prefill, "normal");
  check_sweep(Phase::prefill, "llm_like");
}

TEST_CASE("kivi with an 8-bit cache is flash2 plus an 8-bit-sized error", "[variants][kivi]") {
  double lo = 1e9, hi = 0;
  for (Phase phase : {Phase::prefill, Phase::decode})
    for (const char* gen : {"normal", "llm_like"})
      for (int64_t n : {100, 257}) {
        const Problem p = problem_for(128, n, true, true, phase);
        const QKV in = inputs(p, gen, 40 + n);
        const TensorF64 truth = attention_fp64(p, in);
        const VariantSpec f = variants::flash2();
        const Tensor o_flash = f.reference(p, in, ParamValues::defaults(f.params), {}).o;
        const Tensor o_kivi = run(p, in, params({{"bits", 8}, {"residual", 0}, {"group", 32}})).o;
        const double e_flash = compare_to_truth(o_flash, truth).rel_l2, e_kivi = compare_to_truth(o_kivi, truth).rel_l2;
        INFO(fmt::format("{} {} N={}: rel_l2 kivi8 {:.3e} flash2 {:.3e}", gen, to_string(phase), n, e_kivi, e_flash));
        CHECK(e_kivi >= 2.0 * e_flash);
        CHECK(e_kivi <= 32.0 * e_flash);
        lo = std::min(lo, e_kivi / e_flash), hi = std::max(hi, e_kivi / e_flash);
      }
  WARN(fmt::format("kivi 8-bit: rel_l2 / flash2's in [{:.1f}, {:.1f}]", lo, hi));
}

TEST_CASE("kivi: with the whole sequence in the residual window the output is flash2's, bit for bit",
          "[variants][kivi]") {
  const VariantSpec f = variants::flash2();
  for (Phase phase : {Phase::prefill, Phase::decode})
    for (int64_t n : {7, 257})
      for (bool causal : {false, true})
        for (bool gqa : {false, true}) {
          const Problem p = problem_for(64, n, causal, gqa, phase);
          const QKV in = inputs(p, "llm_like", 60 + n);
          const Tensor o_flash = f.reference(p, in, ParamValues::defaults(f.params), {}).o;
          const ReferenceOutput k = run(p, in, params({{"residual", n}}));  // R = N ≥ kv_len: all FP16
          CHECK(k.probes.at("kivi.split").values == std::vector<double>{0.0, double(n)});
          int64_t differ = 0;
          for (int64_t i = 0; i < o_flash.size(); ++i) differ += o_flash.data()[i] != k.o.data()[i];
          INFO(fmt::format("{} N={} causal={} gqa={}", to_string(phase), n, causal, gqa));
          CHECK(differ == 0);
        }
}

TEST_CASE("kivi: the residual window is exact FP16, the quantized part is not", "[variants][kivi]") {
  // Decode with R = 64, g = 32, N = 200: the first ⌊136/32⌋·32 = 128 tokens are quantized, the last 72
  // stay FP16. A query that attends (almost) only to one key of the residual window gets fp16(v) of it;
  // one that attends to a quantized key gets its 2-bit value, visibly different.
  Problem p = problem_for(64, 200, false, false, Phase::decode);
  p.batch = 1, p.q_heads = 1, p.kv_heads = 1;
  QKV in = inputs(p, "normal", 3);
  const ParamValues pv = params({{"residual", 64}, {"group", 32}});
  for (int64_t target : {150, 20}) {
    QKV x = in;
    // q = 1000·k_target / |k_target|²·√d makes the target's score 1000 above the rest (≈ a one-hot row).
    const auto kt = x.k.head(0, 0).row(target);
    const double norm2 = kt.cast<double>().squaredNorm();
    for (int64_t c = 0; c < p.head_dim; ++c)
      x.q.at(0, 0, 0, c) = float(1000.0 * double(kt[c]) / norm2 * std::sqrt(double(p.head_dim)));
    const ReferenceOutput out = run(p, x, pv);
    CHECK(out.probes.at("kivi.split").values == std::vector<double>{128.0, 72.0});
    int64_t exact = 0;
    for (int64_t c = 0; c < p.head_dim; ++c)
      exact += out.o.at(0, 0, 0, c) == formats::round_fp16(x.v.at(0, 0, target, c));
    INFO(fmt::format("target {}: {} of {} channels equal fp16(v)", target, exact, p.head_dim));
    if (target >= 128)
      CHECK(exact == p.head_dim);
    else
      CHECK(exact < p.head_dim / 2);
  }
}

TEST_CASE("kivi: probes have the documented shapes and the cache its documented size", "[variants][kivi]") {
  Problem p = problem_for(96, 300, true, true, Phase::decode);  // GQA: one KV head per sequence
  const QKV in = inputs(p, "llm_like", 9);
  for (int bits : {2, 4, 8}) {
    const int64_t g = 32, R = 40;
    const ReferenceOutput out = run(p, in, params({{"bits", bits}, {"group", g}, {"residual", R}}));
    const int64_t nq = (300 - R) / g * g;  // 256 quantized tokens, 44 in FP16
    const int64_t kv = p.batch * p.kv_heads, d = 96;
    const int64_t k_groups = nq / g * d, v_groups = nq * ((d + g - 1) / g);
    CHECK(out.probes.at("scales.k").shape == std::vector<int64_t>{p.batch, p.kv_heads, k_groups});
    CHECK(out.probes.at("scales.v").shape == std::vector<int64_t>{p.batch, p.kv_heads, v_groups});
    for (const char* name : {"channels.k.min", "channels.k.max", "channels.v.min", "channels.v.max"})
      CHECK(out.probes.at(name).shape == std::vector<int64_t>{p.batch, p.kv_heads, d});
    CHECK(out.probes.at("channels.k.max").values[5] == in.k.head(0, 0).col(5).maxCoeff());
    const int64_t codes = 2 * ((nq * d * bits + 7) / 8), params_bytes = 4 * (k_groups + v_groups);
    const int64_t residual = 2 * 2 * (300 - nq) * d;
    CHECK(out.kv_cache_bytes == kv * (codes + params_bytes + residual));
    CHECK(out.probes.at("kv_cache.bytes").labels == std::vector<std::string>{"codes", "scales_zeros", "residual"});
    CHECK(out.probes.at("kv_cache.bytes").values ==
          std::vector<double>{double(kv * codes), double(kv * params_bytes), double(kv * residual)});
    const ProbeArray& hbm = out.probes.at("hbm_bytes");
    CHECK(hbm.labels == std::vector<std::string>{"q", "k", "v", "o", "lse", "kv_cache"});
    // Decode: one row block, reading each KV head's whole cache once for all its query heads.
    CHECK(hbm.values[5] == double(out.kv_cache_bytes));
    CHECK(out.probes.at("clamped").labels == std::vector<std::string>{"k", "v"});
    CHECK(out.probes.at("trace.m").shape == std::vector<int64_t>{(300 + 63) / 64, 1});
  }
  // Prefill, causal: row block i reads the cache through its last tile only.
  Problem pre = problem_for(64, 256, true, false, Phase::prefill);
  pre.batch = 1, pre.q_heads = 1, pre.kv_heads = 1;
  const QKV pin = inputs(pre, "normal", 2);
  const ReferenceOutput out = run(pre, pin, params({{"residual", 0}, {"block_r", 128}, {"block_c", 64}}));
  // Row block 0 (rows 0–127) reads tokens 0–127, block 1 all 256: 3/2 of one full read, for this
  // all-quantized cache whose bytes are proportional to the tokens read (g = 32 divides 128).
  CHECK(out.probes.at("hbm_bytes").values[5] == Approx(1.5 * double(out.kv_cache_bytes)).epsilon(1e-12));
}

TEST_CASE("kivi rejects bad parameters with the parameter's name", "[variants][kivi]") {
  const Problem p = problem_for(64, 100, false, true, Phase::decode);
  const VariantSpec v = variants::kivi();
  CHECK(test::starts(test::input_error([&] { v.validate(p, params({{"bits", 3}}), "variants[2]"); }), "variants[2].bits"));
  CHECK(test::starts(test::input_error([&] { params({{"group", 0}}); }), "kivi.group"));
  CHECK(test::starts(test::input_error([&] { params({{"residual", -1}}); }), "kivi.residual"));
  CHECK(test::starts(test::input_error([&] { params({{"bits", 16}}); }), "kivi.bits"));
  // The reference itself refuses a width the quantizer does not have, naming it too.
  const QKV in = inputs(p, "normal", 1);
  CHECK(test::starts(test::input_error([&] { v.reference(p, in, params({{"bits", 3}, {"residual", 0}}), {}); }),
                     "kivi.bits"));
}

}  // namespace
}  // namespace attnlab
