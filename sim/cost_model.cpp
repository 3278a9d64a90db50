// attnlab sim: the cost model (cost_model.h states each step).
#include "sim/cost_model.h"

#include "core/error.h"
#include "core/persistent_order.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <queue>
#include <vector>

namespace attnlab::sim {

namespace {

bool is_tensor(Unit u) { return u == Unit::tensor_fp16 || u == Unit::tensor_fp8 || u == Unit::tensor_int8; }

constexpr double kSmemReservedPerCta = 1024;  // step 1

// Persistent CTAs' makespan over the ideal: CTA c runs row blocks c, c + S, … of core/persistent_order.h's order, a
// block's work its tiles plus one, as the grid's CTA (its prologue and epilogue: v4's pipeline drained at every
// block's end — its ping-pong's turns started over and the first S waited for the block's Q — and the H100 measured
// it within 1% of the grid at d 128 not causal, kernels/PERF.md "wgmma v4"). Every head has the same row blocks,
// x = 0 the longest (a causal head's last block): the classes sorted longest first, count / heads of each, are the
// tiles of x = 0, 1, …. 0 where the classes do not split so (the caller's longest-first placement then stands).
double persistent_tail_factor(const Schedule& s, double slots) {
  const int heads = s.persistent_heads, S = std::max(1, static_cast<int>(slots));
  std::vector<std::pair<int64_t, double>> classes;
  for (const auto& c : s.classes) classes.push_back({c.tiles, c.count});
  std::sort(classes.begin(), classes.end(), [](auto& a, auto& b) { return a.first > b.first; });
  std::vector<int64_t> tiles_of_x;
  for (const auto& [tiles, count] : classes) {
    const double per_head = count / std::max(1, heads);
    if (heads < 1 || per_head != std::floor(per_head)) return 0;
    tiles_of_x.insert(tiles_of_x.end(), static_cast<size_t>(per_head), tiles);
  }
  const int blocks = static_cast<int>(tiles_of_x.size());
  if (blocks == 0) return 0;
  std::vector<double> load(static_cast<size_t>(std::min<int64_t>(S, int64_t(blocks) * heads)), 0.0);
  double total = 0;
  for (int64_t w = 0; w < int64_t(blocks) * heads; ++w) {
    int bh = 0, x = 0;
    persistent_row_block(heads, s.persistent_band_heads, blocks, static_cast<int>(w), bh, x);
    load[static_cast<size_t>(w % S)] += double(tiles_of_x[static_cast<size_t>(x)] + 1);
    total += double(tiles_of_x[static_cast<size_t>(x)] + 1);
  }
  const double makespan = *std::max_element(load.begin(), load.end());
  return total > 0 ? makespan / (total / double(S)) : 0;
}

// Makespan of the CTAs placed longest first on `slots` slots, over the ideal Σ work / slots.
// A CTA's work is its tiles plus one (prologue and epilogue ≈ one tile). Persistent CTAs (s.persistent_ctas): the same
// work, placed as the kernel hands the row blocks out (persistent_tail_factor) — statically, where the grid's CTAs go
// to whichever SM frees first; with the dynamic order (s.persistent_dynamic, head by head) as the grid's.
double tail_factor(const Schedule& s, double slots) {
  if (s.persistent_ctas && !s.persistent_dynamic)  // dynamic: the next block to the first CTA free, as the grid's
    if (const double f = persistent_tail_factor(s, slots); f > 0) return f;
  std::vector<std::pair<int64_t, double>> classes;
  for (const auto& c : s.classes) classes.push_back({c.tiles + 1, c.count});
  std::sort(classes.begin(), classes.end(), [](auto& a, auto& b) { return a.first > b.first; });
  double total = 0;
  for (const auto& [w, n] : classes) total += double(w) * n;
  const auto S = static_cast<int64_t>(slots);
  double count = 0;
  for (const auto& c : classes) count += c.second;
  if (count <= 0 || total <= 0) return 1;
  // Simulate up to kSimulatedCtas CTAs (well under a millisecond); beyond, one class is exact in closed form — ⌈n/S⌉
  // waves of w — and several are bounded by Graham's LPT bound, the ideal plus the longest CTA (the tail is
  // then under 1/kSimulatedCtas·S of the whole anyway). A fuzzed config of 4·10⁵ sequences had the
  // simulation run for minutes.
  constexpr double kSimulatedCtas = 1 << 16;
  if (count > kSimulatedCtas) {
    const double ideal = total / double(S);
    if (classes.size() == 1) return std::ceil(classes[0].second / double(S)) * double(classes[0].first) / ideal;
    return (ideal + double(classes.front().first)) / ideal;
  }
  std::priority_queue<double, std::vector<double>, std::greater<>> free_at;
  for (int64_t i = 0; i < std::min<int64_t>(S, static_cast<int64_t>(count)); ++i) free_at.push(0);
  double makespan = 0;
  for (const auto& [w, n] : classes)
    for (int64_t i = 0; i < static_cast<int64_t>(n); ++i) {
      const double start = free_at.top();
      free_at.pop();
      free_at.push(start + double(w));
      makespan = std::max(makespan, start + double(w));
    }
  return makespan / (total / double(S));
}

}  // namespace

int ctas_per_sm(const Schedule& s, const GpuSpec& g, std::vector<std::string>* explain) {
  if (s.smem_bytes > g.smem_per_cta_bytes)
    fail_input("model", fmt::format("{}: {:.0f} KiB of shared memory per CTA exceeds the {}'s {:.0f} KiB", s.variant,
                                    s.smem_bytes / 1024, g.name, g.smem_per_cta_bytes / 1024));
  const int by_smem = s.smem_bytes > 0 ? static_cast<int>(g.smem_per_sm_bytes / (s.smem_bytes + kSmemReservedPerCta))
                                       : g.max_ctas_per_sm;
  const int by_threads = g.max_threads_per_sm / s.threads;
  const int by_regs = static_cast<int>(g.regs_per_sm / (double(s.regs_per_thread) * s.threads));
  int k = std::max(1, std::min({by_smem, by_threads, by_regs, g.max_ctas_per_sm}));
  if (s.pow2_ctas)
    while (k & (k - 1)) k &= k - 1;  // the largest power of two ≤ k
  if (explain)
    explain->push_back(fmt::format("occupancy: {} CTA(s)/SM (shared memory allows {}, threads {}, registers {}, limit {})",
                                   k, by_smem, by_threads, by_regs, g.max_ctas_per_sm));
  return k;
}

double repairman_issue_rate(double warps, double stall) {
  auto at = [stall](int w) {  // 1 − P₀ with W = w
    double sum = 1, term = 1;
    for (int k = 1; k <= w; ++k) sum += (term *= double(w - k + 1) / stall);
    return 1 - 1 / sum;
  };
  const int lo = std::max(0, int(std::floor(warps)));
  const double f = warps - lo;
  return f > 0 ? at(lo) + f * (at(lo + 1) - at(lo)) : at(lo);
}

Layout layout(const Schedule& s, const GpuSpec& g, const ModelOptions& o, std::vector<std::string>* explain) {
  std::vector<std::string> scratch;
  std::vector<std::string>& ex = explain ? *explain : scratch;
  Layout l;
  l.variant = s.variant;
  l.stages = s.stages;
  l.warpgroup_mma = s.warpgroup_mma;
  l.producer_loads = s.producer_loads;
  l.work = s.total();
  l.ctas_per_sm = ctas_per_sm(s, g, &ex);
  l.slots = double(g.sm_count) * l.ctas_per_sm;
  l.warps_per_scheduler = double(l.ctas_per_sm * s.warps) / (g.issue_per_clk_per_sm / 32);
  l.stall = s.stall;
  l.latency_term = !s.warpgroup_mma || l.stall.total() > 0;
  l.interleave = l.ctas_per_sm * (s.warpgroup_mma ? std::max(1, s.warps / 4) : 1);
  // DRAM bytes. With L2 reuse, the row blocks of one head re-read its K/V tiles at about the same time,
  // so only the first read reaches DRAM — as long as what those reads span, for the heads in flight, fits in L2
  // (else the reuse shrinks in proportion). The row blocks of a head that run together start in one wave and
  // advance at one rate, so what they span is the few tiles between the first and the last of them
  // (kReaderSpreadTiles), not the head's whole K/V: a head's K/V of 512 MB at 1M tokens is re-read from L2 as one
  // of 8 MB is.
  l.dram_bytes = l.work.total_bytes();
  if (o.l2_reuse && s.kv_unique_bytes > 0) {
    const double heads_in_flight = std::max(1.0, l.slots / std::max(1.0, s.ctas_per_head));
    const double per_head = std::min(s.kv_unique_bytes / s.kv_heads_total,
                                     kReaderSpreadTiles * double(s.block_c) * s.per_key.total_bytes());
    const double reuse = s.readers_in_step ? 1.0 : std::min(1.0, g.l2_bytes / (heads_in_flight * per_head));
    const double saved = reuse * std::max(0.0, s.kv_read_bytes() - s.kv_unique_bytes);
    l.dram_bytes -= saved;
    if (explain)
      ex.push_back(fmt::format("L2 reuse: {:.0f}% of the K/V re-reads hit L2 ({:.1f} MiB of K/V re-reads saved)",
                               reuse * 100, saved / (1 << 20)));
  }
  // What the launch writes stays in L2 up to the GPU's resident share when it ends (gpu_spec.h): not yet DRAM.
  if (o.l2_reuse && g.l2_write_resident_bytes > 0) {
    const double kept = std::min(written_bytes(l.work), g.l2_write_resident_bytes);
    l.dram_bytes -= kept;
    if (explain && kept > 0)
      ex.push_back(fmt::format("L2 write-back: {:.1f} MiB of the launch's writes still in L2 when it ends", kept / (1 << 20)));
  }
  l.tail_factor = s.classes.empty() ? 1.0 : std::max(1.0, tail_factor(s, l.slots));
  l.waves = s.ctas() / l.slots;
  for (const auto& c : s.classes) l.serial_bytes += c.count * c.rows * s.per_row.total_bytes();
  if (s.extra.bytes.count("partials")) l.serial_bytes += s.extra.bytes.at("partials");
  l.launches = s.classes.empty() ? 3 : (s.extra.bytes.count("partials") ? 2 : 1);
  for (const Schedule& next : s.then) l.then.push_back(layout(next, g, o, explain));
  return l;
}

Timing timing(const Layout& l, const GpuSpec& g) {
  Timing t;
  t.issue_rate = latency_issue_rate(l.latency_term, l.warps_per_scheduler, g.issue_latency_cycles, l.stall.total());
  for (const auto& [u, ops] : l.work.ops) {
    if (ops <= 0) continue;
    double rate = g.peak(u) * g.efficiency_of(u);
    if (is_tensor(u) && !l.warpgroup_mma) rate *= g.mma_sync_fraction;
    if (u == Unit::issue) rate *= t.issue_rate;
    if (!(rate > 0))
      fail_input("model", fmt::format("{} needs {} units, which the {} does not have", l.variant, to_string(u), g.name));
    const double tu = ops / rate;
    t.unit_ms[to_string(u)] = tu * 1e3;
    if (is_tensor(u) && tu > t.t_tensor) t.t_tensor = tu, t.tensor_unit = to_string(u);
    if (!is_tensor(u) && tu > t.t_simt) t.t_simt = tu, t.simt_unit = to_string(u);
  }
  const double bandwidth = g.peak(Unit::hbm) * g.efficiency_of(Unit::hbm);
  t.t_mem = l.dram_bytes / bandwidth;
  t.t_rows = l.serial_bytes / bandwidth;
  const double t_kv = t.t_mem - t.t_rows;
  t.unit_ms["hbm"] = t.t_mem * 1e3;
  const double t_overlapped = overlapped_compute(t.t_tensor, t.t_simt, l.interleave, l.producer_loads);
  const double t_compute = t_overlapped * l.tail_factor;
  t.t_body = t.t_rows + (l.stages >= 2 ? std::max(t_kv, t_compute) : t_kv + t_compute);
  const double waves_ms = l.waves * g.cta_overhead_us * 1e-3, launches_ms = l.launches * kLaunchUs * 1e-3;
  t.time_ms = t.t_body * 1e3 + waves_ms + launches_ms;
  if (t_kv + t.t_rows >= t_compute) t.bound = "memory";
  else t.bound = t.t_tensor >= t.t_simt ? t.tensor_unit : t.simt_unit;
  if (t.bound == "issue" && t.issue_rate < 1) t.bound = "latency";

  // The same sum term by term. With two or more stages K/V traffic and compute overlap and the larger stands;
  // compute is the binding unit's time (an issue-bound one split into issue at the peak rate and what latency
  // adds), the exposed share of the others, and the tail's stretch.
  const auto add_ms = [&](const std::string& name, double ms) {
    if (ms > 0) t.terms.push_back({name, ms});
  };
  const auto add = [&](const std::string& name, double s) { add_ms(name, s * 1e3); };
  add("rows", t.t_rows);
  const bool kv_stands = l.stages >= 2 && t_kv >= t_compute;
  if (kv_stands || l.stages < 2) add("kv", t_kv);
  if (!kv_stands) {
    const bool tensor_binds = t.t_tensor >= t.t_simt;
    const double t_unit = std::max(t.t_tensor, t.t_simt);
    const std::string unit = tensor_binds ? t.tensor_unit : t.simt_unit;
    if (!tensor_binds && unit == "issue" && t.issue_rate < 1) {
      add(unit, t_unit * t.issue_rate);  // issue at the peak rate
      add("latency", t_unit * (1 - t.issue_rate));
    } else {
      add(unit, t_unit);
    }
    add("overlap", t_overlapped - t_unit);
    add("tail", t_compute - t_overlapped);
  }
  add_ms("waves", waves_ms);
  add_ms("launches", launches_ms);
  double later_ms = 0;
  for (const Layout& next : l.then) later_ms += timing(next, g).time_ms;
  t.time_ms += later_ms;
  add_ms("later", later_ms);
  return t;
}

Prediction predict(const Schedule& s, const GpuSpec& g, const ModelOptions& o) {
  Prediction pr;
  pr.gpu = g.id;
  pr.explain = s.explain;
  pr.explain.push_back(fmt::format("tiles: B_r = {}, B_c = {} from the {}; {} warps, {} stage(s)", s.block_r,
                                   s.block_c, s.tiles_from, s.warps, s.stages));
  const Layout l = layout(s, g, o, &pr.explain);
  const Timing t = timing(l, g);
  pr.hbm_bytes = l.work.bytes;
  for (const auto& [u, ops] : l.work.ops)
    if (ops > 0) pr.ops[to_string(u)] = ops;
  pr.dram_bytes = l.dram_bytes;
  std::vector<Timing> later;  // step 7: the later launches' bytes, operations and unit times add
  for (const Layout& next : l.then) {
    later.push_back(timing(next, g));
    for (const auto& [k, v] : next.work.bytes) pr.hbm_bytes[k] += v;
    for (const auto& [u, ops] : next.work.ops)
      if (ops > 0) pr.ops[to_string(u)] += ops;
    pr.dram_bytes += next.dram_bytes;
  }
  pr.smem_bytes = s.smem_bytes;
  pr.ctas = s.ctas();
  pr.ctas_per_sm = l.ctas_per_sm;
  pr.waves = l.waves;  // persistent CTAs: the grid's waves of row blocks (each block's fill and drain stay)
  pr.occupancy = double(l.ctas_per_sm * s.warps) / (g.max_threads_per_sm / 32.0);
  pr.tail_factor = l.tail_factor;
  pr.warps_per_scheduler = l.warps_per_scheduler;
  pr.issue_rate = t.issue_rate;
  pr.unit_ms = t.unit_ms;
  for (const Timing& n : later)
    for (const auto& [u, ms] : n.unit_ms) pr.unit_ms[u] += ms;
  pr.time_ms = t.time_ms;
  pr.terms = t.terms;
  pr.bound = t.bound;
  pr.explain.push_back(fmt::format(
      "t_mem {:.4f} ms (of which Q/O {:.4f}), t_tensor {:.4f} ms ({}), t_simt {:.4f} ms ({}), tail ×{:.3f} over "
      "{:.2f} waves → body {:.4f} ms; + {:.2f} µs per wave; {} launch(es)",
      t.t_mem * 1e3, t.t_rows * 1e3, t.t_tensor * 1e3, t.tensor_unit, t.t_simt * 1e3, t.simt_unit, l.tail_factor,
      pr.waves, t.t_body * 1e3, g.cta_overhead_us, l.launches));
  if (l.latency_term && l.stall.total() > 0)
    pr.explain.push_back(fmt::format(
        "latency: {:.2f} warps per scheduler, each stalled {:.2f} cycles after an instruction (measured: FMA/integer "
        "results {:.2f}, shared memory/SFU/conversions {:.2f}, global memory {:.2f}, barriers {:.2f}, other {:.2f}) → "
        "{:.0f}% of the issue rate (one scheduler serving its warps)",
        l.warps_per_scheduler, l.stall.total(), l.stall.fixed_latency, l.stall.mio, l.stall.global, l.stall.barrier,
        l.stall.other, 100 * t.issue_rate));
  else if (l.latency_term)
    pr.explain.push_back(fmt::format("latency: {:.2f} warps per scheduler against {:.2f} cycles between a warp's "
                                     "instructions → {:.0f}% of the issue rate",
                                     l.warps_per_scheduler, g.issue_latency_cycles, 100 * t.issue_rate));
  for (size_t i = 0; i < later.size(); ++i)
    pr.explain.push_back(fmt::format("launch {}: {:.4f} ms ({} CTA(s)/SM, {:.2f} warps per scheduler, bound: {})",
                                     i + 2, later[i].time_ms, l.then[i].ctas_per_sm, l.then[i].warps_per_scheduler,
                                     later[i].bound));
  return pr;
}

}  // namespace attnlab::sim
