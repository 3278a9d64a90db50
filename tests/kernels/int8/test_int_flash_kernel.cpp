// The int_flash CUDA kernel against the int_flash reference (core/variants/int_flash.cpp), on the GPU.
// Skipped, with the reason printed, where there is no usable GPU.
//
// Same INT8 inputs (quantized on the host by the reference's rules), same integer products. They differ
// in the FP32 path to P's codes: the kernel computes 127·2^{S·scale·log₂e − m} with ex2.approx, the
// reference 127·e^{S·scale − m} with FP32 exp; a code whose 127·p̃ lies within ~10⁻⁵ of a half-integer
// can round the other way. One such flip moves ℓ by 1 (ℓ ≥ 127: the row's maximum has code 127) and the
// output by at most 2·s_V·127/ℓ ≤ 2·max|V| / 127 per row. Flips are rare, so over the whole output the
// kernel's error against FP64 stays within 1.05× the reference's.
// The codes use the running max after each B_c-key tile, so the reference runs at the kernel's B_c (64 for
// mma.sync, 128 for wgmma): at another B_c the two would compute different, equally valid, functions.
// The wgmma path runs its default loads here (int_flash.h: a TMA producer warpgroup, ping-pong); its other loads
// (cp.async pipeline; producer without ping-pong) are held to the default's bits below.
#include "core/ground_truth.h"
#include "core/kernel_traits.h"
#include "core/metrics.h"
#include "core/data/generators.h"
#include "core/quant/quantize.h"
#include "core/registry.h"
#include "kernels/common/device.h"
#include "kernels/common/kernel_table.h"
#include "kernels/int8/int_flash_host.h"
#include "kernels/int8/int_flash_sm90.h"
#include "tests/catch.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cuda_runtime.h>

#include <bit>
#include <chrono>
#include <cmath>

namespace attnlab {
namespace ATTNLAB_FILE_LOCAL {

uint64_t fresh_seed() { return uint64_t(std::chrono::steady_clock::now().time_since_epoch().count()); }

// The kernel generations that run (d, …) here: mma.sync always; wgmma at d = 128 where the sm_90a kernel
// can run.
std::vector<kernels::KernelPath> paths_for(int64_t d) {
  std::vector<kernels::KernelPath> paths{kernels::KernelPath::warp_mma};
  if (kernels::warpgroup_mma_available() && kernels::int_flash_sm90_supports(int(d)))
    paths.push_back(kernels::KernelPath::warpgroup_mma);
  return paths;
}

// The wgmma path's loads (int_flash.h): the default (TMA producer, ping-pong), the producer alone, and wgmma v2's
// cp.async pipeline. The mma.sync path has one.
std::vector<kernels::IntFlashSchedule> loads_for(kernels::KernelPath path) {
  if (path != kernels::KernelPath::warpgroup_mma) return {kernels::IntFlashSchedule{}};
  return {{.tma_producer = true, .ping_pong = true}, {.tma_producer = true, .ping_pong = false},
          {.tma_producer = false, .ping_pong = false}};
}
std::string describe(const kernels::IntFlashSchedule& loads) {
  return loads.tma_producer ? (loads.ping_pong ? "TMA producer, ping-pong" : "TMA producer") : "cp.async pipeline";
}

// across: pv_accumulation = across_tiles in the reference and the kernel (the wgmma path, full INT8).
void check_case(int64_t d, int64_t n, bool causal, bool gqa, uint64_t seed, bool half, kernels::KernelPath path,
                bool across = false) {
  Problem p;
  p.batch = 2, p.q_heads = 4, p.kv_heads = gqa ? 1 : 4, p.head_dim = d, p.q_len = n, p.kv_len = n, p.causal = causal;
  const QKV in = data::generate(p, "normal", ParamValues::defaults(data::find_generator("normal")->params), seed);
  const TensorF64 truth = attention_fp64(p, in);
  const VariantSpec& f = *find_variant("int_flash");
  ParamValues params = ParamValues::defaults(f.params);
  params.set(f.params, "v_fp16", half, "test");
  params.set(f.params, "pv_accumulation", across ? "across_tiles" : "per_tile", "test");
  // The codes use the running max after each B_c-key tile: the reference runs at the kernel's B_c.
  const int arch = path == kernels::KernelPath::warpgroup_mma ? 90 : 80;
  params.set(f.params, "block_c", int64_t(find_kernel_traits("int_flash", int(d), arch)->block_c), "test");
  const ReferenceOutput ref = f.reference(p, in, params, {});
  const kernels::IntFlashOutput out =
      kernels::int_flash_once(p, kernels::upload_int8(p, in, half), path, false, {.pv_across_tiles = across});
  INFO(fmt::format("{} d={} N={} causal={} gqa={} half={} across_tiles={} seed={}", kernels::to_string(out.path), d, n,
                   causal, gqa, half, across, seed));
  REQUIRE(out.path == path);
  double max_v = 0;
  for (float x : in.v.values()) max_v = std::max(max_v, double(std::abs(x)));
  int64_t bad = 0;
  for (int64_t i = 0; i < out.o.size(); ++i) {
    const double r = ref.o.data()[i], k = out.o.data()[i];
    // Full INT8: one flipped P code (above). Half-INT8: flash2's bound, one FP16 ulp of P̃ and of O.
    const double tol = half ? 0x1p-10 * (max_v + std::abs(r)) : 2 * max_v / 127 + 0x1p-10 * std::abs(r);
    if (std::abs(k - r) > tol && bad++ < 3) FAIL_CHECK(fmt::format("o[{}] = {} vs {}", i, k, r));
  }
  CHECK(bad == 0);
  const std::vector<double>& ref_lse = ref.probes.at("lse").values;
  for (size_t i = 0; i < out.lse.size(); ++i)
    if (std::abs(out.lse[i] - ref_lse[i]) > 1e-3 * (1 + std::abs(ref_lse[i])) && bad++ < 3)
      FAIL_CHECK(fmt::format("lse[{}] = {} vs {}", i, out.lse[i], ref_lse[i]));
  const double err_k = compare_to_truth(out.o, truth).rel_l2, err_r = compare_to_truth(ref.o, truth).rel_l2;
  INFO(fmt::format("rel_l2 kernel {:.4e} reference {:.4e}", err_k, err_r));
  CHECK(err_k <= (half ? 1.25 : 1.05) * err_r + 1e-5);
}

TEST_CASE("int_flash kernel equals the int_flash reference up to rare P-code flips", "[gpu][kernels]") {
  const kernels::DeviceInfo dev = kernels::probe_device();
  if (!dev.usable) ATTNLAB_SKIP(dev.reason);
  const uint64_t seed = fresh_seed();
  if (!kernels::warpgroup_mma_available()) WARN("no sm_90a kernel on this GPU: only the mma.sync kernels are tested");
  for (int64_t d : {64, 128})
    for (kernels::KernelPath path : paths_for(d))
      for (int64_t n : {1, 100, 1024, 4097})
        for (bool causal : {false, true})
          for (bool gqa : {false, true})
            for (bool half : {false, true}) check_case(d, n, causal, gqa, seed + n + d, half, path);
}

// The GPU quantizes int_flash's inputs (quantize_int8.h) by the reference quantizer's rules; codes and
// scales must be identical, element for element, including the edge cases of those rules: an all-zero
// row (scale 1), a row whose scale would be subnormal (scale 1), outlier channels (llm_like data).
TEST_CASE("int_flash inputs quantized on the GPU equal the reference quantizer's, bit for bit", "[gpu][kernels]") {
  const kernels::DeviceInfo dev = kernels::probe_device();
  if (!dev.usable) ATTNLAB_SKIP(dev.reason);
  Problem p;
  p.batch = 2, p.q_heads = 4, p.kv_heads = 2, p.head_dim = 128, p.q_len = 77, p.kv_len = 200;
  const uint64_t seed = fresh_seed();
  QKV in = data::generate(p, "llm_like", ParamValues::defaults(data::find_generator("llm_like")->params), seed);
  for (int64_t c = 0; c < p.head_dim; ++c) in.q.at(0, 1, 5, c) = 0.f, in.k.at(1, 0, 9, c) = 1e-39f * float(c % 3);
  INFO(fmt::format("seed={}", seed));
  const kernels::IntFlashInputs gpu = kernels::upload_int8(p, in, false);
  std::vector<int8_t> q(gpu.q.bytes()), k(gpu.k.bytes()), vt(gpu.vt.bytes());
  REQUIRE(cudaMemcpy(q.data(), gpu.q.as<void>(), q.size(), cudaMemcpyDeviceToHost) == cudaSuccess);
  REQUIRE(cudaMemcpy(k.data(), gpu.k.as<void>(), k.size(), cudaMemcpyDeviceToHost) == cudaSuccess);
  REQUIRE(cudaMemcpy(vt.data(), gpu.vt.as<void>(), vt.size(), cudaMemcpyDeviceToHost) == cudaSuccess);
  const int64_t d = p.head_dim, pad = gpu.kv_pad;
  auto host = [](const float* x, int64_t rows, int64_t cols, quant::Granularity g) {
    return quant::quantize(x, rows, cols, quant::Spec{.bits = 8, .granularity = g, .q_max = 127});
  };
  int64_t bad = 0;
  for (int64_t b = 0; b < p.batch; ++b) {
    for (int64_t h = 0; h < p.q_heads; ++h) {
      const quant::Quantized x = host(in.q.head(b, h).data(), p.q_len, d, quant::Granularity::token);
      const int64_t at = (b * p.q_heads + h) * p.q_len;
      for (int64_t r = 0; r < p.q_len; ++r) {
        bad += gpu.scales_q[size_t(at + r)] != x.scale[size_t(r)];
        for (int64_t c = 0; c < d; ++c) bad += q[size_t((at + r) * d + c)] != x.q[size_t(r * d + c)];
      }
    }
    for (int64_t h = 0; h < p.kv_heads; ++h) {
      const int64_t bkv = b * p.kv_heads + h;
      const quant::Quantized x = host(in.k.head(b, h).data(), p.kv_len, d, quant::Granularity::token);
      const quant::Quantized y = host(in.v.head(b, h).data(), p.kv_len, d, quant::Granularity::tensor);
      bad += gpu.scales_v[size_t(bkv)] != y.scale[0];
      for (int64_t r = 0; r < p.kv_len; ++r) {
        bad += gpu.scales_k[size_t(bkv * pad + r)] != x.scale[size_t(r)];
        for (int64_t c = 0; c < d; ++c) {
          bad += k[size_t((bkv * p.kv_len + r) * d + c)] != x.q[size_t(r * d + c)];
          const int64_t pos = r / 16 * 16 + kernels::vt_position_of(int(r));  // where key r sits (int_flash.h)
          bad += vt[size_t((bkv * d + c) * pad + pos)] != y.q[size_t(r * d + c)];
        }
      }
    }
  }
  CHECK(bad == 0);
  CHECK(gpu.scales_q[size_t(1 * p.q_len + 5)] == 1.0f);  // the zero row: scale 1 by the rule
  CHECK(gpu.scales_k[size_t(2 * pad + 9)] == 1.0f);      // batch 1, KV head 0, key 9: subnormal span → 1
}

// Alg. 1 l. 9's integer part is deterministic: whatever the MMA shape and order, the kernel's INT32
// S must equal Q_int·K_intᵀ computed here from the same codes (read back from the device), element for
// element, at every position a row sees.
TEST_CASE("int_flash kernel: INT32 scores equal Q_int·K_intᵀ exactly", "[gpu][kernels]") {
  const kernels::DeviceInfo dev = kernels::probe_device();
  if (!dev.usable) ATTNLAB_SKIP(dev.reason);
  for (int64_t d : {64, 128})
    for (kernels::KernelPath path : paths_for(d))
      for (bool half : {false, true})
        for (const kernels::IntFlashSchedule& loads : loads_for(path)) {
          Problem p;
          p.batch = 2, p.q_heads = 4, p.kv_heads = 2, p.head_dim = d, p.q_len = 300, p.kv_len = 300, p.causal = true;
          const uint64_t seed = fresh_seed();
          const QKV in = data::generate(p, "llm_like", ParamValues::defaults(data::find_generator("llm_like")->params), seed);
          const kernels::IntFlashInputs dev_in = kernels::upload_int8(p, in, half);
          const kernels::IntFlashOutput out = kernels::int_flash_once(p, dev_in, path, true, loads);
          INFO(fmt::format("{} d={} half={} {} seed={}", kernels::to_string(out.path), d, half, describe(loads), seed));
          std::vector<int8_t> q(dev_in.q.bytes()), k(dev_in.k.bytes());
          REQUIRE(cudaMemcpy(q.data(), dev_in.q.as<void>(), q.size(), cudaMemcpyDeviceToHost) == cudaSuccess);
          REQUIRE(cudaMemcpy(k.data(), dev_in.k.as<void>(), k.size(), cudaMemcpyDeviceToHost) == cudaSuccess);
          int64_t checked = 0, bad = 0;
          for (int64_t bh = 0; bh < p.batch * p.q_heads; ++bh) {
            const int64_t bkv = (bh / p.q_heads) * p.kv_heads + (bh % p.q_heads) / (p.q_heads / p.kv_heads);
            for (int64_t r = 0; r < p.q_len; ++r)
              for (int64_t c = 0; c < p.visible_keys(r); ++c) {
                int64_t dot = 0;
                for (int64_t x = 0; x < d; ++x)
                  dot += int64_t(q[size_t((bh * p.q_len + r) * d + x)]) * k[size_t((bkv * p.kv_len + c) * d + x)];
                const int32_t got = out.scores[size_t((bh * p.q_len + r) * p.kv_len + c)];
                ++checked;
                if (got != dot && bad++ < 3) FAIL_CHECK(fmt::format("S[{}, {}, {}] = {} vs {}", bh, r, c, got, dot));
              }
          }
          CHECK(bad == 0);
          CHECK(checked > 0);
        }
}

TEST_CASE("int_flash kernel: small shapes for the sanitizers", "[gpu][sanitize]") {
  const kernels::DeviceInfo dev = kernels::probe_device();
  if (!dev.usable) ATTNLAB_SKIP(dev.reason);
  for (int64_t d : {64, 128})
    for (kernels::KernelPath path : paths_for(d))
      for (bool half : {false, true}) check_case(d, d == 128 ? 300 : 100, true, true, 7, half, path);
}

// The wgmma kernel's three loads run the same steps (int_flash_sm90.cu: issue S, issue P·V, softmax, pack P,
// finish the tile) on the same bytes in the same order on each warpgroup's 64 rows: where they differ is who copies
// K/V (a producer warpgroup's TMA loads into an mbarrier ring, or every thread's cp.async into three stages with a
// CTA barrier per tile) and when each warpgroup may issue its MMAs (ping-pong). The TMA loads zero-fill past kv_len
// (K, FP16 V) and kv_pad (Vᵀ, s_K) as the cp.async copies do. So O and the logsumexp must be the same bits, not
// merely close: one element of either that differs, or that no kernel wrote (a NaN of the poisoned output), fails.
int64_t differing(const kernels::IntFlashOutput& x, const kernels::IntFlashOutput& y) {
  auto differ = [](float a, float b) {
    return std::bit_cast<uint32_t>(a) != std::bit_cast<uint32_t>(b) || std::isnan(a);
  };
  int64_t n = 0;
  for (int64_t i = 0; i < x.o.size(); ++i) n += differ(x.o.data()[i], y.o.data()[i]);
  for (size_t i = 0; i < x.lse.size(); ++i) n += differ(x.lse[i], y.lse[i]);
  return n;
}

// One shape, full and half INT8: the default loads against each other one. Seeds are fixed and printed.
void check_loads_agree(int64_t d, int64_t nq, int64_t nkv, bool causal, int64_t q_heads, int64_t kv_heads,
                       uint64_t seed) {
  Problem p;
  p.batch = 2, p.q_heads = q_heads, p.kv_heads = kv_heads, p.head_dim = d, p.q_len = nq, p.kv_len = nkv;
  p.causal = causal;
  const QKV in = data::generate(p, "llm_like", ParamValues::defaults(data::find_generator("llm_like")->params), seed);
  const std::vector<kernels::IntFlashSchedule> loads = loads_for(kernels::KernelPath::warpgroup_mma);
  for (bool half : {false, true}) {
    const kernels::IntFlashInputs dev_in = kernels::upload_int8(p, in, half);
    auto run = [&](const kernels::IntFlashSchedule& l) {
      return kernels::int_flash_once(p, dev_in, kernels::KernelPath::warpgroup_mma, false, l);
    };
    const kernels::IntFlashOutput first = run(loads[0]);
    for (size_t i = 1; i < loads.size(); ++i) {
      INFO(fmt::format("d={} Nq={} Nkv={} causal={} heads={}/{} half={} seed={}: {} against {}", d, nq, nkv, causal,
                       q_heads, kv_heads, half, seed, describe(loads[0]), describe(loads[i])));
      CHECK(differing(first, run(loads[i])) == 0);
    }
  }
}

// "" where the wgmma kernels can run; else device_reason.h's words, e.g. "sm_90a needed (…)".
std::string wgmma_refusal() { return kernels::warpgroup_mma_refusal(kernels::probe_device()); }

TEST_CASE("int_flash wgmma: the TMA producer and ping-pong give the cp.async pipeline's bits", "[gpu][kernels]") {
  if (const std::string why = wgmma_refusal(); !why.empty()) ATTNLAB_SKIP(why);
  for (int64_t d : {64, 128})
    for (bool causal : {false, true}) {
      check_loads_agree(d, 1000, 1000, causal, 8, 2, 11);  // GQA 4:1, N not a multiple of 128
      check_loads_agree(d, 1024, 1024, causal, 4, 4, 12);  // MHA, whole tiles
      check_loads_agree(d, 77, 1000, causal, 8, 2, 13);    // 77 query rows (one partial row block), bottom-right causal
      check_loads_agree(d, 1000, 77, causal, 8, 8, 14);    // 77 keys (one partial tile); causal: early rows see none
    }
  check_loads_agree(128, 4097, 4097, true, 4, 1, 15);  // a long ring (33 tiles: the slots wrap over and over), G = 4
}

TEST_CASE("int_flash wgmma: the three loads agree on small shapes, for the sanitizers", "[gpu][sanitize]") {
  if (const std::string why = wgmma_refusal(); !why.empty()) ATTNLAB_SKIP(why);
  for (int64_t d : {64, 128}) check_loads_agree(d, 200, 300, true, 4, 2, 16);
}

// pv_accumulation = across_tiles: the wgmma kernel keeps P·V in INT32 while a row's max holds, as the reference does
// (core/variants/int_flash.cpp). The flushes happen at the same tiles in both — where a row's max moves — except
// where a score ties the running max within the ≤ 2 ulp by which the kernel's S differs (int_flash_sm90.cu, l. 9):
// then one side flushes once more, one FP32 rounding of O, far inside the P-code flip's bound above.
TEST_CASE("int_flash wgmma across_tiles equals the across_tiles reference up to rare P-code flips", "[gpu][kernels]") {
  if (const std::string why = wgmma_refusal(); !why.empty()) ATTNLAB_SKIP(why);
  const uint64_t seed = fresh_seed();
  for (int64_t d : {64, 128})
    for (int64_t n : {100, 1024, 4097})
      for (bool causal : {false, true})
        for (bool gqa : {false, true})
          check_case(d, n, causal, gqa, seed + n + d, false, kernels::KernelPath::warpgroup_mma, true);
}

// The INT32 sum is flushed every 1 040 tiles (at B_c 128; int_flash_sm90.cu's kFlushTiles): one query block over
// 1 040·128 + 300 keys, all keys equal (every weight 127, the max set by the first tile and never moved) and V = +1
// (every code 127), so each tile adds 127·127·128 = 2 064 512 to every element and 1 041 tiles would pass 2³¹ − 1.
// Flushed in time, O = (127·127·N / (127·N))·s_V = 1 to FP32 rounding, stored in FP16 (within 2⁻¹⁰, one FP16 ulp
// above 1); overflowed, the INT32 sum wraps negative and so does O.
TEST_CASE("int_flash wgmma across_tiles: the INT32 sum is flushed before it can overflow", "[gpu][kernels]") {
  if (const std::string why = wgmma_refusal(); !why.empty()) ATTNLAB_SKIP(why);
  Problem p;
  p.batch = 1, p.q_heads = 1, p.kv_heads = 1, p.head_dim = 64, p.q_len = 64, p.kv_len = 1040 * 128 + 300;
  QKV in{Tensor(p.q_shape()), Tensor(p.kv_shape()), Tensor(p.kv_shape())};
  for (int64_t i = 0; i < in.q.size(); ++i) in.q.data()[i] = std::sin(0.3f * float(i));
  for (int64_t i = 0; i < in.k.size(); ++i) in.k.data()[i] = std::cos(0.7f * float(i % p.head_dim));
  for (int64_t i = 0; i < in.v.size(); ++i) in.v.data()[i] = 1.0f;
  const kernels::IntFlashOutput out = kernels::int_flash_once(p, kernels::upload_int8(p, in, false),
                                                              kernels::KernelPath::warpgroup_mma, false,
                                                              {.pv_across_tiles = true});
  int64_t bad = 0;
  for (int64_t i = 0; i < out.o.size(); ++i)
    if (std::abs(out.o.data()[i] - 1.0f) > 0x1p-10 && bad++ < 3) FAIL_CHECK(fmt::format("o[{}] = {}", i, out.o.data()[i]));
  CHECK(bad == 0);
}

// The mma.sync kernel adds P·V per tile: across_tiles is refused there, with the reason, not run as per_tile.
TEST_CASE("int_flash: across_tiles is refused where the mma.sync kernel would run it", "[gpu][kernels]") {
  const kernels::DeviceInfo dev = kernels::probe_device();
  if (!dev.usable) ATTNLAB_SKIP(dev.reason);
  const VariantSpec& f = *find_variant("int_flash");
  VariantRequest v{"int_flash", ParamValues::defaults(f.params), ""};
  v.params.set(f.params, "pv_accumulation", "across_tiles", "test");  // block_c 64: the mma.sync kernel's width
  Experiment e;
  e.problem.batch = 1, e.problem.q_heads = 1, e.problem.kv_heads = 1, e.problem.head_dim = 64;
  e.problem.q_len = 256, e.problem.kv_len = 256;
  CHECK(kernels::int_flash_cannot_run(v, e, dev).find("across_tiles runs on the wgmma kernel") != std::string::npos);
  Problem p = e.problem;
  const QKV in = data::generate(p, "normal", ParamValues::defaults(data::find_generator("normal")->params), 3);
  const kernels::IntFlashInputs dev_in = kernels::upload_int8(p, in, false);
  kernels::IntFlashArgs a = kernels::int_flash_args(p, dev_in, nullptr, nullptr);
  a.path = kernels::KernelPath::warp_mma, a.pv_across_tiles = true;
  CHECK(kernels::int_flash_forward(a, nullptr) == cudaErrorNotSupported);
}

TEST_CASE("Vᵀ key permutation is a permutation of each 16-key group", "[kernels]") {
  std::vector<int> seen(16, 0);
  for (int pos = 0; pos < 16; ++pos) ++seen[size_t(kernels::vt_key_at(pos))];
  for (int c : seen) CHECK(c == 1);
  CHECK(kernels::vt_key_at(0) == 0);
  CHECK(kernels::vt_key_at(2) == 8);   // t = 0, e = 2: the second n8 tile's first column
  CHECK(kernels::vt_key_at(5) == 3);   // t = 1, e = 1
  // vt_position_of is its inverse, in every group (key 16g + k sits where key k does).
  for (int pos = 0; pos < 16; ++pos) CHECK(kernels::vt_position_of(kernels::vt_key_at(pos)) == pos);
  for (int key = 0; key < 64; ++key) CHECK(kernels::vt_key_at(kernels::vt_position_of(key)) == key % 16);
}

}  // namespace
}  // namespace attnlab
