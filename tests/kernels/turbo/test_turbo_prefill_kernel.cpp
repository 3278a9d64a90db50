// TurboAttention's prefill on the GPU (kernels/turbo/turbo_prefill_sm90.cu after the pre-pass of
// kernels/turbo/turbo_cache_write.cu) against the `turbo` reference (Alg. 1, SAS), on the GPU. Skipped, with the
// reason printed, where there is no usable GPU. Seeds are fixed and printed.
//
// What may differ, and by how much (SAS path): the integer products are exact, S, P̃, s_P, the P codes and
// O's two roundings per tile are the reference's operations in its order (the kernel's head comment), so
// only ℓ's summation order moves. The reference adds a tile's 64 terms in order and then fl(α·ℓ); a thread
// of the kernel keeps its share — fl(α·ℓ) plus its 16 terms per tile — and the four shares of a row are
// summed at the end. A sum of n ≥ 0 terms in any order is within γ_{n−1} = (n − 1)·u/(1 − (n − 1)·u) of the
// exact sum (u = 2⁻²⁴), and fl(fl(α·ℓ) + Σ) adds at most 2u per tile: the reference's ℓ is within γ₆₃ + 2u·T
// of the exact one, the kernel's within γ₁₅ + γ₃ + 2u·T. With T ≤ 16 tiles here, |Δℓ|/ℓ ≤ γ₆₃ + γ₁₅ + γ₃ +
// 4u·16 ≈ 9.0·10⁻⁶, and O = fl(O/ℓ) one more u on each side, G itself being identical: the test allows
// rtol 2e-5 plus one FP16 ulp of the larger value (O's FP16 rounding may fall either side). L = m + log ℓ:
// m identical, so |ΔL| ≤ 9.0·10⁻⁶ plus logf's and std::log's ≤ 1 ulp each and the sum's rounding: allowed
// 2e-5 + 4·2⁻²⁴·(1 + |L|).
// exact_exp: the kernel takes ex2.approx(t·log₂e), the reference std::exp; P̃ may differ by a few ulp, enough
// to flip a P code near a half-integer — the kernel's error against FP64 stays within 1.02× the reference's
// (test_turbo_decode_kernel.cpp argues the same).
#include "core/data/generators.h"
#include "core/formats/round.h"
#include "core/ground_truth.h"
#include "core/metrics.h"
#include "core/quant/quantize.h"
#include "core/registry.h"
#include "core/variants/turbo_cache.h"
#include "kernels/common/device.h"
#include "kernels/turbo/turbo_prefill_host.h"
#include "tests/catch.h"
#include "tests/support/turbo_gpu.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace attnlab {
namespace ATTNLAB_FILE_LOCAL {

using test::turbo;

double ulp16(double x) {
  const double a = std::max(std::abs(x), std::ldexp(1.0, -14));
  return std::ldexp(1.0, std::ilogb(a) - 10);
}

// O and L against the reference's, with the bound derived in the header (the decode kernel's, which
// test_turbo_decode_kernel.cpp derives the same way, is the same numbers).
void check_outputs(const ReferenceOutput& ref, const Tensor& o, const std::vector<float>& lse) {
  int64_t bad = 0;
  for (int64_t i = 0; i < o.size(); ++i) {
    const double r = ref.o.data()[i], k = o.data()[i];
    const double tol = 2e-5 * std::abs(r) + ulp16(std::max(std::abs(r), std::abs(k)));
    if (!(std::abs(k - r) <= tol) && bad++ < 6) FAIL_CHECK(fmt::format("o[{}] = {} vs reference {}", i, k, r));
  }
  const std::vector<double>& ref_lse = ref.probes.at("lse").values;
  REQUIRE(ref_lse.size() == lse.size());
  for (size_t i = 0; i < lse.size(); ++i) {
    const double tol = 2e-5 + std::ldexp(4.0, -24) * (1 + std::abs(ref_lse[i]));
    if (!(std::abs(lse[i] - ref_lse[i]) <= tol) && bad++ < 6)
      FAIL_CHECK(fmt::format("lse[{}] = {} vs reference {}", i, lse[i], ref_lse[i]));
  }
  CHECK(bad == 0);
}

struct Case {
  int64_t d, q_heads, kv_heads, q_len, kv_len;
  bool causal, exact_exp;
  const char* gen;
  const char* sas_precision = "fp32";
  double sas_share = 1.0;
};

void check_case(const Case& c, uint64_t seed) {
  Problem p;
  p.batch = 2, p.q_heads = c.q_heads, p.kv_heads = c.kv_heads, p.head_dim = c.d;
  p.q_len = c.q_len, p.kv_len = c.kv_len, p.causal = c.causal, p.phase = Phase::prefill;
  const QKV in = data::generate(p, c.gen, ParamValues::defaults(data::find_generator(c.gen)->params), seed);
  ParamValues pv = ParamValues::defaults(turbo().params);
  pv.set(turbo().params, "exact_exp", c.exact_exp, "test");
  pv.set(turbo().params, "sas_precision", c.sas_precision, "test");
  pv.set(turbo().params, "sas_share", c.sas_share, "test");
  const ReferenceOutput ref = turbo().reference(p, in, pv, {});
  const kernels::TurboPrefillOutput out = kernels::turbo_prefill_once(p, in, pv);
  const std::string what = fmt::format("{} d={} H={}/{} N={}/{} causal={} exact_exp={} sas {} share {} seed={}", c.gen,
                                       c.d, c.q_heads, c.kv_heads, c.q_len, c.kv_len, c.causal, c.exact_exp,
                                       c.sas_precision, c.sas_share, seed);
  INFO(what);
  if (c.exact_exp || c.sas_share != 1.0) {  // exp2's columns: a few ulp from std::exp (the header)
    const TensorF64 truth = attention_fp64(p, in);
    const double err_k = compare_to_truth(out.o, truth).rel_l2, err_r = compare_to_truth(ref.o, truth).rel_l2;
    INFO(fmt::format("rel_l2 kernel {:.4e} reference {:.4e}", err_k, err_r));
    CHECK(err_k <= 1.02 * err_r + 1e-5);
    return;
  }
  check_outputs(ref, out.o, out.lse);
}

TEST_CASE("turbo prefill kernel equals the turbo reference (SAS) up to ℓ's summation order", "[gpu][kernels][turbo]") {
  GPU_OR_SKIP();
  uint64_t seed = 6100;
  for (const Case& c : {Case{128, 4, 4, 256, 256, false, false, "llm_like"}, Case{128, 4, 2, 300, 300, true, false, "llm_like"},
                        Case{64, 4, 4, 200, 333, true, false, "normal"}, Case{64, 8, 2, 130, 130, false, false, "llm_like"},
                        Case{128, 2, 2, 1000, 1000, true, false, "normal"}})
    check_case(c, ++seed);
}

TEST_CASE("turbo prefill kernel with SAS in FP16x2 equals the reference's FP16 SAS up to ℓ's order", "[gpu][kernels][turbo]") {
  // Sas16NonPositive is core/sas.cpp's Fp16Kernel operation for operation (FP16 roundings at the same points), so the
  // bound of the FP32 path holds unchanged.
  GPU_OR_SKIP();
  check_case(Case{128, 4, 2, 300, 300, true, false, "llm_like", "fp16"}, 6150);
  check_case(Case{64, 4, 4, 256, 333, false, false, "normal", "fp16"}, 6151);
}

TEST_CASE("turbo prefill from FP16 inputs equals the FP32 path on the same values, and the reference's cache",
          "[gpu][kernels][turbo]") {
  // The pre-pass and Q's blocks take each FP16 input to FP32 exactly before anything is computed from it, so on
  // inputs that FP16 represents the two paths are the same computation: outputs equal bit for bit, and the
  // cache the FP16 path writes is the reference's byte for byte.
  GPU_OR_SKIP();
  uint64_t seed = 6250;
  for (const Case& c : {Case{128, 4, 2, 300, 300, true, false, "llm_like"}, Case{64, 4, 4, 200, 333, false, false, "normal"}}) {
    Problem p;
    p.batch = 2, p.q_heads = c.q_heads, p.kv_heads = c.kv_heads, p.head_dim = c.d;
    p.q_len = c.q_len, p.kv_len = c.kv_len, p.causal = c.causal, p.phase = Phase::prefill;
    QKV in = data::generate(p, c.gen, ParamValues::defaults(data::find_generator(c.gen)->params), ++seed);
    for (Tensor* t : {&in.q, &in.k, &in.v}) formats::round_fp16_inplace(t->data(), t->size());
    const ParamValues pv = ParamValues::defaults(turbo().params);
    INFO(fmt::format("{} d={} H={}/{} N={}/{} causal={} seed={}", c.gen, c.d, c.q_heads, c.kv_heads, c.q_len, c.kv_len,
                     c.causal, seed));
    const kernels::TurboPrefillOutput f32 = kernels::turbo_prefill_once(p, in, pv);
    const kernels::TurboPrefillOutput f16 = kernels::turbo_prefill_once(p, in, pv, 0, nullptr, /*fp16_inputs=*/true);
    REQUIRE(f16.o.size() == f32.o.size());
    CHECK(std::memcmp(f16.o.data(), f32.o.data(), size_t(f32.o.size()) * sizeof(float)) == 0);
    CHECK(f16.lse == f32.lse);
    test::check_cache_bytes(f16.cache, kernels::turbo_host_caches(p, in, pv), "FP16 inputs");
  }
}

// With n_h KV heads dropped to 2 bits the prefill ranks the heads on the GPU (Eq. 11–12, kernels/turbo/turbo_head_bits.cu)
// before its pre-pass, into a cache allocated for every pair at 4 bits: the widths, the cache's bytes and the outputs
// must be the reference's (its host ranking) — for each metric the GPU computes, and for entropy, which stays on the
// host. FP32 inputs: the GPU ranks the same values as the reference.
TEST_CASE("turbo prefill ranks the KV heads on the GPU as the reference does", "[gpu][kernels][turbo]") {
  GPU_OR_SKIP();
  uint64_t seed = 6400;
  for (const char* metric : {"gap_std", "min_max", "variation", "entropy"})
    for (int64_t d : {64, 128}) {
      Problem p;
      p.batch = 2, p.q_heads = 8, p.kv_heads = 4, p.head_dim = d, p.q_len = 300, p.kv_len = 300, p.causal = true;
      p.phase = Phase::prefill;
      const QKV in = data::generate(p, "llm_like", ParamValues::defaults(data::find_generator("llm_like")->params), ++seed);
      const ParamValues pv = test::turbo_params({{"two_bit_heads", 2}, {"priority", metric}});
      INFO(fmt::format("metric {} d={} seed={}", metric, d, seed));
      CHECK(kernels::turbo_ranks_on_gpu(p, pv) == (std::string(metric) != "entropy"));
      const kernels::TurboPrefillOutput out = kernels::turbo_prefill_once(p, in, pv);
      const std::vector<int> want = variants::turbo_detail::kv_head_bits(p, in, pv);
      CHECK(out.cache.head_bits == want);
      CHECK(std::count(want.begin(), want.end(), 2) == 2 * p.batch);
      test::check_cache_bytes(out.cache, kernels::turbo_host_caches(p, in, pv), metric);
      check_outputs(turbo().reference(p, in, pv, {}), out.o, out.lse);
    }
}

TEST_CASE("turbo prefill kernel with exact_exp is as accurate as the reference", "[gpu][kernels][turbo]") {
  GPU_OR_SKIP();
  check_case(Case{128, 4, 2, 300, 300, true, true, "llm_like"}, 6200);
  check_case(Case{64, 4, 4, 256, 256, false, true, "normal"}, 6201);
}

// sas_share below 1 (core/variants/turbo_sas_share.h): the first 8·share of each tile's eight 8-key blocks take SAS, the
// rest exp2. Which block took which path shows where the two differ most, as the reference's test finds it
// (tests/core/variants/test_turbo.cpp): with n_r = −2 a key scoring 3 below the row's max gets SAS's 0 but exp's e⁻³
// (P code 6); V row c is e_c, so O's channel c is exactly 0 where SAS ran. Then on random data, as accurate as the
// reference at the same share (the exp2 columns are exact_exp's: a few ulp from std::exp).
TEST_CASE("turbo prefill kernel with sas_share below 1: SAS on the first blocks of 8 keys, exp2 on the rest",
          "[gpu][kernels][turbo]") {
  GPU_OR_SKIP();
  Problem p;
  p.batch = 1, p.q_heads = 1, p.kv_heads = 1, p.q_len = 64, p.kv_len = 128, p.head_dim = 128, p.phase = Phase::prefill;
  QKV in{Tensor(p.q_shape()), Tensor(p.kv_shape()), Tensor(p.kv_shape())};
  for (int64_t n = 0; n < p.q_len; ++n) in.q.at(0, 0, n, 0) = 1.0f;
  for (int64_t n = 0; n < p.kv_len; ++n) {
    in.k.at(0, 0, n, 0) = n % 64 == 0 ? 3.0f * std::sqrt(128.0f) : 0.0f;  // S = 3 for keys 0 and 64, else 0
    in.v.at(0, 0, n, n) = 1.0f;
  }
  for (const int blocks : {1, 2, 4, 7}) {
    ParamValues pv = ParamValues::defaults(turbo().params);
    pv.set(turbo().params, "n_r", -2, "test");
    pv.set(turbo().params, "sas_share", blocks / 8.0, "test");
    const kernels::TurboPrefillOutput out = kernels::turbo_prefill_once(p, in, pv);
    const ReferenceOutput ref = turbo().reference(p, in, pv, {});
    for (int64_t c = 0; c < p.kv_len; ++c) {
      INFO("sas_share " << blocks << "/8, key " << c);
      if (c % 64 == 0) CHECK(out.o.at(0, 0, 0, c) > 0.1f);           // a max key, P̃ = 1: 1/ℓ ≥ 1/(2 + 126·e⁻³) ≈ 0.12
      else if (c % 64 < 8 * blocks) CHECK(out.o.at(0, 0, 0, c) == 0.0f);  // SAS: below n_r
      else CHECK(out.o.at(0, 0, 0, c) > 0.0f);                        // exp2: e⁻³
      CHECK((out.o.at(0, 0, 0, c) == 0.0f) == (ref.o.at(0, 0, 0, c) == 0.0f));  // the reference's path
    }
  }
  uint64_t seed = 6300;
  for (const double share : {0.0, 0.25, 0.5, 0.875}) {
    check_case(Case{128, 4, 2, 300, 300, true, false, "llm_like", "fp32", share}, ++seed);
    check_case(Case{64, 4, 4, 256, 333, false, false, "normal", "fp32", share}, ++seed);
  }
}

TEST_CASE("turbo prefill kernel's INT32 scores are the integer product of its own codes", "[gpu][kernels][turbo]") {
  // The codes are Alg. 1's (the pre-pass's tiles and Q blocks equal quant::quantize's and prefill_tiles',
  // test_turbo_cache_write.cpp), so S_int must be Σ_c Q^q1·K^q1 exactly, for every pair a row sees.
  GPU_OR_SKIP();
  for (int64_t d : {64, 128}) {
    Problem p;
    p.batch = 1, p.q_heads = 4, p.kv_heads = 2, p.head_dim = d, p.q_len = 200, p.kv_len = 333, p.causal = true;
    p.phase = Phase::prefill;
    const uint64_t seed = 6500 + uint64_t(d);
    const QKV in = data::generate(p, "llm_like", ParamValues::defaults(data::find_generator("llm_like")->params), seed);
    const ParamValues pv = ParamValues::defaults(turbo().params);
    std::vector<int32_t> scores;
    kernels::turbo_prefill_once(p, in, pv, 0, &scores);
    int64_t bad = 0;
    for (int64_t h = 0; h < p.q_heads; ++h) {
      const quant::Quantized q = quant::quantize(
          in.q.head(0, h).data(), p.q_len, d,
          quant::Spec{.bits = 8, .granularity = quant::Granularity::block, .block_rows = 64, .q_max = 119});
      const int64_t hk = h / p.group();
      const auto t = variants::turbo_detail::prefill_tiles(in.k.head(0, hk).data(), in.v.head(0, hk).data(), p.kv_len,
                                                           d, kernels::kTurboBlock, 119);
      for (int64_t r = 0; r < p.q_len; ++r)
        for (int64_t c = 0; c < p.visible_keys(r); ++c) {
          int64_t want = 0;
          for (int64_t x = 0; x < d; ++x) want += int64_t(q.q[size_t(r * d + x)]) * int64_t(t.k(c, x));
          const int32_t got = scores[size_t((h * p.q_len + r) * p.kv_len + c)];
          if (got != want && bad++ < 4)
            FAIL_CHECK(fmt::format("d={} head {} row {} key {}: S = {} vs {} (seed {})", d, h, r, c, got, want, seed));
        }
    }
    CHECK(bad == 0);
  }
}

TEST_CASE("turbo prefill kernel → decode kernel for 100 steps equals reference prefill → reference decode",
          "[gpu][kernels][turbo]") {
  // The whole serving path on the GPU with no host round trip: the prefill writes the cache (with room for
  // the flushes), then each step appends its token (a flush every 64) and attends. Each output is held to
  // the reference's at the same point; the cache's bytes too, after the flushes and at the end.
  GPU_OR_SKIP();
  const int64_t prefill = 150, steps = 100, d = 128;
  Problem full;
  full.batch = 1, full.kv_heads = 2, full.q_heads = 8, full.head_dim = d, full.causal = true, full.phase = Phase::prefill;
  full.q_len = full.kv_len = prefill + steps;
  const uint64_t seed = 6400;
  const QKV all = data::generate(full, "llm_like", ParamValues::defaults(data::find_generator("llm_like")->params), seed);
  auto rows = [&](const Tensor& x, int64_t heads, int64_t from, int64_t count, Tensor out) {
    for (int64_t h = 0; h < heads; ++h)
      std::memcpy(out.head(0, h).data(), x.head(0, h).data() + from * d, size_t(count * d) * sizeof(float));
    return out;
  };
  ParamValues pv = ParamValues::defaults(turbo().params);
  pv.set(turbo().params, "two_bit_heads", 1, "test");
  pv.set(turbo().params, "kv_splits", 3, "test");
  // The prefill: the first 150 tokens, causal.
  Problem p0 = full;
  p0.q_len = p0.kv_len = prefill;
  const QKV pre{rows(all.q, 8, 0, prefill, Tensor(p0.q_shape())), rows(all.k, 2, 0, prefill, Tensor(p0.kv_shape())),
                rows(all.v, 2, 0, prefill, Tensor(p0.kv_shape()))};
  kernels::TurboPrefillOutput out = kernels::turbo_prefill_once(p0, pre, pv, kernels::turbo_slots(prefill, prefill + steps));
  {
    INFO(fmt::format("the prefill, seed {}", seed));
    check_outputs(turbo().reference(p0, pre, pv, {}), out.o, out.lse);
  }
  kernels::TurboDeviceCache& cache = out.cache;
  kernels::DeviceBuffer kv_new(size_t(2 * 2 * d) * sizeof(float));
  for (int64_t s = 1; s <= steps; ++s) {
    Problem p = full;
    p.kv_len = prefill + s, p.q_len = 1, p.phase = Phase::decode, p.causal = false;
    const QKV in{rows(all.q, 8, prefill + s - 1, 1, Tensor(p.q_shape())), rows(all.k, 2, 0, p.kv_len, Tensor(p.kv_shape())),
                 rows(all.v, 2, 0, p.kv_len, Tensor(p.kv_shape()))};
    std::vector<float> kv_row(size_t(4 * d));
    for (int64_t h = 0; h < 2; ++h) {
      std::memcpy(kv_row.data() + h * d, in.k.head(0, h).data() + (p.kv_len - 1) * d, size_t(d) * sizeof(float));
      std::memcpy(kv_row.data() + (2 + h) * d, in.v.head(0, h).data() + (p.kv_len - 1) * d, size_t(d) * sizeof(float));
    }
    ATTNLAB_CUDA(cudaMemcpy(kv_new.as<void>(), kv_row.data(), kv_row.size() * sizeof(float), cudaMemcpyHostToDevice));
    ATTNLAB_CUDA(kernels::turbo_decode_append(cache.args, kv_new.as<float>(), kv_new.as<float>() + 2 * d, false, nullptr));
    cache.args.tokens += 1;
    ParamValues ps = pv;
    ps.set(turbo().params, "decode_steps", s, "test");
    kernels::DeviceBuffer q(size_t(in.q.size()) * sizeof(float));
    ATTNLAB_CUDA(cudaMemcpy(q.as<void>(), in.q.data(), q.bytes(), cudaMemcpyHostToDevice));
    const auto got = kernels::turbo_decode_once(p, cache, q.as<float>(), kernels::turbo_exp_args(ps),
                                                kernels::turbo_chains_for(p, ps, cache.args));
    INFO(fmt::format("step {} seed {}", s, seed));
    check_outputs(turbo().reference(p, in, ps, {}), got.o, got.lse);
    if (s % 64 == 0 || s == steps)  // after a flush, and at the end: the cache, byte for byte
      test::check_cache_bytes(cache, kernels::turbo_host_caches(p, in, ps), fmt::format("step {}", s));
  }
}

// The kernel's three schedules — a producer warpgroup's TMA into the mbarrier ring with the consumers in ping-pong or
// not, and every thread's cp.async with a CTA barrier per tile (kernels/turbo/turbo_prefill_sm90.cu's head comment) —
// run the same operations on the same values in the same order: their outputs are equal bit for bit. Every GQA group
// 1–8, ragged N (a partial last tile, fewer keys than one tile), q_len below kv_len, d 64 and 128, every exponential.
std::vector<kernels::TurboPrefillOutput> three_schedules(const Problem& p, const QKV& in, ParamValues pv) {
  std::vector<kernels::TurboPrefillOutput> outs;
  pv.set(turbo().params, "kv_loads", std::string("tma_producer"), "test");
  outs.push_back(kernels::turbo_prefill_once(p, in, pv));
  outs.push_back(kernels::turbo_prefill_once(p, in, pv, 0, nullptr, false, /*ping_pong=*/false));
  pv.set(turbo().params, "kv_loads", std::string("cp_async"), "test");
  outs.push_back(kernels::turbo_prefill_once(p, in, pv));
  return outs;
}

void check_same_bits(const std::vector<kernels::TurboPrefillOutput>& outs) {
  for (size_t k = 1; k < outs.size(); ++k) {
    INFO("schedule " << k << " against the producer with ping-pong");
    REQUIRE(outs[k].o.size() == outs[0].o.size());
    CHECK(std::memcmp(outs[k].o.data(), outs[0].o.data(), size_t(outs[0].o.size()) * sizeof(float)) == 0);
    CHECK(outs[k].lse == outs[0].lse);
  }
}

TEST_CASE("turbo prefill kernel: the producer ring and the cp.async pipeline give the same bits", "[gpu][kernels][turbo]") {
  GPU_OR_SKIP();
  uint64_t seed = 6600;
  for (int64_t d : {64, 128})
    for (int64_t group : {1, 2, 3, 4, 5, 6, 7, 8})
      for (auto [q_len, kv_len] : {std::pair<int64_t, int64_t>{40, 40}, {300, 300}, {129, 1000}, {1024, 1024}}) {
        Problem p;
        p.batch = 2, p.kv_heads = 2, p.q_heads = 2 * group, p.head_dim = d, p.q_len = q_len, p.kv_len = kv_len;
        p.causal = (group + q_len) % 2 == 0, p.phase = Phase::prefill;
        const QKV in = data::generate(p, "llm_like", ParamValues::defaults(data::find_generator("llm_like")->params), ++seed);
        INFO(fmt::format("d={} group={} q_len={} kv_len={} causal={} seed={}", d, group, q_len, kv_len, p.causal, seed));
        check_same_bits(three_schedules(p, in, ParamValues::defaults(turbo().params)));
      }
  // Each exponential (SAS FP16x2, exp2, the sas_share mix) on one shape per d.
  for (int64_t d : {64, 128}) {
    Problem p;
    p.batch = 1, p.kv_heads = 2, p.q_heads = 8, p.head_dim = d, p.q_len = 300, p.kv_len = 300, p.causal = true;
    p.phase = Phase::prefill;
    const QKV in = data::generate(p, "normal", ParamValues::defaults(data::find_generator("normal")->params), ++seed);
    for (const char* exp : {"fp16", "exact", "share"}) {
      ParamValues pv = ParamValues::defaults(turbo().params);
      if (exp == std::string("fp16")) pv.set(turbo().params, "sas_precision", std::string("fp16"), "test");
      if (exp == std::string("exact")) pv.set(turbo().params, "exact_exp", true, "test");
      if (exp == std::string("share")) pv.set(turbo().params, "sas_share", 0.375, "test");
      INFO(fmt::format("d={} exponential {} seed={}", d, exp, seed));
      check_same_bits(three_schedules(p, in, pv));
    }
  }
}

TEST_CASE("turbo prefill kernel on a small shape (sanitizer run)", "[gpu][sanitize]") {
  GPU_OR_SKIP();
  check_case(Case{64, 2, 1, 100, 100, true, false, "llm_like"}, 6300);  // the producer's ring (the default)
  Problem p;  // and the cp.async pipeline: three tiles, the last ragged
  p.batch = 1, p.q_heads = 4, p.kv_heads = 1, p.head_dim = 128, p.q_len = 129, p.kv_len = 150, p.causal = true;
  p.phase = Phase::prefill;
  const QKV in = data::generate(p, "llm_like", ParamValues::defaults(data::find_generator("llm_like")->params), 6301);
  check_same_bits(three_schedules(p, in, ParamValues::defaults(turbo().params)));
}

}  // namespace
}  // namespace attnlab
