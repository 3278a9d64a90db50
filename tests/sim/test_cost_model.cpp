// The cost model: its byte counts equal the IO laws and the references' own counts; its times scale
// with the resource that bounds them; SAS moves the exponential from the SFU to the FMA units; bad GPU
// specs are rejected naming the field.
#include "core/kernel_traits.h"
#include "core/producer_loads.h"
#include "core/probes.h"
#include "core/config.h"
#include "core/data/generators.h"
#include "core/error.h"
#include "core/registry.h"
#include "core/variants/turbo_chains.h"
#include "sim/calibrate.h"
#include "sim/cost_model.h"
#include "sim/io_laws.h"
#include "sim/model_backend.h"
#include "sim/schedule.h"
#include "tests/catch.h"
#include "tests/support/model_cases.h"
#include "tests/support/input_error.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

namespace attnlab::sim {
namespace ATTNLAB_FILE_LOCAL {

Problem prefill(int64_t n, int64_t d, bool causal, int64_t heads = 4, int64_t kv_heads = 4) {
  Problem p;
  p.batch = 1, p.q_heads = heads, p.kv_heads = kv_heads, p.q_len = n, p.kv_len = n, p.head_dim = d;
  p.causal = causal;
  return p;
}

using test::request;
using test::h100;


double bytes_of(const Work& w, const std::string& t) { return w.bytes.count(t) ? w.bytes.at(t) : 0.0; }

TEST_CASE("flash2's schedule moves exactly the bytes of the IO law and of the reference", "[sim][model]") {
  for (int64_t d : {128, 96})  // d = 128 takes the kernel traits (128 × 64); d = 96 the variant's parameters
    for (bool causal : {false, true})
      for (int64_t n : {1, 100, 1000, 4096}) {
        const Problem p = prefill(n, d, causal);
        const Schedule s = make_schedule(p, request("flash2", {{"block_r", 64}, {"block_c", 32}}), h100());
        const Work w = s.total();
        INFO(fmt::format("d={} N={} causal={} tiles from {}", d, n, causal, s.tiles_from));
        for (const auto& [tensor, bytes] : flash_hbm_bytes(p, s.block_r, s.block_c, 2.0))
          CHECK(bytes_of(w, tensor) == bytes);
      }
  const Problem p = prefill(300, 64, true, 2, 1);
  const Schedule s = make_schedule(p, request("naive"), h100());
  for (const auto& [tensor, bytes] : naive_hbm_bytes(p, 4.0)) CHECK(bytes_of(s.total(), tensor) == bytes);
}

// flash2's wgmma kernel not causal at d 128 takes FlashAttention-3's 176-key tile, two in the ring (core/producer_loads.h's
// prefill_block_c: what the kernel backend launches); causal, at d 64, with kv_tile 128 or without the producer's loads
// it keeps 128 keys and three tiles. The wide tile moves fewer K/V bytes: ⌈N/B_r⌉ row blocks each read N keys either way,
// so K/V bytes are equal where N is a multiple of both tiles — and the model counts a third fewer tiles.
// flash2's persistent CTAs (row_blocks = persistent, with the producer's loads): one CTA per SM loops over the grid's
// row blocks. Measured on the H100 (kernels/PERF.md, "wgmma v4"), that is no faster at d 128 — the kernel's pipeline
// fills and drains at every block as the grid's CTA does — so the model charges the same work, waves and bytes as the
// grid's and changes only where the row blocks go: statically, CTA c taking blocks c, c + 132, … of the kernel's order
// (core/persistent_order.h), where the grid's CTAs go to whichever SM frees first. Not causal, every row block is
// alike: the same time. Causal, the static order's tail is no shorter than the greedy one (B 4, H 16, N 4k, d 128 on an
// H100: 2 048 row blocks of 1–32 tiles on 132 SMs). Without the producer (kv_loads = cp_async) or in decode the
// parameter changes nothing.
TEST_CASE("flash2's persistent CTAs: the grid's work, placed in the kernel's order", "[sim][model]") {
  for (bool causal : {false, true}) {
    Problem p = prefill(4096, 128, causal);
    p.batch = 4, p.q_heads = p.kv_heads = 16;
    const Schedule grid = make_schedule(p, request("flash2"), h100());
    const Schedule persistent = make_schedule(p, request("flash2", {{"row_blocks", "persistent"}}), h100());
    INFO(fmt::format("causal={}", causal));
    CHECK_FALSE(grid.persistent_ctas);
    REQUIRE(persistent.persistent_ctas);
    const sim::Prediction a = sim::predict(grid, h100()), b = sim::predict(persistent, h100());
    CHECK(a.waves == Approx(2048.0 / 132));
    CHECK(b.waves == a.waves);
    CHECK(b.ctas == a.ctas);  // the same row blocks, the same bytes and operations
    CHECK(b.dram_bytes == a.dram_bytes);
    if (causal) CHECK(b.tail_factor >= a.tail_factor);
    else CHECK(b.tail_factor == Approx(a.tail_factor));
    // Everything but the tail is the grid's: the times differ by the tail's ratio where the tail scales the whole body.
    CHECK(b.time_ms >= a.time_ms * (1 - 1e-9));
    // The tail as the kernel hands the row blocks out, derived here by nested loops: bands of `band` heads, in each
    // every head's x-th row block for x = 0, 1, … (causal: 32 − x tiles of 128 keys; else ⌈4096/176⌉), CTA c taking
    // blocks c, c + 132, …; each block's work its tiles plus one (its prologue and epilogue); over the ideal.
    const int heads = 64, blocks = 32, S = 132;
    auto tail_of_bands = [&](int band) {
      std::vector<double> load(S, 0.0);
      double total = 0;
      int i = 0;
      for (int first = 0; first < heads; first += band)
        for (int x = 0; x < blocks; ++x)
          for (int h = first; h < std::min(first + band, heads); ++h, ++i) {
            const double work = (causal ? 32 - x : 24) + 1;
            load[size_t(i % S)] += work, total += work;
          }
      return *std::max_element(load.begin(), load.end()) / (total / S);
    };
    CHECK(persistent.persistent_band_heads > 1);
    CHECK(b.tail_factor == Approx(tail_of_bands(persistent.persistent_band_heads)));
    // row_blocks = persistent_head_major: bands of one head, the grid's order.
    const Schedule head_major = make_schedule(p, request("flash2", {{"row_blocks", "persistent_head_major"}}), h100());
    REQUIRE(head_major.persistent_ctas);
    CHECK(head_major.persistent_band_heads == 1);
    CHECK(sim::predict(head_major, h100()).tail_factor == Approx(tail_of_bands(1)));
    // row_blocks = persistent_dynamic: the grid's order, the next block to the first CTA free — the grid's placement
    // and time.
    const Schedule dynamic = make_schedule(p, request("flash2", {{"row_blocks", "persistent_dynamic"}}), h100());
    REQUIRE(dynamic.persistent_ctas);
    CHECK(dynamic.persistent_dynamic);
    CHECK(dynamic.persistent_band_heads == 1);
    CHECK_FALSE(persistent.persistent_dynamic);
    const sim::Prediction d = sim::predict(dynamic, h100());
    CHECK(d.tail_factor == Approx(a.tail_factor));
    CHECK(d.time_ms == Approx(a.time_ms));
  }
  Problem p = prefill(4096, 128, false);
  const Schedule cp_async =
      make_schedule(p, request("flash2", {{"row_blocks", "persistent"}, {"kv_loads", "cp_async"}}), h100());
  CHECK_FALSE(cp_async.persistent_ctas);
  p.phase = Phase::decode, p.q_len = 1;
  CHECK_FALSE(make_schedule(p, request("flash2", {{"row_blocks", "persistent"}}), h100()).persistent_ctas);
}

TEST_CASE("flash2's wgmma schedule: the 176-key tile where the kernel takes it", "[sim][model]") {
  struct Case {
    int64_t d;
    bool causal;
    const char *param, *value;  // one parameter set, or none
    int block_c, stages;
  };
  const Case cases[] = {{128, false, nullptr, nullptr, 176, 2},
                        {128, true, nullptr, nullptr, 128, 3},
                        {64, false, nullptr, nullptr, 128, 3},
                        {128, false, "kv_tile", "128", 128, 3},
                        {128, false, "kv_loads", "cp_async", 128, 3}};
  for (const Case& c : cases) {
    const Problem p = prefill(176 * 64, c.d, c.causal);
    const Schedule s = make_schedule(p, c.param ? request("flash2", {{c.param, c.value}}) : request("flash2"), h100());
    INFO(fmt::format("d={} causal={} {}={}", c.d, c.causal, c.param ? c.param : "-", c.value ? c.value : "-"));
    CHECK(s.warpgroup_mma);
    CHECK(s.block_c == c.block_c);
    CHECK(s.stages == c.stages);
    CHECK(s.classes.front().tiles == (c.causal ? s.classes.front().tiles : p.kv_len / c.block_c));
  }
}

// kv_tile = auto weighs the 176-key tile's cheaper keys (the row's wide_tile_key_cost, 0.987) against its last tile's
// padding: N 4096 = 23·176 + 48 computes 4 224 keys' work (4 169 weighed) against 4 096 at 128 keys, so 128; N 8192
// (47 tiles: 8 272, 8 165 weighed) and 16 384 (94: 16 544, 16 329) keep 176; N 176·k has no padding and keeps 176;
// one key past 128·k (N 4097: 24 tiles either way at 176, 33 at 128) swings back to 176.
TEST_CASE("flash2's wgmma schedule: kv_tile auto takes 128 keys where the 176-key tile's padding costs more",
          "[sim][model]") {
  const KernelTraits& t = *find_kernel_traits("flash2", 128, 90);
  REQUIRE(t.wide_tile_key_cost == 0.987f);
  const std::pair<int64_t, int> cases[] = {{4096, 128}, {8192, 176}, {16384, 176}, {176 * 20, 176}, {4097, 176},
                                            {2048, 128}, {128, 128}, {100, 128}};
  for (const auto& [n, block_c] : cases) {
    INFO("N = " << n);
    CHECK(wide_tile_pays(t, n) == (block_c == 176));
    const Schedule s = make_schedule(prefill(n, 128, false), request("flash2"), h100());
    CHECK(s.block_c == block_c);
    CHECK(s.stages == (block_c == 176 ? 2 : 3));
    const auto mentions_padding = [](const std::string& line) { return line.find("padding") != std::string::npos; };
    const bool says_padding = std::any_of(s.explain.begin(), s.explain.end(), mentions_padding);
    CHECK(says_padding == (block_c == 128));  // the schedule tells why it left the wide tile
    CHECK(make_schedule(prefill(n, 128, true), request("flash2"), h100()).block_c == 128);  // causal: 128 always
    CHECK(prefill_block_c(t, request("flash2", {{"kv_tile", "128"}}), false, n) == 128);
  }
}

TEST_CASE("IO laws: flash < naive from N = 2 blocks; naive's S/P grow as N², flash's K/V as ⌈N/B_r⌉·N",
          "[sim][model]") {
  for (int64_t n : {256, 512, 1024, 2048}) {
    const Problem p = prefill(n, 128, false);
    const Work flash = make_schedule(p, request("flash2"), h100()).total();
    const Work naive = make_schedule(p, request("naive"), h100()).total();
    CHECK(flash.total_bytes() < naive.total_bytes());
    const Problem p2 = prefill(2 * n, 128, false);
    const Work naive2 = make_schedule(p2, request("naive"), h100()).total();
    const Work flash2 = make_schedule(p2, request("flash2"), h100()).total();
    CHECK(bytes_of(naive2, "s") == 4 * bytes_of(naive, "s"));
    CHECK(bytes_of(naive2, "p") == 4 * bytes_of(naive, "p"));
    const double blocks = std::ceil(n / 128.0), blocks2 = std::ceil(2 * n / 128.0);
    CHECK(bytes_of(flash2, "k") / bytes_of(flash, "k") == Approx(blocks2 * 2 * n / (blocks * n)));
  }
  // Θ(N²d²/M): with the row block sized to the on-chip memory M (B_r = M / (4·d·2 bytes), a quarter of M
  // for Q), K/V bytes × M / (N²·d²) stays constant as N, d and M vary.
  double lo = 1e300, hi = 0;
  for (int64_t d : {80, 112})  // head dims without kernel traits: B_r comes from the parameter
    for (int64_t n : {8192, 16384})  // ⌈N/B_r⌉ is within B_r/N ≤ 2.5% of N/B_r here
      for (int64_t m : {32768, 65536, 131072}) {
        const int64_t br = m / (4 * d * 2);
        if (br > 256) continue;
        const Work w = make_schedule(prefill(n, d, false, 1, 1), request("flash2", {{"block_r", br}}), h100()).total();
        const double law = bytes_of(w, "k") * double(m) / (double(n) * n * d * d);
        lo = std::min(lo, law), hi = std::max(hi, law);
      }
  CHECK(hi / lo < 1.05);
}

TEST_CASE("quantized formats: the model's bytes are what the formats imply (hand counts)", "[sim][model]") {
  // int_flash, d = 64 (traits 128 × 64), N = 256: two row blocks each read all 4 K and V tiles.
  const Problem p = prefill(256, 64, false, 1, 1);
  const Work w = make_schedule(p, request("int_flash"), h100()).total();
  CHECK(bytes_of(w, "q") == 256 * 64);               // INT8
  CHECK(bytes_of(w, "k") == 2 * 256 * 64);           // INT8, re-read by 2 row blocks
  // Q's token scales, K's token scales (re-read by 2 row blocks), V's one scale per tensor once per CTA.
  CHECK(bytes_of(w, "scales") == 256 * 4 + 2 * 256 * 4 + 2 * 4);
  CHECK(bytes_of(w, "o") == 256 * 64 * 2);           // FP16
  // turbo decode reads its cache: equal to the bytes the reference says the cache holds.
  Problem dec = prefill(640, 128, false, 1, 1);
  dec.phase = Phase::decode, dec.q_len = 1;
  for (int n_h : {0, 1}) {
    const VariantRequest t = request("turbo", {{"two_bit_heads", n_h}});
    const Work cache = make_schedule(dec, t, h100()).total();
    const QKV in = data::generate(dec, "normal", ParamValues::defaults(data::find_generator("normal")->params), 1);
    const int64_t ref = find_variant("turbo")->reference(dec, in, t.params, {}).kv_cache_bytes;
    CHECK(bytes_of(cache, "k") + bytes_of(cache, "v") + bytes_of(cache, "scales") == double(ref));
  }
}

TEST_CASE("time scales with the bounding resource", "[sim][model]") {
  // Memory-bound: decode of a long sequence. Compute-bound: a large prefill.
  Problem dec = prefill(32768, 128, false, 32, 8);
  dec.phase = Phase::decode, dec.q_len = 1;
  const Problem pre = prefill(4096, 128, false, 32, 32);
  GpuSpec fast_mem = h100(), fast_compute = h100();
  fast_mem.hbm_bandwidth_gbs *= 2;
  for (auto& [_, v] : fast_compute.tensor_tflops) v *= 2;
  fast_compute.fp32_tflops *= 2, fast_compute.sfu_exp2_per_clk_per_sm *= 2;
  fast_compute.cvt_per_clk_per_sm *= 2, fast_compute.int32_per_clk_per_sm *= 2;
  fast_compute.issue_per_clk_per_sm *= 2;
  // The fixed terms (launches, per-wave CTA overhead) do not scale; the body does.
  const auto fixed = [](const Prediction& p, int launches) {
    return launches * kLaunchUs * 1e-3 + p.waves * load_gpu_spec("h100-sxm5").cta_overhead_us * 1e-3;
  };
  // FlashAttention-2's design (flash-decoding, the group's query heads packed into a CTA's rows): memory-bound.
  // (Our FP16 decode kernel computes a 128-row block per query head instead and is latency-bound.)
  const Schedule sd = make_schedule(dec, request("flash2"), h100(), Kernels::design);
  const Prediction d0 = predict(sd, h100()), d1 = predict(sd, fast_mem), d2 = predict(sd, fast_compute);
  CHECK(d0.bound == "memory");
  CHECK((d1.time_ms - fixed(d1, 2)) == Approx((d0.time_ms - fixed(d0, 2)) / 2).epsilon(1e-9));
  CHECK(d2.time_ms == Approx(d0.time_ms).epsilon(1e-9));
  // Compute-bound: the loop halves with the compute rates; Q in and O out (not overlapped with the loop)
  // halve with the bandwidth instead.
  // (Which compute unit binds depends on the shipped factors: the FP16 MMAs, or the SFU's exponentials at 0.355
  // of the datasheet's rate.)
  const Schedule sp = make_schedule(pre, request("flash2"), h100());
  const std::string bound = predict(sp, h100()).bound;
  CHECK((bound == "mma_fp16" || bound == "exp_sfu"));
  const Layout l = layout(sp, h100(), {}, nullptr);
  const Timing p0 = timing(l, h100()), p1 = timing(l, fast_mem), p2 = timing(l, fast_compute);
  const double loop = p0.t_body - p0.t_rows;
  CHECK(p0.t_rows > 0);
  CHECK(p2.t_body == Approx(p0.t_rows + loop / 2).epsilon(1e-12));
  CHECK(p1.t_body == Approx(p0.t_rows / 2 + loop).epsilon(1e-12));
}

TEST_CASE("SAS moves the exponential from the SFU to the FMA units", "[sim][model]") {
  // The A100 has no turbo prefill kernel: the model derives the work from the operations.
  const GpuSpec a100 = load_gpu_spec("a100-sxm4-80gb");
  const Problem p = prefill(1024, 128, false);
  const Work sas = make_schedule(p, request("turbo"), a100).total();
  const Work exact = make_schedule(p, request("turbo", {{"exact_exp", true}}), a100).total();
  const double scores = 4.0 * 1024 * 1024;  // heads × N² (non-causal; B_r divides N)
  CHECK(sas.ops.count(Unit::sfu) == 0);
  CHECK(exact.ops.at(Unit::sfu) == scores);
  CHECK(sas.ops.at(Unit::fp32_fma) - exact.ops.at(Unit::fp32_fma) == scores * (6 - 0));
  CHECK(sas.ops.at(Unit::cvt) - exact.ops.at(Unit::cvt) == scores);  // floor
  // Every instruction takes an issue slot: SAS's 6 FMA, floor and LUT address replace one ex2.
  CHECK(sas.ops.at(Unit::issue) - exact.ops.at(Unit::issue) == scores * (6 + 1 + 1 - 1));
  // On the H100 the kernel runs, and its issue slots are its measured counts (core/kernel_traits.h
  // kPrefillIssue): 32 CTAs of 8 warps, 16 tiles each — the cp.async kernel's for both exponentials, the producer
  // kernel's own for both (SAS FP32 measured on the H100, exp2 on the H200).
  const double warp_tiles = 4 * (1024 / 128) * 8 * (1024 / 64);
  const Work sas90 = make_schedule(p, request("turbo", {{"kv_loads", "cp_async"}}), h100()).total();
  const Work exact90 = make_schedule(p, request("turbo", {{"exact_exp", true}, {"kv_loads", "cp_async"}}), h100()).total();
  CHECK(sas90.ops.at(Unit::issue) - exact90.ops.at(Unit::issue) == Approx((1420.3 - 1058.8) * warp_tiles * 32));
  const Work sas_producer = make_schedule(p, request("turbo"), h100()).total();  // kv_loads = tma_producer
  const Work exact_producer = make_schedule(p, request("turbo", {{"exact_exp", true}}), h100()).total();
  CHECK(sas_producer.ops.at(Unit::issue) == Approx(1388.3 * warp_tiles * 32));
  CHECK(exact_producer.ops.at(Unit::issue) == Approx(1027.0 * warp_tiles * 32));
  // K/V quantized by the pre-pass, S, P and O by exact arithmetic: SAS's ⌊x⌋ is the one conversion per score.
  CHECK(sas90.ops.at(Unit::cvt) == Approx(scores));
  CHECK(exact90.ops.at(Unit::cvt) == 0);
}

TEST_CASE("fireq's FP16 softmax: one SFU issue per score as the FP32 one (sm_90 splits ex2.approx.f16x2), one "
          "conversion more per pair, half an FP32-pipe instruction fewer per score; decode keeps FP32",
          "[sim][model]") {
  const Problem p = prefill(1024, 128, false);
  const double scores = 4.0 * 1024 * 1024;
  const Work f32 = make_schedule(p, request("fireq", {{"prefill_kv", "fp8"}, {"block_c", 128}}), h100()).total();
  const Work f16 = make_schedule(
      p, request("fireq", {{"prefill_kv", "fp8"}, {"block_c", 128}, {"softmax_precision", "fp16"}}), h100()).total();
  CHECK(f32.ops.at(Unit::sfu) == scores);
  CHECK(f16.ops.at(Unit::sfu) == scores);  // pipe_rates.cu: two MUFU.EX2.F16 per ex2.approx.f16x2
  CHECK(f16.ops.at(Unit::cvt) - f32.ops.at(Unit::cvt) == scores / 2);
  CHECK(f32.ops.at(Unit::fp32_fma) - f16.ops.at(Unit::fp32_fma) == scores / 2);
  Problem d = p;
  d.phase = Phase::decode, d.q_len = 1;
  const Work d32 = make_schedule(d, request("fireq"), h100()).total();
  const Work d16 = make_schedule(d, request("fireq", {{"softmax_precision", "fp16"}}), h100()).total();
  CHECK(d16.ops == d32.ops);
}

TEST_CASE("the latency term with a measured stall: one scheduler serving W warps (machine repairman)", "[sim][model]") {
  // One warp: it issues, then waits Z: 1 / (1 + Z) of the cycles.
  CHECK(repairman_issue_rate(1, 3) == Approx(1.0 / 4));
  // Two warps: P₀ = 1 / (1 + 2/Z + 2/Z²).
  const double z = 1.29;
  CHECK(repairman_issue_rate(2, z) == Approx(1 - 1 / (1 + 2 / z + 2 / (z * z))));
  // More warps issue more, never above 1; between two counts, the line between them.
  double last = 0;
  for (int w = 1; w <= 16; ++w) {
    const double u = repairman_issue_rate(w, 3.5);
    CHECK(u > last);
    CHECK(u < 1);
    last = u;
  }
  CHECK(repairman_issue_rate(3.5, 2) ==
        Approx((repairman_issue_rate(3, 2) + repairman_issue_rate(4, 2)) / 2));
  // Nsight Compute's stall per instruction and issue rate of the turbo decode kernel at 2 and 4 warps per
  // scheduler (sim/measurements/h100-ncu-kernels-2026-11-26.csv: 4-bit Z 3.51, issuing 0.42; 2-bit Z 3.65, 0.70):
  // the formula gives 0.42 and 0.72 — the margins are those differences, rounded up to the table's 0.01.
  CHECK(repairman_issue_rate(2, 3.51) == Approx(0.42).margin(0.01));
  CHECK(repairman_issue_rate(4, 3.65) == Approx(0.70).margin(0.03));
  // The turbo prefill kernel (wgmma, with its measured count and stall, core/kernel_traits.h kPrefillIssue) is
  // predicted at that rate: 8 warps per SM are 2 per scheduler. The producer kernel's stall is the one that gives
  // the issue rate Nsight Compute measured for it (0.63).
  const Prediction p = predict(make_schedule(prefill(4096, 128, false), request("turbo"), h100()), h100());
  CHECK(p.warps_per_scheduler == 2.0);
  const PrefillIssue* producer = find_prefill_issue("turbo", 128, "sas_fp32", "tma_producer");
  REQUIRE(producer != find_prefill_issue("turbo", 128, "sas_fp32"));
  CHECK(p.issue_rate == Approx(repairman_issue_rate(2, producer->stall.total())));
  CHECK(p.issue_rate == Approx(0.63).margin(0.005));
  CHECK(p.bound == "latency");
}

TEST_CASE("a synthetic kernel that cannot hide its latency is predicted latency-bound; more warps lift it",
          "[sim][model]") {
  // A hand-made schedule: one CTA of 4 warps per SM (its shared memory allows no second), a loop of dependent
  // FP32 FMAs and no bytes to speak of. Each warp stalls 8 cycles after each instruction (measured-style stall):
  // 1 warp per scheduler issues 1 / (1 + 8) of the cycles, so the issue unit — not the FMA pipe's width —
  // binds, and the explanation says "latency".
  const GpuSpec gpu = h100();
  Schedule s;
  s.variant = "synthetic";
  s.block_r = 64, s.block_c = 64, s.warps = 4, s.threads = 128, s.stages = 2, s.regs_per_thread = 64;
  s.smem_bytes = 200 * 1024;
  s.classes = {{double(gpu.sm_count), 1000, 64, 64000}};
  s.per_tile.ops[Unit::fp32_fma] = 2.0 * 128 * 64;  // 64 FMAs per thread per tile
  s.per_tile.ops[Unit::issue] = 128 * 64;           // one issue slot per thread-instruction
  s.stall.fixed_latency = 8;
  const Prediction one = predict(s, gpu);
  CHECK(one.warps_per_scheduler == 1.0);
  CHECK(one.issue_rate == Approx(1.0 / 9));
  CHECK(one.bound == "latency");
  // Eight CTAs per SM (shared memory for each): 8 warps per scheduler at the same stall issue 1 − P₀ ≈ 0.8 of
  // the cycles, and the same grid of work runs in far less time.
  Schedule many = s;
  many.smem_bytes = 16 * 1024;
  many.classes = {{double(gpu.sm_count) * 8, 1000, 64, 64000}};
  const Prediction eight = predict(many, gpu);
  CHECK(eight.warps_per_scheduler == 8.0);
  CHECK(eight.issue_rate == Approx(repairman_issue_rate(8, 8)));
  CHECK(eight.issue_rate > 0.7);
  CHECK(eight.time_ms < 8 * one.time_ms / 4);  // 8× the work in less than 2× the time
}

TEST_CASE("GPU specs: every shipped spec loads; bad specs name the field", "[sim][model][bad-input]") {
  CHECK(all_gpu_specs().size() >= 5);
  CHECK(test::starts(test::input_error([] { load_gpu_spec("h900"); }), "gpu_model"));
  const std::filesystem::path dir = std::filesystem::path(ATTNLAB_TEST_TMP) / "specs";
  std::filesystem::create_directories(dir);
  std::ifstream in(specs_dir() + "/h100-sxm5.json");
  const nlohmann::json good = nlohmann::json::parse(in);
  const auto error_for = [&](const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json j = good;
    edit(j);
    const std::string path = (dir / "h100-sxm5.json").string();
    std::ofstream(path) << j.dump();
    return test::input_error([&] { load_gpu_spec_file(path); });
  };
  CHECK(error_for([](auto& j) { j.erase("sm_count"); }).find("sm_count: missing") != std::string::npos);
  CHECK(error_for([](auto& j) { j["hbm_bandwidth_gbs"]["value"] = 0; }).find("hbm_bandwidth_gbs: 0 is outside [1, ") !=
        std::string::npos);
  CHECK(error_for([](auto& j) { j["l2_bytes"].erase("source"); }).find("l2_bytes") != std::string::npos);
  CHECK(error_for([](auto& j) { j["tensor_tflops"]["fp4"] = {{"value", 1}, {"source", "x"}}; })
            .find("tensor_tflops.fp4") != std::string::npos);
  CHECK(error_for([](auto& j) { j["measured"] = {{"efficiency", {{"mma_fp16", 3.0}}}}; })
            .find("measured.efficiency.mma_fp16") != std::string::npos);
  CHECK(error_for([](auto& j) { j["id"] = "h100"; }).find(".id") != std::string::npos);
}

}  // namespace
}  // namespace attnlab::sim

namespace attnlab::sim {
namespace ATTNLAB_FILE_LOCAL {

TEST_CASE("calibration recovers known efficiency factors from synthetic measurements", "[sim][calibrate]") {
  // Measurements generated by the model itself with known factors, on shapes where each factor binds
  // somewhere: long decodes (HBM), large d = 128 prefills (tensor cores), d = 64 prefills (the SFU's exp).
  GpuSpec truth = load_gpu_spec("h100-sxm5");
  truth.efficiency = {{"hbm", 0.8}, {"mma_fp16", 0.55}, {"exp_sfu", 0.7}};
  std::vector<Measurement> m;
  auto add = [&](int64_t b, int64_t h, int64_t kv, int64_t n, int64_t d, bool causal, Phase phase) {
    Problem p;
    p.batch = b, p.q_heads = h, p.kv_heads = kv, p.kv_len = n, p.q_len = phase == Phase::decode ? 1 : n;
    p.head_dim = d, p.causal = causal, p.phase = phase;
    // v1's cp.async pipeline: its exposed min(t_tensor, t_simt) lets the SFU's exp show at d 64, where the producer's
    // overlap (v2, the default) hides it behind the tensor cores and leaves exp_sfu nothing to fit.
    const VariantRequest v = request("flash2", {{"kv_loads", "cp_async"}});
    // Decode as FlashAttention-2's design (memory-bound); our kernel's decode is latency-bound.
    m.push_back({fmt::format("N={} d={}", n, d), p, v, predict(make_schedule(p, v, truth, Kernels::design), truth).time_ms,
                 "FlashAttention-2's design"});
  };
  for (int64_t n : {8192, 32768}) add(8, 32, 8, n, 128, false, Phase::decode);
  for (int64_t n : {4096, 8192}) add(2, 32, 32, n, 128, false, Phase::prefill);
  add(2, 32, 32, 4096, 128, true, Phase::prefill);
  for (int64_t n : {4096, 8192}) add(2, 32, 32, n, 64, false, Phase::prefill);
  const Calibration c = calibrate(load_gpu_spec("h100-sxm5"), m);
  for (const auto& [unit, factor] : truth.efficiency) {
    INFO(unit);
    REQUIRE(c.efficiency.count(unit));
    CHECK(c.efficiency.at(unit) == Approx(factor).epsilon(0.02));
  }
  CHECK(c.median_error_after < 0.01);
  CHECK(c.median_error_before > 0.2);
  CHECK(c.median_error_loo < 0.05);
}

TEST_CASE("measurement files: unknown variants and bad shapes are named", "[sim][calibrate][bad-input]") {
  const std::filesystem::path dir = std::filesystem::path(ATTNLAB_TEST_TMP) / "meas";
  std::filesystem::create_directories(dir);
  const auto error_for = [&](const std::string& text) {
    const std::string path = (dir / "m.json").string();
    std::ofstream(path) << text;
    return test::input_error([&] { load_measurements(path); });
  };
  CHECK(error_for(R"({"schema": "other"})").find("attnlab.measurements/1") != std::string::npos);
  CHECK(error_for(R"({"schema": "attnlab.measurements/1", "measurements": [{"variant": "flash9", "median_ms": 1}]})")
            .find("measurements[0]") != std::string::npos);
  CHECK(error_for(R"({"schema": "attnlab.measurements/1", "measurements": [{"variant": "flash2", "median_ms": 1,
        "problem": {"head_dim": 100}}]})").find("problem.head_dim") != std::string::npos);
  CHECK(error_for(R"({"schema": "attnlab.measurements/1", "measurements": [{"variant": "flash2", "median_ms": -1}]})")
            .find("median_ms") != std::string::npos);
}

}  // namespace
}  // namespace attnlab::sim

namespace attnlab::sim {
namespace ATTNLAB_FILE_LOCAL {

TEST_CASE("the shipped H100 calibration: FlashAttention-2 times within 10% (median), leave-one-out too",
          "[sim][calibrate]") {
  // sim/measurements/h100-sxm5-sdpa-flash.json: PyTorch SDPA's flash backend (FlashAttention-2's forward)
  // timed on an H100 by kernels/bench/sdpa_bench.py — 20 prefill shapes (d 64/128, N 1k–16k, causal or
  // not) and 9 decode shapes. The model with factors fitted to them must predict them within 10% median,
  // and each one within 10% median when it was left out of the fit.
  std::string gpu;
  const auto m = load_measurements(std::string(ATTNLAB_SOURCE_DIR) + "/sim/measurements/h100-sxm5-sdpa-flash.json", &gpu);
  REQUIRE(gpu == "h100-sxm5");
  REQUIRE(m.size() >= 25);
  const Calibration c = calibrate(load_gpu_spec(gpu), m);
  WARN(fmt::format("median |error| before {:.1f}%, after {:.1f}%, leave-one-out {:.1f}%", 100 * c.median_error_before,
                   100 * c.median_error_after, 100 * c.median_error_loo));
  CHECK(c.median_error_after < 0.10);
  CHECK(c.median_error_loo < 0.10);
  // The factors are physical: fractions of the datasheet, not free curve parameters.
  for (const auto& [unit, f] : c.efficiency) {
    INFO(unit);
    CHECK(f > 0.2);
    CHECK(f < (unit == "cta_overhead_us" ? 30.0 : 1.2));
  }
}

}  // namespace
}  // namespace attnlab::sim

namespace attnlab::sim {
namespace ATTNLAB_FILE_LOCAL {

TEST_CASE("the measurements bench writes are what calibrate reads", "[sim][calibrate]") {
  Problem p = prefill(4096, 128, true, 16, 16);
  Results r;
  r.problem = to_json(p);
  r.environment.gpu = "NVIDIA H100 80GB HBM3";
  VariantResult v;
  v.id = "flash2", v.label = "flash2", v.params = ParamValues::defaults(find_variant("flash2")->params).to_json();
  v.kernel = KernelResult{};
  v.kernel->median_ms = 1.25;
  r.variants.push_back(v);
  r.variants.push_back(VariantResult{"naive", "naive", {}, std::nullopt, std::nullopt, std::nullopt});  // no kernel
  const nlohmann::json j = measurements_json({r});
  CHECK(j["gpu"] == "h100-sxm5");
  CHECK_FALSE(j["measurements"][0].contains("decode_step_ms"));  // no serving loop ran
  // A serving loop's time per token travels with the timing.
  Results loop = r;
  loop.variants[0].kernel->probes["decode.steps"] = labelled({"steps", "step_ms", "attend_ms", "step_over_attend"},
                                                             {256, 1.3, 1.25, 1.04}, "", "");
  CHECK(measurements_json({loop})["measurements"][0]["decode_step_ms"] == 1.3);
  CHECK_FALSE(j["measurements"][0].contains("sm_clock_mhz"));  // no clock read
  // The SM clock of the timed runs travels with the timing, and the file still loads.
  Results clocked = r;
  clocked.variants[0].kernel->sm_clock = KernelResult::Clock{1590, 1755, 1980, 30};
  const nlohmann::json c = measurements_json({clocked})["measurements"][0];
  CHECK(c["sm_clock_mhz"] == 1755);
  CHECK(c["sm_clock_min_mhz"] == 1590);
  CHECK(c["sm_clock_max_mhz"] == 1980);
  CHECK(c["timed_runs"] == 30);
  const std::string path = std::string(ATTNLAB_TEST_TMP) + "/bench-out.json";
  {
    std::filesystem::create_directories(ATTNLAB_TEST_TMP);
    const std::string clocked_path = std::string(ATTNLAB_TEST_TMP) + "/bench-out-clocked.json";
    std::ofstream(clocked_path) << measurements_json({clocked}).dump();
    CHECK(load_measurements(clocked_path).size() == 1);
  }
  std::filesystem::create_directories(ATTNLAB_TEST_TMP);
  std::ofstream(path) << j.dump();
  std::string gpu;
  const std::vector<Measurement> m = load_measurements(path, &gpu);
  REQUIRE(m.size() == 1);
  CHECK(gpu == "h100-sxm5");
  CHECK(m[0].median_ms == 1.25);
  CHECK(m[0].problem.kv_len == 4096);
  CHECK(m[0].problem.causal);
  CHECK(m[0].variant.id == "flash2");
}

TEST_CASE("a ring's measurement carries its traced timeline and the model's beside it", "[sim][calibrate]") {
  Results r;
  Problem p = prefill(8192, 128, true, 32, 8);
  p.gpus = 2;
  r.problem = to_json(p);
  r.environment.gpu = "NVIDIA H100 80GB HBM3";
  VariantResult v;
  v.id = "flash2", v.label = "FP16", v.params = ParamValues::defaults(find_variant("flash2")->params).to_json();
  v.kernel = KernelResult{};
  v.kernel->median_ms = 2.5;
  v.kernel->probes["kernel.context_parallel"] =
      labelled({"gpus", "wire_bytes", "timed_runs", "merge_ms"}, {2, 3.0e7, 30, 0}, "", "");
  ProbeArray trace;  // [step, GPU, (compute, idle, exchange)]
  trace.shape = {2, 2, 3};
  trace.values = std::vector<double>{1.0, 0.1, 0.5, 1.05, 0.05, 0.6, 1.2, 0.0, 0.0, 1.1, 0.1, 0.0};
  v.kernel->probes["kernel.context_parallel.timeline"] = trace;
  v.model = ModelResult{};
  v.model->time_ms = 2.4;
  v.model->details["context_parallel"] = {
      {"one_gpu_ms", 4.6}, {"scaling_efficiency", 0.958},
      {"timeline", nlohmann::json::array({{{"step", 0}, {"gpu", 0}, {"compute_ms", 1.1}, {"idle_ms", 0}, {"send_ms", 0.4}},
                                          {{"step", 0}, {"gpu", 1}, {"compute_ms", 1.0}, {"idle_ms", 0.1}, {"send_ms", 0.4}},
                                          {{"step", 1}, {"gpu", 0}, {"compute_ms", 1.3}, {"idle_ms", 0}, {"send_ms", 0}},
                                          {{"step", 1}, {"gpu", 1}, {"compute_ms", 1.2}, {"idle_ms", 0.1}, {"send_ms", 0}}})}};
  r.variants.push_back(v);
  const nlohmann::json j = measurements_json({r});
  const nlohmann::json& cp = j["measurements"][0]["context_parallel"];
  CHECK(cp["gpus"] == 2);
  CHECK(cp["wire_bytes"] == 3.0e7);
  CHECK_FALSE(cp.contains("merge_ms"));  // a prefill's merges follow each block: none timed apart
  REQUIRE(cp["timeline"].size() == 4);
  CHECK(cp["timeline"][1] == nlohmann::json({{"step", 0}, {"gpu", 1}, {"compute_ms", 1.05}, {"idle_ms", 0.05},
                                             {"exchange_ms", 0.6}}));
  CHECK_FALSE(cp["timeline"][3].contains("exchange_ms"));  // the last step sends nothing
  CHECK(cp["model"]["time_ms"] == 2.4);
  CHECK(cp["model"]["scaling_efficiency"] == 0.958);
  CHECK(cp["model"]["timeline"][0]["exchange_ms"] == 0.4);
  // The file reads back as every measurements file does; a slot with a negative wait is refused, naming it.
  const std::string dir = std::string(ATTNLAB_TEST_TMP) + "/test_cost_model";
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/bench-ring.json";
  std::ofstream(path) << j.dump();
  CHECK(load_measurements(path).size() == 1);
  nlohmann::json bad = j;
  bad["measurements"][0]["context_parallel"]["timeline"][2]["idle_ms"] = -0.1;
  std::ofstream(path) << bad.dump();
  try {
    (void)load_measurements(path);
    FAIL("a negative wait was read");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("measurements[0].context_parallel.timeline[2].idle_ms") != std::string::npos);
  }
  // A run on one GPU carries no section.
  r.variants[0].kernel->probes.clear();
  CHECK_FALSE(measurements_json({r})["measurements"][0].contains("context_parallel"));
}

}  // namespace
}  // namespace attnlab::sim

namespace attnlab::sim {
namespace ATTNLAB_FILE_LOCAL {

// The tile stepper's model column: one KV tile of one CTA — K and V of B_c keys in the variant's storage
// (FP16 for flash2, INT8 plus FP32 token scales for int_flash), both products' tensor work, and Q_i.
TEST_CASE("model details: per-tile bytes and operations of one KV tile", "[model]") {
  Experiment e = parse_experiment({{"problem", {{"batch", 1}, {"q_heads", 4}, {"kv_heads", 4}, {"q_len", 1024},
                                                {"kv_len", 1024}, {"head_dim", 128}}},
                                   {"variants", {{{"id", "flash2"}, {"params", {{"kernel", "mma_sync"}}}},
                                                 {{"id", "int_flash"}}}},
                                   {"gpu_model", "a100-sxm4-80gb"}});
  const ModelResult f = model_result(e, e.variants[0]);
  const nlohmann::json& t = f.details.at("per_tile");
  const int bc = f.details.at("block_c").get<int>(), br = f.details.at("block_r").get<int>();
  CHECK(t["bytes"]["k"].get<double>() == 2.0 * bc * 128);
  CHECK(t["bytes"]["v"].get<double>() == 2.0 * bc * 128);
  CHECK(t["ops"]["mma_fp16"].get<double>() == 2.0 * (2.0 * br * bc * 128));  // QKᵀ and PV, 2 flops per MAC
  CHECK(t["q_block_bytes"].get<double>() == 2.0 * br * 128);
  const ModelResult i = model_result(e, e.variants[1]);
  const nlohmann::json& u = i.details.at("per_tile");
  const int bci = i.details.at("block_c").get<int>();
  CHECK(u["bytes"]["k"].get<double>() == 1.0 * bci * 128);
  CHECK(u["bytes"]["scales"].get<double>() == 4.0 * bci);  // one FP32 scale per key for K (V's is per tensor)
}

}  // namespace
}  // namespace attnlab::sim

namespace attnlab::sim {
namespace ATTNLAB_FILE_LOCAL {

// Millions of CTAs (a fuzzed config asked for 4·10⁵ sequences; the wave simulation then ran for minutes):
// one class of CTAs takes ⌈n / slots⌉ waves in closed form, so twice the sequences take twice the time up to
// the fixed launch cost, and the layout's wave count is the simulated one's rule.
TEST_CASE("the cost model with millions of CTAs: closed-form waves", "[sim]") {
  Problem big = prefill(4096, 128, false, 16, 16), half = big;
  big.batch = 400000, half.batch = 200000;
  const GpuSpec g = load_gpu_spec("h100-sxm5");
  const Prediction b = predict(make_schedule(big, request("flash2"), g), g);
  const Prediction h = predict(make_schedule(half, request("flash2"), g), g);
  REQUIRE(std::isfinite(b.time_ms));
  CHECK(b.time_ms / h.time_ms == Approx(2.0).epsilon(1e-3));
}

}  // namespace
}  // namespace attnlab::sim

namespace attnlab::sim {
namespace ATTNLAB_FILE_LOCAL {

// The decode problem of the issue's benchmark (B 16, d 128, N 32k) at `kv_heads` of 32 query heads.
Problem bench_decode(int64_t kv_heads) {
  Problem p;
  p.batch = 16, p.q_heads = 32, p.kv_heads = kv_heads, p.q_len = 1, p.kv_len = 32768, p.head_dim = 128;
  p.phase = Phase::decode;
  return p;
}

TEST_CASE("turbo decode at GQA 4:1, d 128: a cache of 2-bit pairs runs three CTAs per SM and 1536 chains, a mixed or "
          "4-bit one two CTAs and 2048", "[sim][model]") {
  // kernels/turbo/turbo_decode.cu kCtasPerSm and launch_chains (v17), core/variants/turbo_chains.h: the model follows
  // the kernel — KernelTraits::narrow_three_ctas_group lifts pow2_ctas where every pair is 2-bit and G ≤ 4.
  const GpuSpec gpu = h100();
  for (const auto& [q, kv] : {std::pair{32, 8}, std::pair{24, 8}, std::pair{40, 10}}) {  // G 4, G 3, Fig. 6's heads
    Problem p = bench_decode(kv);
    p.q_heads = q;
    INFO("heads " << q << "/" << kv);
    const Schedule narrow = make_schedule(p, request("turbo", {{"two_bit_heads", kv}}), gpu);
    const Prediction two = predict(narrow, gpu);
    CHECK(two.ctas_per_sm == 3);
    CHECK(narrow.splits == turbo_chains::chains(0, 16 * kv, 512, 128, p.group(), true));
    CHECK(narrow.splits * 16 * kv <= 132 * 12);  // one wave of 12 warps per SM
    CHECK(narrow.then.empty());
    const Schedule mixed = make_schedule(p, request("turbo", {{"two_bit_heads", kv / 2}}), gpu);
    CHECK(predict(mixed, gpu).ctas_per_sm == 2);
    CHECK(mixed.then.empty());  // one launch over both widths
    CHECK(mixed.splits == turbo_chains::chains(0, 16 * kv, 512, 128, p.group(), false));
    const Schedule wide = make_schedule(p, request("turbo", {{"two_bit_heads", 0}}), gpu);
    CHECK(predict(wide, gpu).ctas_per_sm == 2);
  }
  // At G 8 the 2-bit kernel's 186 registers hold it to two CTAs.
  Problem g8 = bench_decode(4);
  const Schedule eight = make_schedule(g8, request("turbo", {{"two_bit_heads", 4}}), gpu);
  CHECK(predict(eight, gpu).ctas_per_sm == 2);
  CHECK(eight.splits == turbo_chains::chains(0, 64, 512, 128, 8, false));
}

TEST_CASE("warp-chain decode: the latency term slows the 2-bit loop, a mixed cache runs one launch per width "
          "where the 2-bit one gains occupancy", "[sim][model]") {
  const GpuSpec gpu = h100();
  // All heads 2-bit at MHA: 4 CTAs of 4 warps per SM (57 KB each), 4 warps per scheduler, each stalled the
  // measured 3.98 cycles after an instruction: the repairman's 69% of the issue rate for the measured 875.3
  // instructions per tile (kDecodeIssue: turbo decode v21). (Which term binds depends on the factors: with the
  // SDPA-fitted H100 spec, memory.)
  const Prediction two = predict(make_schedule(bench_decode(32), request("turbo", {{"two_bit_heads", 32}}), gpu), gpu);
  CHECK(two.ctas_per_sm == 4);
  CHECK(two.warps_per_scheduler == 4.0);
  CHECK(two.issue_rate == Approx(repairman_issue_rate(4, 3.98)));
  CHECK(two.issue_rate == Approx(0.69).margin(0.01));
  const double slots = 32 * 875.3 * 16 * 32 * 512;  // warp instructions × 32 per tile, every chain's tiles
  CHECK(two.ops.at("issue") == Approx(slots));
  CHECK(two.unit_ms.at("issue") ==
        Approx(slots / (gpu.peak(Unit::issue) * gpu.efficiency_of(Unit::issue) * two.issue_rate) * 1e3));
  // All 4-bit: 2 CTAs per SM (shared memory), 2 warps per scheduler stalled 2.93 cycles (v21, measured at this
  // shape on an H200; v18 3.33 on an H100; v10 3.51 at B 4, where Nsight Compute measured an issue rate of 0.42).
  const Prediction four = predict(make_schedule(bench_decode(32), request("turbo", {{"two_bit_heads", 0}}), gpu), gpu);
  CHECK(four.ctas_per_sm == 2);
  CHECK(four.warps_per_scheduler == 2.0);
  CHECK(four.issue_rate == Approx(repairman_issue_rate(2, 2.93)));
  // At GQA 4:1 the stall measured at that group (kDecodeIssue: 2.24 cycles at B 16).
  const Prediction gqa4 = predict(make_schedule(bench_decode(8), request("turbo", {{"two_bit_heads", 0}}), gpu), gpu);
  CHECK(gqa4.issue_rate == Approx(repairman_issue_rate(gqa4.warps_per_scheduler, 2.24)));
  // Where no stall is measured (our FP16 decode at d 64: no kDecodeIssue row), the spec's L̄: min(1, W / L̄).
  Problem d64 = bench_decode(8);
  d64.head_dim = 64;
  const Prediction fp16 = predict(make_schedule(d64, request("flash2"), gpu), gpu);
  CHECK(fp16.issue_rate == Approx(std::min(1.0, fp16.warps_per_scheduler / gpu.issue_latency_cycles)));
  // Half and half at MHA: the 4-bit launch, then the 2-bit one (kernels/turbo/turbo_decode.cu, launch_chains); its
  // time is theirs added, and its bytes are the whole cache's.
  const Schedule mix = make_schedule(bench_decode(32), request("turbo", {{"two_bit_heads", 16}}), gpu);
  REQUIRE(mix.then.size() == 1);
  CHECK(mix.smem_bytes > mix.then[0].smem_bytes);
  const Layout ml = layout(mix, gpu, {}, nullptr);
  Layout first = ml;  // the 4-bit launch alone
  first.then.clear();
  CHECK(first.ctas_per_sm == 2);
  CHECK(ml.then[0].ctas_per_sm == 4);
  CHECK(timing(ml, gpu).time_ms == Approx(timing(first, gpu).time_ms + timing(ml.then[0], gpu).time_ms));
  const Prediction mp = predict(mix, gpu);
  CHECK(mp.dram_bytes == Approx((two.dram_bytes + four.dram_bytes) / 2).epsilon(0.01));
  CHECK(mp.time_ms > two.time_ms);
  CHECK(mp.time_ms < four.time_ms);
  // At GQA 4:1 the 2-bit ring buys no third CTA (4 query rows per warp): one launch over both widths.
  const Schedule gqa = make_schedule(bench_decode(8), request("turbo", {{"two_bit_heads", 4}}), gpu);
  CHECK(gqa.then.empty());
  CHECK(ctas_per_sm(gqa, gpu) == 2);
  // A wgmma kernel takes no latency term (its issue count is an upper bound).
  Problem pre = bench_decode(32);
  pre.phase = Phase::prefill, pre.q_len = pre.kv_len = 4096, pre.batch = 4;
  const Prediction fa = predict(make_schedule(pre, request("flash2"), gpu), gpu);
  CHECK(fa.issue_rate == 1.0);
}

// A decode measurement's name with its cache widths ("turbo H 32/8, 2-bit heads 8", "kivi H 32/8, 4-bit"): the
// file's labels name the variant and the shape only.
std::string decode_row_name(const Measurement& x) {
  std::string name = fmt::format("{} H {}/{}", x.variant.id, x.problem.q_heads, x.problem.kv_heads);
  if (x.variant.id == "turbo") name += fmt::format(", 2-bit heads {}", x.variant.params.integer("two_bit_heads"));
  if (x.variant.id == "kivi") name += fmt::format(", {}-bit", x.variant.params.integer("bits"));
  return name;
}

TEST_CASE("the compressed-cache decode kernels on the H200: the H100's factors within 15% (median), "
          "within 15% after calibration", "[sim][calibrate]") {
  // sim/measurements/h200-compressed-decode-v21-2026-12-07.json: turbo decode v21 (4-bit, 2/4 mix, 2-bit; at GQA a
  // 2-bit cache at three CTAs per SM), kivi decode v5 (2- and 4-bit), fireq decode v11 and our FP16 decode, timed in
  // one call on one H200 (kernels/bench/h200-compressed-decode-v21-peers-2026-12-07.json, the `attnlab bench` rows of
  // configs/bench-{turbo,fireq}-decode*.json) at B 16, d 128, N 32k, MHA and GQA 4:1 (kernels/PERF.md) — the builds
  // whose counts and stalls kDecodeIssue holds (turbo's measured in the same session on the same GPU), but for kivi's
  // 4-bit kernel, whose row is v3's count (v4 and v5's 4-bit kernel not profiled): its error is reported, not bounded.
  // First the shipped h200.json (the H100's fitted factors, no re-fit), then a fit with every factor in its physical
  // range. On 2026-12-07: with the H100's factors median |error| 7.5%, worst fireq at MHA (−24.7%: its stall and count
  // are the H100's of v11, where memory bound); 13.6% before the fit (the datasheet's factors), 3.6% after, 5.9% left
  // out; kivi 4-bit at MHA +16.6% after the fit.
  std::string gpu;
  const auto m = load_measurements(
      std::string(ATTNLAB_SOURCE_DIR) + "/sim/measurements/h200-compressed-decode-v21-2026-12-07.json", &gpu);
  REQUIRE(gpu == "h200");
  REQUIRE(m.size() == 14);
  const GpuSpec shipped = load_gpu_spec(gpu);
  std::vector<double> errors;
  for (const auto& x : m) {
    const double ratio = predict(make_schedule(x.problem, x.variant, shipped), shipped).time_ms / x.median_ms;
    WARN(fmt::format("{}: model / measured {:.3f} (the H100's factors)", decode_row_name(x), ratio));
    errors.push_back(std::abs(ratio - 1));
  }
  WARN(fmt::format("H200 from the H100's factors: median |error| {:.1f}%, worst {:.1f}%", 100 * median(errors),
                   100 * *std::max_element(errors.begin(), errors.end())));
  CHECK(median(errors) <= 0.15);
  const Calibration c = calibrate(shipped, m);
  WARN(fmt::format("median |error| before {:.1f}%, after {:.1f}%, leave-one-out {:.1f}%", 100 * c.median_error_before,
                   100 * c.median_error_after, 100 * c.median_error_loo));
  CHECK(c.median_error_after < 0.15);
  CHECK(c.median_error_loo < 0.15);
  REQUIRE(c.rows.size() == m.size());
  for (size_t i = 0; i < m.size(); ++i) {
    const double error = c.rows[i].after_ms / c.rows[i].measured_ms - 1;
    INFO(decode_row_name(m[i]) << ": " << error);
    const bool count_of_this_build = !(m[i].variant.id == "kivi" && m[i].variant.params.integer("bits") == 4);
    if (count_of_this_build) CHECK(std::abs(error) < 0.15);
    else WARN(fmt::format("{}: {:+.1f}% after the fit (kDecodeIssue counts v3)", decode_row_name(m[i]), 100 * error));
  }
}

TEST_CASE("every kernel on the H100, both generations, prefill and decode: within 10% after calibration, factors physical",
          "[sim][calibrate]") {
  // sim/measurements/h100-all-kernels-2026-11-26.json: h100-attnlab-kernels.json (flash2 and int_flash, mma.sync
  // and wgmma, 36 rows), the turbo prefill's v2 run from FP16 inputs beside flash2 and int_flash (30,
  // kernels/bench/h100-turbo-prefill-v2-fp16in-2026-11-26.json), the turbo and kivi decode kernels (10,
  // h100-turbo-kivi-decode.json), our FP16 decode (2, kernels/bench/h100-turbo-decode-v11-2026-11-26.json) and
  // the FP8 prefill, flash3_fp8 v6 (6, kernels/bench/h100-flash3-fp8-v6-2026-11-26.json). Every factor is held
  // to its physical range (calibrate.cpp kPhysical), every kernel's stall measured (kDecodeIssue, kPrefillIssue;
  // the wgmma kernels take none). On 2026-11-26: median |error| 3.4% after, 3.7% left out (23.9% before: the
  // datasheet's factors); the worst rows int_flash (wgmma) at N 16384 (−14.0%) and flash3_fp8 causal at 4k
  // (+12.8%: the model has no term for its ring and ping-pong, and predicts all six 9–13% slow). (Before turbo's GQA stall was measured at the benchmark's shape, its 4-bit
  // row was +23–29%.)
  // Its two FP16 decode rows (B 16, N 32k, 32/32 and 32/8 heads) timed the prefill kernel at q_len 1, which decode
  // no longer runs on (kernels/flash2/flash2_decode.cu): the model now predicts the decode kernel, so they are set
  // aside until that kernel's own rows are measured.
  std::string gpu;
  // Its four kivi rows timed decode v1 (every code through FP32) and its six turbo decode rows v11, where kDecodeIssue
  // now counts kivi v4's and turbo v21's loops: both set aside, and kivi v5's rows of one H100 on 2026-12-06
  // (sim/measurements/h100-turbo-kivi-decode-v18-2026-12-06.json) taken instead; that file's turbo rows time v18,
  // whose counts kDecodeIssue no longer holds (v21 is timed on an H200 only: the test above), so they are set aside
  // too until v21 is timed on an H100. On 2026-12-07: 20.0% before, 2.3% after, 2.4% left out (2026-12-06 with
  // turbo v18's rows and counts: 20.9%, 2.6%, 3.1%).
  auto m = load_measurements(std::string(ATTNLAB_SOURCE_DIR) + "/sim/measurements/h100-all-kernels-2026-11-26.json", &gpu);
  REQUIRE(m.size() == 84);
  std::erase_if(m, [](const Measurement& x) {
    const bool decode_kernel = x.variant.id == "flash2" || x.variant.id == "kivi" || x.variant.id == "turbo";
    return x.problem.phase == Phase::decode && decode_kernel;
  });
  REQUIRE(m.size() == 72);
  std::string decode_gpu;
  const auto decode = load_measurements(
      std::string(ATTNLAB_SOURCE_DIR) + "/sim/measurements/h100-turbo-kivi-decode-v18-2026-12-06.json", &decode_gpu);
  REQUIRE(decode_gpu == gpu);
  std::copy_if(decode.begin(), decode.end(), std::back_inserter(m),
               [](const Measurement& x) { return x.variant.id == "kivi"; });
  REQUIRE(m.size() == 76);
  const GpuSpec spec = load_gpu_spec(gpu);
  const Calibration c = calibrate(spec, m);
  WARN(fmt::format("median |error| before {:.1f}%, after {:.1f}%, leave-one-out {:.1f}%", 100 * c.median_error_before,
                   100 * c.median_error_after, 100 * c.median_error_loo));
  CHECK(c.median_error_after <= 0.10);
  CHECK(c.median_error_loo <= 0.12);
  for (const auto& [factor, value] : c.efficiency) {
    INFO(factor << " = " << value);
    const auto [lo, hi] = physical_range(factor);
    CHECK(value >= lo * (1 - 1e-9));
    CHECK(value <= hi * (1 + 1e-9));
  }
  for (const auto& r : c.rows) {  // no kernel worse than 20%
    INFO(r.label << ": " << r.after_ms << " ms against " << r.measured_ms);
    CHECK(std::abs(r.after_ms / r.measured_ms - 1) <= 0.20);
  }
}


TEST_CASE("the H200 predicted with the H100's factors, no re-fit: within 10% (median)", "[sim][calibrate]") {
  // sim/measurements/h200-kernels-2026-11-26.json: the prefill kernels (turbo's three exponentials, flash2,
  // int_flash, flash3_fp8; six shapes) and the decode kernels (turbo, kivi, flash2; MHA and GQA 4:1) timed on an
  // H200. The
  // shipped h200.json carries the H100's fitted factors, transferred (same SM and clocks). On 2026-11-26: median
  // |error| 3.1%; the worst row turbo 4-bit decode at MHA (+20.4%: its stall is the H100's, whose global-memory
  // part the H200's faster HBM shortens — the model takes one stall for every GPU), then our FP16 decode at
  // GQA 4:1 (+10.8%; −83% before the model ran it as the kernel does) and flash3_fp8 v5 (+8 to +11%, as on the
  // H100: no term for its ring and ping-pong). The issue asks for these errors reported, not bounded: no
  // worst-row assertion.
  // Its FP16 decode rows timed the prefill kernel at q_len 1, which decode no longer runs on, its kivi rows decode
  // v1 and its turbo decode rows v11, which kDecodeIssue no longer counts: all set aside, as above (median |error|
  // then 3.9%, worst 9.8%); today's decode kernels on the H200 are the test "the compressed-cache decode kernels on
  // the H200" above.
  std::string gpu;
  auto m = load_measurements(std::string(ATTNLAB_SOURCE_DIR) + "/sim/measurements/h200-kernels-2026-11-26.json", &gpu);
  REQUIRE(gpu == "h200");
  REQUIRE(m.size() == 48);
  std::erase_if(m, [](const Measurement& x) {
    const bool decode_kernel = x.variant.id == "flash2" || x.variant.id == "kivi" || x.variant.id == "turbo";
    return x.problem.phase == Phase::decode && decode_kernel;
  });
  REQUIRE(m.size() == 36);
  const GpuSpec spec = load_gpu_spec(gpu);
  std::vector<double> errors;
  for (const auto& x : m) errors.push_back(std::abs(predict(make_schedule(x.problem, x.variant, spec), spec).time_ms / x.median_ms - 1));
  const double mid = median(errors), worst = *std::max_element(errors.begin(), errors.end());
  WARN(fmt::format("H200 from the H100's factors: median |error| {:.1f}%, worst {:.1f}%", 100 * mid, 100 * worst));
  CHECK(mid <= 0.10);
}

TEST_CASE("flash2 prefill, three generations, on the H200 from the H100's factors: median within 10%", "[sim][calibrate]") {
  // kernels/bench/h200-flash2-prefill-v2-d{128,64}-2026-12-05.json (`attnlab bench`, configs/bench-flash2-prefill.json):
  // wgmma v2 (the TMA producer, kv_loads = tma_producer), v1 (cp_async) and mma.sync, B 4, H 16, N 4k–16k, causal and
  // not, d 128 and 64 — 36 rows, no re-fit. On 2026-12-05: median |error| 4.7%; v2 at 0.97–1.06 of its time at d 128
  // and N ≤ 8k but 0.86–0.87 at N 16k (the model credits the producer's overlap in full where the issue rate binds:
  // Nsight Compute, kernels/PERF.md), 1.05–1.15 at d 64; the worst row v1 at d 64, causal, N 4k (+16.3%). Reported
  // per row, bounded in the median as the test above.
  std::vector<Measurement> m;
  for (const char* d : {"d128", "d64"}) {
    std::string gpu;
    auto part = load_measurements(
        fmt::format("{}/kernels/bench/h200-flash2-prefill-v2-{}-2026-12-05.json", ATTNLAB_SOURCE_DIR, d), &gpu);
    REQUIRE(gpu == "h200");
    m.insert(m.end(), part.begin(), part.end());
  }
  REQUIRE(m.size() == 36);
  const GpuSpec spec = load_gpu_spec("h200");
  std::vector<double> errors;
  for (const auto& x : m) {
    const double ratio = predict(make_schedule(x.problem, x.variant, spec), spec).time_ms / x.median_ms;
    WARN(fmt::format("{} (kernel {}, kv_loads {}): model / measured {:.3f}", x.label, x.variant.params.choice("kernel"),
                     x.variant.params.choice("kv_loads"), ratio));
    errors.push_back(std::abs(ratio - 1));
  }
  const double mid = median(errors), worst = *std::max_element(errors.begin(), errors.end());
  WARN(fmt::format("flash2 on the H200: median |error| {:.1f}%, worst {:.1f}%", 100 * mid, 100 * worst));
  CHECK(mid <= 0.10);
}

TEST_CASE("turbo prefill v3 and the cp.async kernel on the H100: every row within 10%", "[sim][calibrate]") {
  // kernels/bench/h100-turbo-prefill-v3-2026-12-05.json (`prefill_session.sh STEP=turbo-bench`,
  // configs/bench-turbo-prefill-loads.json): the whole prefill from FP16 Q/K/V with the producer warpgroup
  // (kv_loads = tma_producer) and the cp.async kernel, SAS FP32 and exp2, B 4, H 16, d 128, N 4k–16k, causal and not —
  // 24 rows, the shipped H100 spec, no re-fit. The producer kernel's SAS row in kPrefillIssue (measured the same day)
  // moved its predictions from 0.88–0.93 of the measured times (the cp.async kernel's count and stall with the
  // producer's full overlap) to 0.96–1.06 (kernels/PERF.md); the cp.async rows stand at 0.97–1.06; the producer kernel
  // with exp2, whose row was measured on the H200 (2026-12-05), at 1.01–1.06 (0.90–0.97 with the cp.async kernel's).
  // Bounded: every turbo row. Reported: int_flash v3 (its own row, measured on the H200; the case below).
  std::string gpu;
  const auto m = load_measurements(std::string(ATTNLAB_SOURCE_DIR) + "/kernels/bench/h100-turbo-prefill-v3-2026-12-05.json", &gpu);
  REQUIRE(gpu == "h100-sxm5");
  REQUIRE(m.size() == 30);
  const GpuSpec spec = load_gpu_spec(gpu);
  int turbo_rows = 0;
  for (const auto& x : m) {
    const double ratio = predict(make_schedule(x.problem, x.variant, spec), spec).time_ms / x.median_ms;
    const bool turbo = x.variant.id == "turbo";
    const bool producer = x.variant.params.choice("kv_loads") == "tma_producer", exp2 = turbo && x.variant.params.flag("exact_exp");
    WARN(fmt::format("{} {}{}: model / measured {:.3f}", x.label, producer ? "tma_producer" : "cp_async", exp2 ? " exp2" : "", ratio));
    if (!turbo) continue;
    ++turbo_rows;
    INFO(x.label << (producer ? " tma_producer" : " cp_async") << (exp2 ? " exp2" : " SAS"));
    CHECK(std::abs(ratio - 1) <= 0.10);
  }
  CHECK(turbo_rows == 24);
}

TEST_CASE("int_flash v3 and turbo on the H200 (issue 35's final comparison): the measured rows within 10%",
          "[sim][calibrate]") {
  // kernels/bench/h200-int8-prefill-d128-2026-12-05.json and …-d64-… (`prefill_session.sh STEP=int8`): B 4, H 16,
  // N 4k–16k, causal and not; the shipped H200 spec, no re-fit. int_flash's producer kernel (block_c 128) has its
  // kPrefillIssue row at d 128 (Nsight Compute, the same call: 1 001 instructions per warp-tile at issue 0.60), which
  // makes the model name latency as the profiler does; at d 64 it has none and is scheduled by its loads' overlap.
  // Bounded: int_flash's wgmma rows (both d) and turbo at d 128, SAS FP32 and exp2 (their producer kernels' own rows).
  // Reported: the mma.sync kernel (B_c 64) and turbo at d 64 (no producer row: 0.87–0.90).
  int bounded = 0;
  for (const char* file : {"h200-int8-prefill-d128-2026-12-05.json", "h200-int8-prefill-d64-2026-12-05.json"}) {
    std::string gpu;
    const auto m = load_measurements(std::string(ATTNLAB_SOURCE_DIR) + "/kernels/bench/" + file, &gpu);
    REQUIRE(gpu == "h200");
    REQUIRE(m.size() == 24);
    const GpuSpec spec = load_gpu_spec(gpu);
    for (const auto& x : m) {
      const double ratio = predict(make_schedule(x.problem, x.variant, spec), spec).time_ms / x.median_ms;
      WARN(fmt::format("{} (block_c {}): model / measured {:.3f}", x.label,
                       x.variant.params.values().count("block_c") ? x.variant.params.integer("block_c") : 0, ratio));
      const bool wgmma = x.variant.id == "int_flash" && x.variant.params.integer("block_c") == 128;
      const bool bound = wgmma || (x.variant.id == "turbo" && x.problem.head_dim == 128);
      if (!bound) continue;
      ++bounded;
      INFO(x.label << " d " << x.problem.head_dim << " N " << x.problem.kv_len << (x.problem.causal ? " causal" : ""));
      CHECK(std::abs(ratio - 1) <= 0.10);
    }
  }
  CHECK(bounded == 24);
}

}  // namespace
}  // namespace attnlab::sim
