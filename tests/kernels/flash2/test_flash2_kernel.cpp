// The flash2 CUDA kernel against the flash2 reference (core/variants/flash2.cpp), on the GPU. Skipped,
// with the reason printed, where there is no usable GPU.
//
// Inputs are fresh random draws every run (seeded from the clock, printed on failure); outputs are
// poisoned before the launch (flash2_once). Both compute the same function from the same FP16 inputs;
// they differ only in FP32 rounding: the kernel's exp is ex2 of a pre-scaled score (≈ 2 ulp), its sums
// run in a different order, the wgmma kernel's epilogue multiplies by a rounded 1/ℓ (≤ 2⁻²³ relative before O's
// FP16 store; tile_softmax.cuh's RowScale), and a P̃ that lands near an FP16 rounding boundary can round to the
// neighbouring FP16 value. Each such flip moves an output by ≤ 2⁻¹¹·p̃|v|/ℓ, so per element
//   |o_kernel − o_ref| ≤ 2⁻¹⁰·(max|v| + |o_ref|)     (one FP16 ulp of the weights, one of O's store)
// and over the whole output the kernel's error against FP64 stays within 1.25× the reference's.
#include "core/ground_truth.h"
#include "core/metrics.h"
#include "core/data/generators.h"
#include "core/registry.h"
#include "kernels/common/device.h"
#include "kernels/flash2/flash2_host.h"
#include "kernels/flash2/flash2_sm90.h"
#include "sim/schedule.h"
#include "tests/catch.h"
#include "tests/support/model_cases.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <cstring>
#include <utility>

namespace attnlab {
namespace ATTNLAB_FILE_LOCAL {

constexpr double kU16 = 0x1p-11;

uint64_t fresh_seed() { return uint64_t(std::chrono::steady_clock::now().time_since_epoch().count()); }

// The kernel generations this GPU runs: mma.sync always, wgmma where the sm_90a kernel can run (its
// decode cases force one KV split, a shape the automatic choice gives to mma.sync).
std::vector<kernels::KernelPath> paths_here() {
  std::vector<kernels::KernelPath> paths{kernels::KernelPath::warp_mma};
  if (kernels::warpgroup_mma_available()) paths.push_back(kernels::KernelPath::warpgroup_mma);
  else WARN("no sm_90a kernel on this GPU: only the mma.sync kernel is tested");
  return paths;
}

// One problem against the reference; `splits` > 0 pins the decode's chains (or the prefill kernel's splits).
void check_problem(const kernels::DeviceInfo& dev, const Problem& p, uint64_t seed, kernels::KernelPath path,
                   int splits = 0, kernels::Flash2Schedule schedule = {}) {
  const int64_t d = p.head_dim, n = p.kv_len;
  const bool causal = p.causal;
  const Phase phase = p.phase;
  const QKV in = data::generate(p, "normal", ParamValues::defaults(data::find_generator("normal")->params), seed);
  const TensorF64 truth = attention_fp64(p, in);
  const VariantSpec& f = *find_variant("flash2");
  const ReferenceOutput ref = f.reference(p, in, ParamValues::defaults(f.params), {});
  const kernels::Flash2Output out =
      kernels::flash2_once(p, kernels::upload_fp16(in), dev.sm_count, path, splits, schedule);
  INFO(fmt::format("{} d={} N={} causal={} heads {}/{} {} seed={} splits={} producer={}", kernels::to_string(out.path), d,
                   n, causal, p.q_heads, p.kv_heads, to_string(phase), seed, out.splits, out.tma_producer));
  if (path != kernels::KernelPath::automatic) REQUIRE(out.path == path);
  double max_v = 0;
  for (float x : in.v.values()) max_v = std::max(max_v, double(std::abs(x)));
  int64_t bad = 0;
  for (int64_t i = 0; i < out.o.size(); ++i) {
    const double r = ref.o.data()[i], k = out.o.data()[i];
    if (std::abs(k - r) > 2 * kU16 * (max_v + std::abs(r)) && bad++ < 3) FAIL_CHECK(fmt::format("o[{}] = {} vs {}", i, k, r));
  }
  CHECK(bad == 0);
  const std::vector<double>& ref_lse = ref.probes.at("lse").values;
  for (size_t i = 0; i < out.lse.size(); ++i)
    if (std::abs(out.lse[i] - ref_lse[i]) > 1e-4 * (1 + std::abs(ref_lse[i])) && bad++ < 3)
      FAIL_CHECK(fmt::format("lse[{}] = {} vs {}", i, out.lse[i], ref_lse[i]));
  const double err_k = compare_to_truth(out.o, truth).rel_l2, err_r = compare_to_truth(ref.o, truth).rel_l2;
  INFO(fmt::format("rel_l2 kernel {:.3e} reference {:.3e}", err_k, err_r));
  CHECK(err_k <= 1.25 * err_r + 1e-6);
}

void check_case(const kernels::DeviceInfo& dev, int64_t d, int64_t n, bool causal, bool gqa, Phase phase,
                uint64_t seed, kernels::KernelPath path) {
  Problem p;
  p.batch = 2, p.q_heads = 4, p.kv_heads = gqa ? 1 : 4, p.head_dim = d, p.kv_len = n;
  p.q_len = phase == Phase::decode ? 1 : n;
  p.causal = causal, p.phase = phase;
  check_problem(dev, p, seed, path);
}

// The decode kernel (kernels/flash2/flash2_decode.cu) serves every group size 1–8 from one load of each tile: the
// group's heads are MMA columns, those past it padding. Ragged lengths (a partial 32-token tile, a single key), one
// chain (the kernel writes O itself) and the split rule's many chains (the merge), d 64 and 128; a group of 16 runs
// on the prefill kernel at q_len 1, as before. The bound is the one above: only P̃'s rounding max and the sums' order
// differ from the reference. Where the tiles arrive by TMA (sm_90a, the default loads) the cp.async chains must give
// the same bits: the loads change, not one operation on the values.
TEST_CASE("flash2 decode kernel: every GQA group 1–8, ragged N, one chain and many", "[gpu][kernels]") {
  const kernels::DeviceInfo dev = kernels::probe_device();
  if (!dev.usable) ATTNLAB_SKIP(dev.reason);
  const uint64_t seed = fresh_seed();
  const bool tma_here = kernels::warpgroup_mma_available();
  if (!tma_here) WARN("no sm_90a kernel on this GPU: only the cp.async chains are tested");
  for (int64_t d : {64, 128})
    for (int64_t group : {1, 2, 3, 4, 5, 6, 7, 8, 16})
      for (int64_t n : {1, 33, 1000, 4097})
        for (int splits : {1, 0}) {
          Problem p;
          p.batch = 2, p.kv_heads = 2, p.q_heads = 2 * group, p.head_dim = d, p.kv_len = n, p.q_len = 1;
          p.causal = n % 2 == 1, p.phase = Phase::decode;
          kernels::Flash2Args a;  // the grouped decode kernel takes every group up to 8; 16 runs on the prefill kernel
          a.batch = int(p.batch), a.q_heads = int(p.q_heads), a.kv_heads = int(p.kv_heads), a.q_len = 1;
          a.kv_len = int(n), a.head_dim = int(d);
          CHECK(kernels::flash2_decode_takes(a) == (group <= 8));
          const uint64_t s = seed + uint64_t(d + group + n);
          check_problem(dev, p, s, kernels::KernelPath::automatic, splits);
          if (!tma_here || group > 8) continue;
          const QKV in = data::generate(p, "normal", ParamValues::defaults(data::find_generator("normal")->params), s);
          const kernels::Flash2Inputs inputs = kernels::upload_fp16(in);
          const kernels::Flash2Output by_tma =
              kernels::flash2_once(p, inputs, dev.sm_count, kernels::KernelPath::automatic, splits, {.tma_producer = true});
          const kernels::Flash2Output by_cp_async =
              kernels::flash2_once(p, inputs, dev.sm_count, kernels::KernelPath::automatic, splits, {.tma_producer = false});
          INFO(fmt::format("d={} group={} N={} splits={} seed={}: TMA against cp.async", d, group, n, by_tma.splits, s));
          CHECK(by_tma.tma_producer);
          CHECK_FALSE(by_cp_async.tma_producer);
          CHECK(by_tma.splits == by_cp_async.splits);
          CHECK(std::memcmp(by_tma.o.data(), by_cp_async.o.data(), size_t(by_tma.o.size()) * sizeof(float)) == 0);
          CHECK(by_tma.lse == by_cp_async.lse);
        }
}

TEST_CASE("flash2 kernel equals the flash2 reference within FP32 rounding", "[gpu][kernels]") {
  const kernels::DeviceInfo dev = kernels::probe_device();
  if (!dev.usable) ATTNLAB_SKIP(dev.reason);
  const uint64_t seed = fresh_seed();
  for (kernels::KernelPath path : paths_here())
    for (int64_t d : {64, 128})
      for (int64_t n : {1, 100, 1024, 4097})
        for (bool causal : {false, true})
          for (bool gqa : {false, true})
            for (Phase phase : {Phase::prefill, Phase::decode})
              check_case(dev, d, n, causal, gqa, phase, seed + n + d, path);
}

// The wgmma generation's three schedules on 128-key tiles — a producer warpgroup's TMA into the mbarrier ring with the
// consumers in ping-pong or not, and every thread's cp.async with a CTA barrier per tile (kernels/flash2/flash2_sm90.cu)
// — run the same operations on the same values in the same order: their outputs are equal bit for bit. Every GQA
// group 1–8, ragged N (a partial last tile, fewer keys than one tile), q_len below kv_len (bottom-right causal), d 64
// and 128; and the producer's against the reference on each.
TEST_CASE("flash2 wgmma kernel: the producer ring and the cp.async pipeline give the same bits", "[gpu][kernels]") {
  const kernels::DeviceInfo dev = kernels::probe_device();
  if (!dev.usable) ATTNLAB_SKIP(dev.reason);
  if (!kernels::warpgroup_mma_available()) ATTNLAB_SKIP(kernels::warpgroup_mma_refusal(dev));
  const uint64_t seed = fresh_seed();
  const kernels::Flash2Schedule schedules[] = {{true, true, false}, {true, false, false}, {false, false, false}};
  for (int64_t d : {64, 128})
    for (int64_t group : {1, 2, 3, 4, 5, 6, 7, 8})
      for (auto [q_len, kv_len] : {std::pair<int64_t, int64_t>{70, 70}, {300, 300}, {129, 1000}, {1024, 1024}}) {
        const bool causal = (group + q_len) % 2 == 0;
        Problem p;
        p.batch = 2, p.kv_heads = 2, p.q_heads = 2 * group, p.head_dim = d, p.q_len = q_len, p.kv_len = kv_len;
        p.causal = causal;
        const uint64_t s = seed + uint64_t(d + group + kv_len);
        const QKV in = data::generate(p, "normal", ParamValues::defaults(data::find_generator("normal")->params), s);
        const kernels::Flash2Inputs inputs = kernels::upload_fp16(in);
        std::vector<kernels::Flash2Output> outs;
        for (const kernels::Flash2Schedule& schedule : schedules)
          outs.push_back(kernels::flash2_once(p, inputs, dev.sm_count, kernels::KernelPath::warpgroup_mma, 0, schedule));
        INFO(fmt::format("d={} group={} q_len={} kv_len={} causal={} seed={}", d, group, q_len, kv_len, causal, s));
        CHECK(outs[0].tma_producer);
        CHECK_FALSE(outs[2].tma_producer);
        for (size_t k = 1; k < outs.size(); ++k) {
          INFO("schedule " << k << " against the producer with ping-pong");
          CHECK(std::memcmp(outs[k].o.data(), outs[0].o.data(), size_t(outs[0].o.size()) * sizeof(float)) == 0);
          CHECK(outs[k].lse == outs[0].lse);
        }
        if (q_len == 300) check_problem(dev, p, s, kernels::KernelPath::warpgroup_mma, 0, schedules[0]);
      }
}

// FlashAttention-3's non-causal tile (flash2.h's wide_tile, the default): 176 keys, two in the ring, at d 128 with the
// producer's loads. Only the order of the accumulation changes — 176 keys a tile instead of 128 — so the reference's
// bound holds as for the 128-key tile (check_problem: 2·2⁻¹¹ relative on O, 10⁻⁴ on the logsumexp). Every GQA group
// 1–8, ragged N (one partial tile, fewer keys than one tile, a last tile of one key: 1057 = 6·176 + 1), q_len below
// and above kv_len, with and without ping-pong; causal problems and d 64 keep 128 keys.
TEST_CASE("flash2 wgmma kernel: the 176-key tile equals the reference", "[gpu][kernels]") {
  const kernels::DeviceInfo dev = kernels::probe_device();
  if (!dev.usable) ATTNLAB_SKIP(dev.reason);
  if (!kernels::warpgroup_mma_available()) ATTNLAB_SKIP(kernels::warpgroup_mma_refusal(dev));
  const uint64_t seed = fresh_seed();
  for (int64_t group : {1, 2, 3, 4, 5, 6, 7, 8})
    for (auto [q_len, kv_len] : {std::pair<int64_t, int64_t>{70, 70}, {300, 176}, {129, 1057}, {1024, 1024}, {500, 100}}) {
      Problem p;
      p.batch = 2, p.kv_heads = 2, p.q_heads = 2 * group, p.head_dim = 128, p.q_len = q_len, p.kv_len = kv_len;
      const uint64_t s = seed + uint64_t(group + kv_len);
      INFO(fmt::format("group={} q_len={} kv_len={} seed={}", group, q_len, kv_len, s));
      check_problem(dev, p, s, kernels::KernelPath::warpgroup_mma, 0, {.ping_pong = group % 2 == 0});
      const QKV in = data::generate(p, "normal", ParamValues::defaults(data::find_generator("normal")->params), s);
      const kernels::Flash2Inputs inputs = kernels::upload_fp16(in);
      CHECK(kernels::flash2_once(p, inputs, dev.sm_count, kernels::KernelPath::warpgroup_mma).block_c == kernels::kWideTile);
      CHECK(kernels::flash2_once(p, inputs, dev.sm_count, kernels::KernelPath::warpgroup_mma, 0, {.wide_tile = false}).block_c == 128);
      p.causal = true;
      CHECK(kernels::flash2_once(p, inputs, dev.sm_count, kernels::KernelPath::warpgroup_mma).block_c == 128);
    }
  Problem d64;
  d64.batch = 1, d64.q_heads = d64.kv_heads = 2, d64.head_dim = 64, d64.q_len = d64.kv_len = 300;
  const QKV in = data::generate(d64, "normal", ParamValues::defaults(data::find_generator("normal")->params), seed);
  CHECK(kernels::flash2_once(d64, kernels::upload_fp16(in), dev.sm_count, kernels::KernelPath::warpgroup_mma).block_c == 128);
}

// No GPU needed: the persistent CTAs' order (flash2_sm90_persistent_order) hands out every row block once — a
// bijection of [0, blocks·B·Hq) onto (batch·head, block), a short last band included — x-major within bands of
// band_heads heads; and the band holds as many heads' K/V as fit in half the L2 (flash2_sm90_band_heads), GQA's shared.
TEST_CASE("flash2 persistent CTAs: the row blocks' order and the L2 band", "[kernels]") {
  for (int batch : {1, 3})
    for (int heads : {4, 7, 16})
      for (int blocks : {1, 5, 32})
        for (int band : {1, 3, 8, 64}) {
          kernels::Flash2Args a;
          a.batch = batch, a.q_heads = heads, a.kv_heads = heads, a.band_heads = std::min(band, batch * heads);
          INFO(fmt::format("B={} H={} blocks={} band={}", batch, heads, blocks, a.band_heads));
          std::vector<int> seen(size_t(batch * heads * blocks), 0);
          int previous_band = 0;
          for (int w = 0; w < batch * heads * blocks; ++w) {
            int bh = -1, x = -1;
            kernels::flash2_sm90_persistent_order(a, w, blocks, bh, x);
            REQUIRE((bh >= 0 && bh < batch * heads && x >= 0 && x < blocks));
            ++seen[size_t(bh * blocks + x)];
            CHECK(bh / a.band_heads >= previous_band);  // bands one after the other
            previous_band = bh / a.band_heads;
            if (w > 0 && bh % a.band_heads != 0) {  // within a band: the next head, same x
              int bh0 = -1, x0 = -1;
              kernels::flash2_sm90_persistent_order(a, w - 1, blocks, bh0, x0);
              CHECK((bh0 == bh - 1 && x0 == x));
            }
          }
          for (int n : seen) CHECK(n == 1);
        }
  kernels::Flash2Args a;
  a.batch = 4, a.q_heads = a.kv_heads = 16, a.kv_len = 4096, a.head_dim = 128;
  const int l2 = 50 * 1024 * 1024;  // an H100's
  CHECK(kernels::flash2_sm90_band_heads(a, l2) == 12);  // 25 MiB over 2 MiB of K and V a head
  a.kv_heads = 4;                                       // GQA 4:1: a head's share of its group's K/V is a quarter
  CHECK(kernels::flash2_sm90_band_heads(a, l2) == 50);
  a.kv_len = 1 << 22;  // 8 GiB a head: still one head a band
  CHECK(kernels::flash2_sm90_band_heads(a, l2) == 1);
  a.kv_len = 16, a.kv_heads = 16;  // every head fits: all of them, no more
  CHECK(kernels::flash2_sm90_band_heads(a, l2) == 64);
}

// No GPU needed: the tile the kernel backend launches (flash2_schedule_of's wide_tile, which flash2_sm90_wide_tile
// reads with the same causal and producer conditions) is the cost model's block_c, wherever kv_tile = auto weighs the
// wide tile's padding (N 4096: 128 keys; 4097, 8192, 16384: 176) and wherever it cannot run (causal, d 64, kv_tile
// 128, cp.async loads).
TEST_CASE("flash2 wgmma kernel: the backend's tile is the cost model's", "[kernels][sim]") {
  for (int64_t d : {64, 128})
    for (bool causal : {false, true})
      for (int64_t n : {100, 4096, 4097, 8192, 16384})
        for (auto [param, value] : {std::pair<const char*, const char*>{nullptr, nullptr}, {"kv_tile", "128"},
                                    {"kv_loads", "cp_async"}}) {
          Problem p;
          p.batch = 4, p.q_heads = p.kv_heads = 16, p.head_dim = d, p.q_len = p.kv_len = n, p.causal = causal;
          const VariantRequest v = param ? test::request("flash2", {{param, value}}) : test::request("flash2");
          INFO(fmt::format("d={} causal={} N={} {}={}", d, causal, n, param ? param : "-", value ? value : "-"));
          const bool wide = sim::make_schedule(p, v, test::h100()).block_c == kernels::kWideTile;
          CHECK(kernels::flash2_schedule_of(v, p).wide_tile == wide);
          CHECK(wide == (d == 128 && !causal && !param && n != 4096 && n != 100));
        }
}

// Persistent CTAs (flash2.h's persistent, row_blocks = persistent): one CTA per SM loops over row blocks, the producer
// loading each block's Q and K/V into a ring that runs on across them. Only who runs a row block and when changes, not
// one operation on its values, so the output equals the grid's bit for bit. Problems of more row blocks than the GPU
// has SMs (every CTA takes several, its ring's slots and phases carried over, in the band order of
// flash2_sm90.cu's persistent_order), causal ones whose first row blocks see no key (q_len > kv_len,
// bottom-right: nothing to load for them, and the next block's Q phase must not move), ragged ends, GQA, the 176- and
// 128-key tiles, with and without ping-pong, d 64 and 128; and against the reference.
TEST_CASE("flash2 wgmma kernel: persistent CTAs give the grid's bits", "[gpu][kernels]") {
  const kernels::DeviceInfo dev = kernels::probe_device();
  if (!dev.usable) ATTNLAB_SKIP(dev.reason);
  if (!kernels::warpgroup_mma_available()) ATTNLAB_SKIP(kernels::warpgroup_mma_refusal(dev));
  const uint64_t seed = fresh_seed();
  struct Shape {
    int64_t batch, q_heads, kv_heads, q_len, kv_len;
    bool causal;
  };
  const int64_t h = 8 * (dev.sm_count / 8 + 1);  // more heads than SMs: with q_len ≥ 257, ≥ 3 row blocks per CTA
  const Shape shapes[] = {{1, h, h / 4, 300, 300, false},
                          {1, h, h / 2, 300, 1057, false},
                          {2, h / 2, h / 8, 520, 520, true},
                          {1, h, h / 8, 600, 300, true},  // rows 0–299 see no key: blocks 0 and 1 of 5 have no tile
                          {1, 6, 2, 1100, 1100, true},    // fewer row blocks than SMs
                          {2, 4, 4, 64, 64, false}};
  for (int64_t d : {64, 128})
    for (const Shape& sh : shapes)
      for (bool ping_pong : {true, false})
        for (bool wide_tile : {true, false}) {
          if (!wide_tile && (d == 64 || sh.causal)) continue;  // the 128-key tile already
          Problem p;
          p.batch = sh.batch, p.q_heads = sh.q_heads, p.kv_heads = sh.kv_heads, p.head_dim = d;
          p.q_len = sh.q_len, p.kv_len = sh.kv_len, p.causal = sh.causal;
          const uint64_t s = seed + uint64_t(d + sh.q_len + sh.kv_len);
          INFO(fmt::format("d={} B={} heads={}/{} q_len={} kv_len={} causal={} ping_pong={} wide_tile={} seed={}", d,
                           sh.batch, sh.q_heads, sh.kv_heads, sh.q_len, sh.kv_len, sh.causal, ping_pong, wide_tile, s));
          const QKV in = data::generate(p, "normal", ParamValues::defaults(data::find_generator("normal")->params), s);
          const kernels::Flash2Inputs inputs = kernels::upload_fp16(in);
          const kernels::Flash2Schedule grid{.ping_pong = ping_pong, .wide_tile = wide_tile};
          kernels::Flash2Schedule persistent = grid;
          persistent.persistent = true;
          const kernels::Flash2Output a = kernels::flash2_once(p, inputs, dev.sm_count, kernels::KernelPath::warpgroup_mma, 0, grid);
          const kernels::Flash2Output b =
              kernels::flash2_once(p, inputs, dev.sm_count, kernels::KernelPath::warpgroup_mma, 0, persistent);
          CHECK_FALSE(a.persistent);
          CHECK(b.persistent);
          CHECK(std::memcmp(b.o.data(), a.o.data(), size_t(a.o.size()) * sizeof(float)) == 0);
          CHECK(b.lse == a.lse);
          if (ping_pong) {  // the grid's order (row_blocks = persistent_head_major): CTA c's blocks c, c + SMs, … head by head
            kernels::Flash2Schedule head_major = persistent;
            head_major.head_major = true;
            const kernels::Flash2Output c =
                kernels::flash2_once(p, inputs, dev.sm_count, kernels::KernelPath::warpgroup_mma, 0, head_major);
            CHECK(c.persistent);
            CHECK(std::memcmp(c.o.data(), a.o.data(), size_t(a.o.size()) * sizeof(float)) == 0);
            CHECK(c.lse == a.lse);
          }
          // Each CTA's next block from the counter (row_blocks = persistent_dynamic, head by head): the producer's
          // hand-overs, the turns closed and reopened around blocks with no tile (a CTA meets blocks with and without
          // a tile in turn), whichever CTA takes which block.
          kernels::Flash2Schedule dynamic = persistent;
          dynamic.head_major = dynamic.dynamic_order = true;  // flash2_schedule_of's pair
          const kernels::Flash2Output e =
              kernels::flash2_once(p, inputs, dev.sm_count, kernels::KernelPath::warpgroup_mma, 0, dynamic);
          CHECK((e.persistent && e.dynamic_order));
          CHECK_FALSE(b.dynamic_order);
          CHECK(std::memcmp(e.o.data(), a.o.data(), size_t(a.o.size()) * sizeof(float)) == 0);
          CHECK(e.lse == a.lse);
          const bool small = p.batch * p.q_heads * p.q_len * p.kv_len <= 20'000'000;  // the CPU reference's time
          if (ping_pong && wide_tile && small) check_problem(dev, p, s, kernels::KernelPath::warpgroup_mma, 0, persistent);
        }
}

TEST_CASE("flash2 kernel: rows that see no key are zero with logsumexp −∞", "[gpu][kernels]") {
  const kernels::DeviceInfo dev = kernels::probe_device();
  if (!dev.usable) ATTNLAB_SKIP(dev.reason);
  Problem p;
  p.batch = 1, p.q_heads = 2, p.kv_heads = 1, p.q_len = 200, p.kv_len = 70, p.head_dim = 64, p.causal = true;
  const QKV in = data::generate(p, "normal", ParamValues::defaults(data::find_generator("normal")->params), fresh_seed());
  for (kernels::KernelPath path : paths_here()) {
    const kernels::Flash2Output out = kernels::flash2_once(p, kernels::upload_fp16(in), dev.sm_count, path);
    INFO(kernels::to_string(out.path));
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t r = 0; r < 200; ++r) {
        const bool sees = p.visible_keys(r) > 0;
        CHECK(std::isinf(out.lse[size_t(h * 200 + r)]) != sees);
        if (!sees)
          for (int64_t c = 0; c < 64; ++c) CHECK(out.o.at(0, h, r, c) == 0.0f);
      }
  }
}

}  // namespace
}  // namespace attnlab

namespace attnlab {
namespace ATTNLAB_FILE_LOCAL {

// Small shapes for compute-sanitizer (memcheck, racecheck): ragged causal GQA prefill at both head dims,
// a split-KV decode that goes through the combine kernel, and the wgmma kernel's three-stage pipeline
// (300 keys: three tiles, the last ragged).
TEST_CASE("flash2 kernel: small shapes for the sanitizers", "[gpu][sanitize]") {
  const kernels::DeviceInfo dev = kernels::probe_device();
  if (!dev.usable) ATTNLAB_SKIP(dev.reason);
  for (int64_t d : {64, 128}) {
    check_case(dev, d, 100, true, true, Phase::prefill, 5, kernels::KernelPath::warp_mma);
    check_case(dev, d, 600, false, false, Phase::decode, 6, kernels::KernelPath::warp_mma);
    Problem gqa;  // the decode kernel: a group of 6 (padding columns), a ragged last tile, chains and their merge
    gqa.batch = 1, gqa.q_heads = 12, gqa.kv_heads = 2, gqa.head_dim = d, gqa.kv_len = 1001, gqa.q_len = 1;
    gqa.phase = Phase::decode;
    check_problem(dev, gqa, 8, kernels::KernelPath::warp_mma, 5);  // TMA loads where sm_90a, the default
    check_problem(dev, gqa, 8, kernels::KernelPath::warp_mma, 5, {.tma_producer = false});
    if (kernels::warpgroup_mma_available()) {  // the producer's ring (the default) and the cp.async pipeline
      check_case(dev, d, 300, true, true, Phase::prefill, 7, kernels::KernelPath::warpgroup_mma);
      Problem p;
      p.batch = 1, p.q_heads = 4, p.kv_heads = 1, p.head_dim = d, p.q_len = 129, p.kv_len = 500, p.causal = true;
      check_problem(dev, p, 9, kernels::KernelPath::warpgroup_mma, 0, {.tma_producer = false, .ping_pong = false});
      if (d == 128) {  // the 176-key tile: two ring slots, 400 keys = three tiles, the last ragged
        p.q_len = p.kv_len = 400, p.causal = false;
        check_problem(dev, p, 10, kernels::KernelPath::warpgroup_mma);
      }
      // Persistent CTAs: more row blocks than SMs (each CTA loops), each head's first two of five blocks seeing no key
      // (rows 0–299); head by head (the dynamic order's case), a CTA meets blocks with and without tiles in turn.
      Problem many;
      many.batch = 1, many.q_heads = 4 * (dev.sm_count / 16 + 1), many.kv_heads = many.q_heads / 4, many.head_dim = d;
      many.q_len = 600, many.kv_len = 300, many.causal = true;
      check_problem(dev, many, 11, kernels::KernelPath::warpgroup_mma, 0, {.persistent = true});
      check_problem(dev, many, 12, kernels::KernelPath::warpgroup_mma, 0,
                    {.persistent = true, .head_major = true, .dynamic_order = true});
    }
  }
}

}  // namespace
}  // namespace attnlab
