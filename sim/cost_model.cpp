// attnlab sim: the cost model (cost_model.h states each step).
#include "sim/cost_model.h"

#include "core/error.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <queue>
#include <vector>

namespace attnlab::sim {

namespace {

bool is_tensor(Unit u) { return u == Unit::tensor_fp16 || u == Unit::tensor_fp8 || u == Unit::tensor_int8; }

int ctas_per_sm(const Schedule& s, const GpuSpec& g, std::vector<std::string>& explain) {
  if (s.smem_bytes > g.smem_per_cta_bytes)
    fail_input("model", fmt::format("{}: {:.0f} KiB of shared memory per CTA exceeds the {}'s {:.0f} KiB", s.variant,
                                    s.smem_bytes / 1024, g.name, g.smem_per_cta_bytes / 1024));
  const int by_smem = s.smem_bytes > 0 ? static_cast<int>(g.smem_per_sm_bytes / s.smem_bytes) : g.max_ctas_per_sm;
  const int by_threads = g.max_threads_per_sm / s.threads;
  const int by_regs = static_cast<int>(g.regs_per_sm / (double(s.regs_per_thread) * s.threads));
  const int k = std::max(1, std::min({by_smem, by_threads, by_regs, g.max_ctas_per_sm}));
  explain.push_back(fmt::format("occupancy: {} CTA(s)/SM (shared memory allows {}, threads {}, registers {}, limit {})",
                                k, by_smem, by_threads, by_regs, g.max_ctas_per_sm));
  return k;
}

// Makespan of the CTAs placed longest first on `slots` slots, over the ideal Σ work / slots.
// A CTA's work is its tiles plus one (prologue and epilogue ≈ one tile).
double tail_factor(const Schedule& s, double slots) {
  std::vector<std::pair<int64_t, double>> classes;
  for (const auto& c : s.classes) classes.push_back({c.tiles + 1, c.count});
  std::sort(classes.begin(), classes.end(), [](auto& a, auto& b) { return a.first > b.first; });
  double total = 0;
  for (const auto& [w, n] : classes) total += double(w) * n;
  const auto S = static_cast<int64_t>(slots);
  double count = 0;
  for (const auto& c : classes) count += c.second;
  if (count <= 0 || total <= 0) return 1;
  // Simulate when there are few CTAs per slot; otherwise the wave tail is negligible but the longest CTA bounds.
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

Prediction predict(const Schedule& s, const GpuSpec& g, const ModelOptions& o) {
  Prediction pr;
  pr.gpu = g.id;
  pr.explain = s.explain;
  pr.explain.push_back(fmt::format("tiles: B_r = {}, B_c = {} from the {}; {} warps, {} stage(s)", s.block_r,
                                   s.block_c, s.tiles_from, s.warps, s.stages));
  const Work w = s.total();
  pr.hbm_bytes = w.bytes;
  pr.smem_bytes = s.smem_bytes;
  pr.ctas = s.ctas();

  const int k = ctas_per_sm(s, g, pr.explain);
  pr.ctas_per_sm = k;
  const double slots = double(g.sm_count) * k;

  // DRAM bytes. With L2 reuse, the row blocks of one head re-read its K/V tiles at about the same time,
  // so only the first read reaches DRAM — as long as the K/V of the heads in flight fit in L2 (else the
  // reuse shrinks in proportion).
  pr.dram_bytes = w.total_bytes();
  if (o.l2_reuse && s.kv_unique_bytes > 0) {
    const double tile_kv = s.kv_read_bytes();
    const double heads_in_flight = std::max(1.0, slots / std::max(1.0, s.ctas_per_head));
    const double per_head = s.kv_unique_bytes / s.kv_heads_total;
    const double reuse = std::min(1.0, g.l2_bytes / (heads_in_flight * per_head));
    const double saved = reuse * std::max(0.0, tile_kv - s.kv_unique_bytes);
    pr.dram_bytes -= saved;
    pr.explain.push_back(fmt::format("L2 reuse: {:.0f}% of the K/V re-reads hit L2 ({:.1f} MiB of K/V re-reads saved)",
                                     reuse * 100, saved / (1 << 20)));
  }
  pr.waves = pr.ctas / slots;
  pr.occupancy = double(k * s.warps) / (g.max_threads_per_sm / 32.0);

  double t_tensor = 0, t_simt = 0;
  std::string tensor_unit = "tensor", simt_unit = "fp32_fma";
  for (const auto& [u, ops] : w.ops) {
    if (ops <= 0) continue;
    double rate = g.peak(u) * g.efficiency_of(u);
    if (is_tensor(u)) rate *= g.mma_sync_fraction;
    if (!(rate > 0))
      fail_input("model", fmt::format("{} needs {} units, which the {} does not have", s.variant, to_string(u), g.name));
    const double t = ops / rate;
    pr.ops[to_string(u)] = ops;
    pr.unit_ms[to_string(u)] = t * 1e3;
    if (is_tensor(u) && t > t_tensor) t_tensor = t, tensor_unit = to_string(u);
    if (!is_tensor(u) && t > t_simt) t_simt = t, simt_unit = to_string(u);
  }
  const double t_mem = pr.dram_bytes / (g.peak(Unit::hbm) * g.efficiency_of(Unit::hbm));
  pr.unit_ms["hbm"] = t_mem * 1e3;
  const double t_compute = std::max(t_tensor, t_simt) + std::min(t_tensor, t_simt) / k;
  const double t_body = s.stages >= 2 ? std::max(t_mem, t_compute) : t_mem + t_compute;
  pr.tail_factor = s.classes.empty() ? 1.0 : std::max(1.0, tail_factor(s, slots));
  const int launches = s.classes.empty() ? 3 : (s.extra.bytes.count("partials") ? 2 : 1);
  pr.time_ms = t_body * pr.tail_factor * 1e3 + launches * kLaunchUs * 1e-3;
  if (t_mem >= t_compute) pr.bound = "memory";
  else pr.bound = t_tensor >= t_simt ? tensor_unit : simt_unit;
  pr.explain.push_back(fmt::format(
      "t_mem {:.4f} ms, t_tensor {:.4f} ms ({}), t_simt {:.4f} ms ({}), overlap → body {:.4f} ms; tail ×{:.3f} over "
      "{:.2f} waves; {} launch(es)",
      t_mem * 1e3, t_tensor * 1e3, tensor_unit, t_simt * 1e3, simt_unit, t_body * 1e3, pr.tail_factor, pr.waves,
      launches));
  return pr;
}

}  // namespace attnlab::sim
