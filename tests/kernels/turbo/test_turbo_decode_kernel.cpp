// TurboAttention's decode kernels (kernels/turbo/turbo_decode.cu) against the `turbo` reference, on the GPU.
// Skipped, with the reason printed, where there is no usable GPU. Seeds are fixed and printed.
//
// What must be equal, exactly:
//   - the cache: after the GPU's own appends and flushes, every byte of every pair's slots, scales, zero
//     points and buffer equals device_image() of the reference's cache at that step (turbo_layout.h);
//   - the scores: the kernel's INT32 S for every (head, token) equals the integer product of the
//     reference's Q^q1 and its dequantized K̂ = sat((k + z)·s) — which is what the kernel's fold of s, z
//     into the product (turbo_decode.cu) must reproduce, saturating channels included.
// What may differ, and by how much (SAS path; turbo_decode.cu lists the operations it shares with the
// reference): only the order of ℓ's sums. The reference adds a tile's 64 terms, then fl(α·ℓ); a lane of
// the kernel keeps its share of ℓ — fl(α·ℓ) plus its 2·G terms per tile — and a chain's 32/G shares of a
// row are summed at its end. A sum of n ≥ 0 terms in any order is within γ_{n−1} = (n − 1)·u/(1 − (n − 1)·u)
// of the exact sum (u = 2⁻²⁴), and fl(fl(α·ℓ) + Σ) adds at most 2u per tile, so the reference's ℓ is
// within γ₆₃ + 2u·T of the exact one and the kernel's within γ₁₅ + γ₃₁ + 2u·T (G = 8 and G = 1 the worst
// cases of the two sums); each merge adds 2u to both, and O = fl(G/ℓ) one more u, G itself being
// identical. With T + C ≤ 40 here: |ΔO| ≤ (γ₆₃ + γ₃₁ + γ₁₅ + 4u·41)·|O| ≈ 1.6e-5·|O| before O's FP16
// rounding, which then can differ by one FP16 ulp. The test allows
// rtol = 2e-5 plus one FP16 ulp of the larger value. L = m + log ℓ: m identical, so |ΔL| ≤ 1.6e-5 plus
// logf's and std::log's ≤ 1 ulp each and the sum's rounding: allowed 2e-5 + 4·2⁻²⁴·(1 + |L|).
// exact_exp: the kernel takes ex2.approx(t·log₂e), the reference std::exp; P̃ may differ by a few ulp,
// enough to flip a P code where P̃/s_P lies within ~10⁻⁴ of a half-integer. One flip moves the row's
// output by ≤ s_P·s_V·127/ℓ ≤ max|V̂|/119 (ℓ ≥ 119·s_P: the tile maximum's code is 119); two allowed per
// element (int_flash's test argues the same), and the kernel's error against FP64 stays within 1.02× the
// reference's.
#include "core/ground_truth.h"
#include "core/metrics.h"
#include "core/data/generators.h"
#include "core/quant/quantize.h"
#include "core/registry.h"
#include "core/variants/turbo_cache.h"
#include "core/variants/turbo_chains.h"
#include "kernels/common/device.h"
#include "kernels/common/poisoned_output.h"
#include "kernels/turbo/turbo_decode_host.h"
#include "tests/catch.h"
#include "tests/support/turbo_gpu.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cuda_runtime.h>

#include <cmath>
#include <cstring>

namespace attnlab {
namespace ATTNLAB_FILE_LOCAL {

using variants::turbo_detail::device_image;
using variants::turbo_detail::DeviceImage;
using variants::turbo_detail::HeadCache;

using test::turbo;

struct DeviceQ {
  kernels::DeviceBuffer buf;
  explicit DeviceQ(const Tensor& q) : buf(size_t(q.size()) * sizeof(float)) {
    ATTNLAB_CUDA(cudaMemcpy(buf.as<void>(), q.data(), buf.bytes(), cudaMemcpyHostToDevice));
  }
  const float* ptr() const { return buf.as<float>(); }
};

double ulp16(double x) {  // one FP16 unit in the last place at |x| (normal range; subnormal spacing below)
  const double a = std::max(std::abs(x), std::ldexp(1.0, -14));
  return std::ldexp(1.0, std::ilogb(a) - 10);
}

// The kernel's O and L against the reference's, with the bound derived in the header.
void check_outputs(const Problem& p, const ReferenceOutput& ref, const kernels::TurboDecodeOutput& out, bool exact_exp,
                   double max_v, const std::string& what) {
  INFO(what);
  int64_t bad = 0;
  for (int64_t i = 0; i < out.o.size(); ++i) {
    const double r = ref.o.data()[i], k = out.o.data()[i];
    const double tol = exact_exp ? 2 * max_v / 119 + 1e-5 * std::abs(r)
                                 : 2e-5 * std::abs(r) + ulp16(std::max(std::abs(r), std::abs(k)));
    if (!(std::abs(k - r) <= tol) && bad++ < 4) FAIL_CHECK(fmt::format("o[{}] = {} vs reference {} (bound {:.3g})", i, k, r, tol));
  }
  CHECK(bad == 0);
  const std::vector<double>& ref_lse = ref.probes.at("lse").values;
  REQUIRE(ref_lse.size() == out.lse.size());
  for (size_t i = 0; i < out.lse.size(); ++i) {
    const double tol = exact_exp ? 1e-4 * (1 + std::abs(ref_lse[i])) : 2e-5 + std::ldexp(4.0, -24) * (1 + std::abs(ref_lse[i]));
    if (!(std::abs(out.lse[i] - ref_lse[i]) <= tol) && bad++ < 4)
      FAIL_CHECK(fmt::format("lse[{}] = {} vs reference {}", i, out.lse[i], ref_lse[i]));
  }
  CHECK(bad == 0);
  (void)p;
}

double max_abs(const Tensor& t) {
  double m = 0;
  for (float x : t.values()) m = std::max(m, double(std::abs(x)));
  return m;
}

struct Case {
  int64_t d, kv_heads, group, kv_len, steps;
  int two_bit_heads;
  bool exact_exp;
  int kv_splits;
  const char* gen;
};

// One decode problem through the reference and the kernel (cache built by the reference, uploaded).
void check_case(const Case& c, uint64_t seed) {
  Problem p;
  p.batch = 2, p.kv_heads = c.kv_heads, p.q_heads = c.kv_heads * c.group, p.head_dim = c.d;
  p.kv_len = c.kv_len, p.q_len = 1, p.phase = Phase::decode;
  const QKV in = data::generate(p, c.gen, ParamValues::defaults(data::find_generator(c.gen)->params), seed);
  const ParamValues pv = test::turbo_params({{"decode_steps", c.steps}, {"two_bit_heads", c.two_bit_heads},
                                      {"exact_exp", c.exact_exp}, {"kv_splits", c.kv_splits}});
  const ReferenceOutput ref = turbo().reference(p, in, pv, {});
  const std::vector<HeadCache> heads = kernels::turbo_host_caches(p, in, pv);
  const kernels::TurboDeviceCache cache =
      kernels::upload_turbo_cache(heads, kernels::turbo_slots(p.kv_len - c.steps, p.kv_len));
  const DeviceQ q(in.q);
  const int chains = kernels::turbo_chains_for(p, pv, cache.args);
  const std::string what = fmt::format("{} d={} Hkv={} G={} N={} steps={} 2-bit heads={} exact_exp={} chains={} seed={}",
                                       c.gen, c.d, c.kv_heads, c.group, c.kv_len, c.steps, c.two_bit_heads,
                                       c.exact_exp, chains, seed);
  const auto out = kernels::turbo_decode_once(p, cache, q.ptr(), kernels::turbo_exp_args(pv), chains);
  check_outputs(p, ref, out, c.exact_exp, max_abs(in.v), what);

  if (c.exact_exp) {
    const TensorF64 truth = attention_fp64(p, in);
    const double err_k = compare_to_truth(out.o, truth).rel_l2, err_r = compare_to_truth(ref.o, truth).rel_l2;
    INFO(fmt::format("{}: rel_l2 kernel {:.4e} reference {:.4e}", what, err_k, err_r));
    CHECK(err_k <= 1.02 * err_r + 1e-5);
  }
}

TEST_CASE("turbo decode kernel equals the turbo reference (SAS) up to ℓ's summation order", "[gpu][kernels][turbo]") {
  GPU_OR_SKIP();
  uint64_t seed = 20261123;
  for (int64_t d : {64, 128})
    for (const Case& c : {Case{d, 2, 4, 777, 100, 1, false, 0, "llm_like"},   // GQA 4:1, mixed 2/4-bit
                          Case{d, 2, 8, 1000, 0, 0, false, 3, "normal"},      // GQA 8:1, no buffer, 4-bit
                          Case{d, 4, 1, 545, 70, 4, false, 1, "llm_like"},    // MHA, all 2-bit, Alg. 2's one loop
                          Case{d, 1, 2, 64 * 9 + 1, 64, 0, false, 0, "student_t"},
                          Case{d, 2, 3, 700, 30, 1, false, 0, "llm_like"},   // G = 3: an empty row in the spread
                          // GQA 4:1 and 3:1, all 2-bit: at d 128 the 2-bit kernel with a two-block ring (v12)
                          Case{d, 2, 4, 1300, 40, 2, false, 0, "llm_like"}, Case{d, 3, 3, 900, 20, 3, false, 0, "llm_like"}})
      check_case(c, seed++);
}

TEST_CASE("turbo decode kernel with exact_exp is the reference up to rare P-code flips", "[gpu][kernels][turbo]") {
  GPU_OR_SKIP();
  uint64_t seed = 7100;
  for (int64_t d : {64, 128})
    for (const Case& c : {Case{d, 2, 4, 900, 90, 1, true, 0, "llm_like"}, Case{d, 2, 1, 600, 40, 1, true, 0, "llm_like"}})
      check_case(c, seed++);
}

// S_int of the kernel against the integer product of the reference's Q^q1 and K̂ (tiles_of: the cache
// dequantized by progressive_dequantize, saturation included; the pending tokens as they are). Every
// spread of the scores (turbo_decode.cu: GE = 1, 4, 8; G = 3 leaves row 3 of four empty) is covered.
TEST_CASE("turbo decode kernel's INT32 scores are Q^q1·K̂ᵀ exactly, saturating channels included", "[gpu][kernels][turbo]") {
  GPU_OR_SKIP();
  for (int64_t d : {64, 128})
    for (int64_t group : {1, 3, 4, 8})
    for (int two_bit : {0, 2}) {
      Problem p;
      p.batch = 1, p.kv_heads = 2, p.q_heads = 2 * group, p.head_dim = d, p.kv_len = 420, p.q_len = 1, p.phase = Phase::decode;
      const uint64_t seed = 555 + uint64_t(d) + uint64_t(two_bit) + 1000 * uint64_t(group);
      const QKV in = data::generate(p, "llm_like", ParamValues::defaults(data::find_generator("llm_like")->params), seed);
      const ParamValues pv = test::turbo_params({{"decode_steps", 150}, {"two_bit_heads", two_bit}, {"kv_splits", 2}});
      const std::vector<HeadCache> heads = kernels::turbo_host_caches(p, in, pv);
      const kernels::TurboDeviceCache cache = kernels::upload_turbo_cache(heads, kernels::turbo_slots(270, 420));
      const DeviceQ q(in.q);
      const int tiles = kernels::turbo_decode_tiles(cache.args);
      kernels::DeviceBuffer scores(size_t(2 * 8 * tiles * 64) * sizeof(int32_t));
      ATTNLAB_CUDA(cudaMemset(scores.as<void>(), 0x7f, scores.bytes()));
      kernels::TurboDecodeArgs a;
      const kernels::PoisonedOutput out(p);
      a.cache = cache.args, a.exp = kernels::turbo_exp_args(pv), a.q = q.ptr(), a.o = out.o(), a.lse = out.lse();
      a.batch = 1, a.q_heads = int(p.q_heads), a.kv_heads = 2, a.chains = 2, a.scale = float(p.scale());
      a.scores = scores.as<int32_t>();
      kernels::DeviceBuffer ws(kernels::turbo_decode_workspace_bytes(a));
      a.workspace = ws.as<float>();
      ATTNLAB_CUDA(kernels::turbo_decode_attend(a, nullptr));
      std::vector<int32_t> got(size_t(2 * 8 * tiles * 64));
      ATTNLAB_CUDA(cudaMemcpy(got.data(), scores.as<void>(), scores.bytes(), cudaMemcpyDeviceToHost));
      int64_t saturated = 0, checked = 0;
      for (int pair = 0; pair < 2; ++pair) {
        const auto t = variants::turbo_detail::tiles_of(heads[size_t(pair)]);
        saturated += heads[size_t(pair)].stats.saturated;
        REQUIRE(t.tiles() == tiles);
        for (int64_t g = 0; g < group; ++g) {
          const int64_t hq = pair * group + g;
          const quant::Quantized q8 = quant::quantize(
              in.q.head(0, hq).data(), 1, d, quant::Spec{.bits = 8, .granularity = quant::Granularity::block, .block_rows = 64, .q_max = 119});
          for (int64_t j = 0; j < tiles; ++j)
            for (int64_t tau = 0; tau < t.start[size_t(j + 1)] - t.start[size_t(j)]; ++tau) {
              int64_t want = 0;
              for (int64_t ch = 0; ch < d; ++ch)
                want += int64_t(q8.q[size_t(ch)]) * int64_t(t.k(t.start[size_t(j)] + tau, ch));
              const int32_t have = got[size_t(((pair * 8 + g) * tiles + j) * 64 + tau)];
              ++checked;
              if (have != want)
                FAIL(fmt::format("d={} G={} pair {} head {} tile {} token {}: S = {} vs {}", d, group, pair, g, j, tau, have, want));
            }
        }
      }
      INFO(fmt::format("d={} G={} two_bit_heads={}: {} scores, {} saturated cache values", d, group, two_bit, checked, saturated));
      CHECK(checked > 0);
      if (two_bit > 0) CHECK(saturated > 0);  // the 2-bit heads exercise the per-token path
    }
}

// The multi-step decode: the GPU appends each generated token to its buffer (flushing every 64) and
// attends; after every step its output equals the reference's for the sequence so far, and its cache
// equals the reference's cache byte for byte at every flush and at the end.
TEST_CASE("turbo decode: 200 GPU steps with appends and flushes equal the reference step by step", "[gpu][kernels][turbo]") {
  GPU_OR_SKIP();
  for (int64_t d : {64, 128}) {
    const int64_t prefill = 150, steps = 200;
    Problem full;
    full.batch = 1, full.kv_heads = 2, full.q_heads = 8, full.head_dim = d, full.kv_len = prefill + steps;
    full.q_len = steps, full.phase = Phase::prefill;  // the queries of all 200 steps at once (row s for step s)
    const uint64_t seed = 9000 + uint64_t(d);
    const QKV all = data::generate(full, "llm_like", ParamValues::defaults(data::find_generator("llm_like")->params), seed);
    const ParamValues pv0 = test::turbo_params({{"two_bit_heads", 1}, {"kv_splits", 3}});
    auto step_problem = [&](int64_t s) {
      Problem p = full;
      p.kv_len = prefill + s, p.q_len = 1, p.phase = Phase::decode;
      return p;
    };
    auto step_inputs = [&](int64_t s) {  // query s − 1, keys and values 0 … prefill + s − 1
      const Problem p = step_problem(s);
      QKV in{Tensor(p.q_shape()), Tensor(p.kv_shape()), Tensor(p.kv_shape())};
      for (int64_t h = 0; h < p.q_heads; ++h)
        std::memcpy(in.q.head(0, h).data(), all.q.head(0, h).data() + (s - 1) * d, size_t(d) * sizeof(float));
      for (int64_t h = 0; h < p.kv_heads; ++h) {
        std::memcpy(in.k.head(0, h).data(), all.k.head(0, h).data(), size_t(p.kv_len * d) * sizeof(float));
        std::memcpy(in.v.head(0, h).data(), all.v.head(0, h).data(), size_t(p.kv_len * d) * sizeof(float));
      }
      return in;
    };
    // The prefill's cache (no step yet), uploaded with room for every flush.
    Problem p0 = step_problem(1);
    p0.kv_len = prefill;
    const QKV in0 = step_inputs(1);
    QKV pre{in0.q, Tensor(p0.kv_shape()), Tensor(p0.kv_shape())};
    for (int64_t h = 0; h < 2; ++h) {
      std::memcpy(pre.k.head(0, h).data(), in0.k.head(0, h).data(), size_t(prefill * d) * sizeof(float));
      std::memcpy(pre.v.head(0, h).data(), in0.v.head(0, h).data(), size_t(prefill * d) * sizeof(float));
    }
    kernels::TurboDeviceCache cache =
        kernels::upload_turbo_cache(kernels::turbo_host_caches(p0, pre, pv0), kernels::turbo_slots(prefill, prefill + steps));
    kernels::DeviceBuffer kv_new(size_t(2 * 2 * d) * sizeof(float));
    for (int64_t s = 1; s <= steps; ++s) {
      const Problem p = step_problem(s);
      const QKV in = step_inputs(s);
      // Append token prefill + s − 1 of each pair (K then V rows).
      std::vector<float> k_row(size_t(2 * d)), v_row(size_t(2 * d));
      for (int64_t h = 0; h < 2; ++h) {
        std::memcpy(k_row.data() + h * d, in.k.head(0, h).data() + (p.kv_len - 1) * d, size_t(d) * sizeof(float));
        std::memcpy(v_row.data() + h * d, in.v.head(0, h).data() + (p.kv_len - 1) * d, size_t(d) * sizeof(float));
      }
      float* kd = kv_new.as<float>();
      ATTNLAB_CUDA(cudaMemcpy(kd, k_row.data(), size_t(2 * d) * sizeof(float), cudaMemcpyHostToDevice));
      ATTNLAB_CUDA(cudaMemcpy(kd + 2 * d, v_row.data(), size_t(2 * d) * sizeof(float), cudaMemcpyHostToDevice));
      ATTNLAB_CUDA(kernels::turbo_decode_append(cache.args, kd, kd + 2 * d, false, nullptr));
      cache.args.tokens += 1;
      const ParamValues pv = test::turbo_params({{"two_bit_heads", 1}, {"kv_splits", 3}, {"decode_steps", s}});
      const ReferenceOutput ref = turbo().reference(p, in, pv, {});
      const DeviceQ q(in.q);
      const auto out = kernels::turbo_decode_once(p, cache, q.ptr(), kernels::turbo_exp_args(pv),
                                                  kernels::turbo_chains_for(p, pv, cache.args));
      check_outputs(p, ref, out, false, max_abs(in.v), fmt::format("d={} step {} seed {}", d, s, seed));
      if (s % 64 == 0 || s == steps) {  // after a flush, and at the end: the cache, byte for byte
        test::check_cache_bytes(cache, kernels::turbo_host_caches(p, in, pv), fmt::format("d={} step {}", d, s));
      }
    }
  }
}

// Small shapes for compute-sanitizer (memcheck, racecheck): both widths, a partial block, the buffer.
TEST_CASE("turbo decode kernel on a small shape (sanitizer run)", "[gpu][sanitize]") {
  GPU_OR_SKIP();
  check_case(Case{64, 1, 4, 200, 70, 1, false, 2, "llm_like"}, 31);
  check_case(Case{128, 1, 4, 300, 70, 1, false, 3, "llm_like"}, 32);  // all 2-bit at G 4: the two-block ring
}

}  // namespace
}  // namespace attnlab
