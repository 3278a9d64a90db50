// attnlab sim: timing() over the calibrated parameters alone (factor_timing.h).
#include "sim/factor_timing.h"

#include <algorithm>

namespace attnlab::sim {

namespace {

bool is_tensor(Unit u) { return u == Unit::tensor_fp16 || u == Unit::tensor_fp8 || u == Unit::tensor_int8; }

}  // namespace

FactorTiming::FactorTiming(const GpuSpec& gpu, const std::vector<Layout>& layouts)
    : mma_sync_fraction_(gpu.mma_sync_fraction) {
  GpuSpec plain = gpu;
  plain.efficiency.clear();
  for (Unit u : kUnits) peak_[unit_index(u)] = gpu.peak(u);
  for (const Layout& l : layouts) {
    timing(l, plain);  // a unit the GPU lacks fails here, with timing()'s message
    rows_.push_back(row_of(l));
  }
}

FactorTiming::Row FactorTiming::row_of(const Layout& l) {
  Row r;
  for (const auto& [u, ops] : l.work.ops)
    if (ops > 0) r.ops.push_back({unit_index(u), ops, is_tensor(u)});
  r.mma_sync = !l.warpgroup_mma, r.producer_loads = l.producer_loads;
  r.dram_bytes = l.dram_bytes, r.serial_bytes = l.serial_bytes, r.interleave = l.interleave;
  r.tail_factor = l.tail_factor, r.waves = l.waves, r.stages = l.stages, r.launches = l.launches;
  r.warps_per_scheduler = l.warps_per_scheduler, r.latency_term = l.latency_term, r.issue_stall = l.stall.total();
  for (const Layout& next : l.then) r.then.push_back(row_of(next));
  return r;
}

FactorTiming::Rates FactorTiming::rates(const FactorParams& p) const {
  Rates r;
  for (std::size_t u = 0; u < kUnitCount; ++u) {
    r.plain[u] = peak_[u] * p.efficiency[u];
    r.mma_sync[u] = r.plain[u] * mma_sync_fraction_;
  }
  r.bandwidth = r.plain[unit_index(Unit::hbm)];
  r.cta_overhead_us = p.cta_overhead_us;
  r.issue_latency_cycles = p.issue_latency_cycles;
  return r;
}

// timing() (cost_model.cpp), step for step.
double FactorTiming::time_ms(std::size_t i, const Rates& r) const { return time_ms(rows_[i], r); }

double FactorTiming::time_ms(const Row& l, const Rates& r) const {
  const double issue = latency_issue_rate(l.latency_term, l.warps_per_scheduler, r.issue_latency_cycles, l.issue_stall);
  double t_tensor = 0, t_simt = 0;
  for (const Op& o : l.ops) {
    double rate = o.tensor && l.mma_sync ? r.mma_sync[o.unit] : r.plain[o.unit];
    if (o.unit == unit_index(Unit::issue)) rate *= issue;
    const double tu = o.ops / rate;
    if (o.tensor) t_tensor = std::max(t_tensor, tu);
    else t_simt = std::max(t_simt, tu);
  }
  const double t_mem = l.dram_bytes / r.bandwidth;
  const double t_rows = l.serial_bytes / r.bandwidth;
  const double t_kv = t_mem - t_rows;
  const double t_compute = overlapped_compute(t_tensor, t_simt, l.interleave, l.producer_loads) * l.tail_factor;
  const double t_body = t_rows + (l.stages >= 2 ? std::max(t_kv, t_compute) : t_kv + t_compute);
  double t = t_body * 1e3 + l.waves * r.cta_overhead_us * 1e-3 + l.launches * kLaunchUs * 1e-3;
  for (const Row& next : l.then) t += time_ms(next, r);
  return t;
}

}  // namespace attnlab::sim
