// attnlab sim: the cost model — a schedule (schedule.h) on a GPU (gpu_spec.h) → predicted time, and
// which resource bounds it. Every step is one line of arithmetic a learner can follow:
//
//   1. Occupancy: CTAs per SM k = min(⌊smem/SM ÷ (smem/CTA + 1 KB)⌋, ⌊threads/SM ÷ threads/CTA⌋,
//      ⌊regs/SM ÷ (regs/thread · threads/CTA)⌋, max CTAs/SM) — the runtime reserves 1 KB of shared memory
//      per CTA (CUDA C++ Programming Guide, compute capability 8.x and 9.0); slots S = SMs · k; warps per
//      scheduler W = k · warps/CTA ÷ schedulers per SM (issue_per_clk_per_sm / 32: one warp instruction per
//      clock each).
//   2. Unit times over the whole grid: t_u = ops_u / (peak_u · eff_u) for each execution unit, and
//      t_mem = DRAM bytes / (bandwidth · eff_hbm). Tensor peaks are scaled by mma_sync_fraction where the
//      kernel issues warp-level mma.sync (not for the wgmma kernels). eff_* = 1 until calibrated (calibrate.h).
//      The latency term: a warp waits L̄ cycles on average between its own instructions (the GPU's
//      issue_latency_cycles), so a scheduler with W warps issues min(1, W / L̄) instructions per clock, and
//      the issue unit's rate is scaled by that — a loop with few warps that cannot hide its dependent
//      latency is predicted as such. Not for wgmma kernels: their issue count is an upper bound (one wgmma
//      does the work of 16 to 64 counted MMAs) and their warps specialize. Where a kernel's instruction count
//      and its warps' stall Z (cycles a warp waits after each of its instructions: its pipes' dependent
//      latencies as its code exposes them) are measured (core/kernel_traits.h kPrefillIssue, kDecodeIssue), the
//      rate is the machine-repairman model's instead, wgmma or not: one scheduler serving W warps that each
//      think Z between instructions issues 1 − P₀, P₀ = 1 / Σ_{k=0}^{W} W!/(W−k)!·Z^{−k} (Nsight Compute's
//      rates of seven kernels at 2 and 4 warps per scheduler: within 0.05 of it, where min(1, W/(1 + Z)) is
//      off by up to 0.16 — kernels/PERF.md).
//   3. Overlap rule: the non-tensor units (FMA, SFU, INT32, CVT) issue from separate pipes and overlap
//      each other: t_simt = max of them. Within a warp the MMAs and the softmax alternate (FlashAttention-2
//      does not overlap them), but k resident CTAs interleave their phases:
//      t_compute = max(t_tensor, t_simt) + min(t_tensor, t_simt) / k, with k counting each of a wgmma
//      kernel's warpgroups (their MMAs are asynchronous, so one's softmax runs under another's MMAs).
//      Where a producer warpgroup copies the K/V tiles (Schedule::producer_loads; FlashAttention-3 §3.1's warp
//      specialization), the consumer warpgroups issue no copies and never wait for their own: their MMAs and
//      softmax overlap completely, t_compute = max(t_tensor, t_simt). Measured on the H100 (flash3_fp8 v8, fireq
//      prefill v6; kernels/PERF.md): the time the producer saves over the consumers' cp.async is this
//      min(t_tensor, t_simt) / k term at 0.79–1.11 of it (median 0.98) over 16 pairs of d 64 and 128.
//   4. Tail: CTAs run in waves over the S slots; uneven loops (causal) are placed longest first. The
//      makespan of that placement over the ideal Σ work / S multiplies t_compute (the per-SM units sit
//      idle in a ragged last wave; HBM bandwidth is shared by whoever runs, so t_mem is not multiplied).
//   5. Memory: the K/V tiles stream under the compute when double-buffered (stages ≥ 2); the prologue
//      (Qᵢ in) and the epilogue (Oᵢ out), and the split-KV partials, do not:
//      t = t_rows + max(t_kv, t_compute·tail) (one stage: t_rows + t_kv + t_compute·tail),
//   6. plus a fixed cta_overhead per CTA wave (pipeline fill and drain) and 4 µs per kernel launch (two
//      for split-KV decode: the combine pass).
//   7. A schedule's later launches (Schedule::then: one per cache width) are predicted the same way and
//      their times added.
// DRAM bytes: the schedule's HBM transfers, except that with l2_reuse the re-reads of a head's K and V
// by its other row blocks hit L2 (they run at about the same time) and only the first read reaches DRAM.
#pragma once

#include "sim/gpu_spec.h"
#include "sim/schedule.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

namespace attnlab::sim {

struct ModelOptions {
  bool l2_reuse = true;
};

// One term of step 5's sum: the terms of a prediction add up to its time_ms exactly (what the breakdown view
// stacks, so that a reader sees every part of the total: the binding unit, latency, the tail, the fixed costs).
struct TimeTerm {
  std::string name;  // kTimeTerms' key, or the binding unit's name (to_string(Unit)) for its own time
  double ms = 0;
};
// The terms' keys and what each is, in the order they stack (bottom first); the binding unit's own time stands
// between "kv" and "latency".
struct TimeTermName {
  const char* key;
  const char* words;
};
inline constexpr TimeTermName kTimeTerms[] = {
    {"rows", "Q/O traffic (serial)"},
    {"kv", "K/V traffic (HBM)"},
    {"latency", "latency (too few warps)"},
    {"overlap", "other units, not hidden"},
    {"tail", "tail (last partial wave)"},
    {"waves", "fixed cost per wave"},
    {"launches", "launches"},
    {"later", "later launches (merge)"},
    // Across GPUs (sim/context_parallel_model.h): the terms of the multi-GPU total instead of the above.
    {"gpu_attention", "attention, the slowest GPU of each step"},
    {"link", "K/V (decode: partials) on the links, not hidden"},
    {"gpu_merge", "merging the GPUs' partials (decode)"},
};

struct Prediction {
  std::string gpu;
  double time_ms = 0;
  std::string bound;                            // "memory", "tensor_int8", "sfu", … (the largest term)
  std::map<std::string, double> hbm_bytes;      // the schedule's transfers per tensor (notes §2.2's count)
  double dram_bytes = 0;                        // after L2 reuse: what the time uses
  std::map<std::string, double> ops;            // unit → operations over the grid
  std::map<std::string, double> unit_ms;        // unit → its time alone (t_u, t_mem as "hbm")
  double smem_bytes = 0;
  int ctas_per_sm = 0;
  double ctas = 0, waves = 0, tail_factor = 1, occupancy = 0;  // occupancy: resident warps / max warps
  double warps_per_scheduler = 0, issue_rate = 1;  // the latency term (step 2; 1 where it does not apply)
  std::vector<TimeTerm> terms;                     // time_ms term by term (Timing::terms)
  std::vector<std::string> explain;
};

inline constexpr double kLaunchUs = 4.0;
// The K/V tiles between the first and the last row block of one head in flight (step 5's L2 reuse): an estimate — a
// wave's CTAs start within a few µs of each other and a tile takes about a µs, so they run within tens of tiles.
inline constexpr double kReaderSpreadTiles = 32;

// Step 1's CTAs per SM (explained into `explain` when given). Throws InputError when the schedule's CTA does
// not fit the GPU (shared memory per CTA).
int ctas_per_sm(const Schedule& s, const GpuSpec& gpu, std::vector<std::string>* explain = nullptr);

// Throws InputError when the schedule's CTA does not fit the GPU (shared memory per CTA).
Prediction predict(const Schedule& s, const GpuSpec& gpu, const ModelOptions& o = {});

// predict() in two halves, for calibration's many evaluations: the part that does not depend on the
// efficiency factors (steps 1 and 4, the DRAM bytes) and the part that does (steps 2, 3 and 5).
struct Layout {
  std::string variant;
  Work work;
  int ctas_per_sm = 1, stages = 2, launches = 1;
  bool warpgroup_mma = false;  // wgmma kernel: mma_sync_fraction does not apply
  bool producer_loads = false; // a producer warpgroup copies K/V: MMAs and softmax overlap completely (step 3)
  int interleave = 1;          // MMA/softmax streams that overlap per SM: CTAs, × warpgroups per CTA for wgmma
  double slots = 1, dram_bytes = 0, tail_factor = 1, waves = 0;
  double serial_bytes = 0;  // of dram_bytes: Q in, O out, partials — not overlapped with the loop
  double warps_per_scheduler = 1;
  bool latency_term = true;  // false for wgmma kernels (step 2)
  StallParts stall;          // a warp's measured stall per instruction, by cause (all 0: not measured; step 2)
  std::vector<Layout> then;  // the later launches' layouts (step 7)
};
Layout layout(const Schedule& s, const GpuSpec& gpu, const ModelOptions& o, std::vector<std::string>* explain);

struct Timing {
  double t_mem = 0, t_rows = 0, t_tensor = 0, t_simt = 0, t_body = 0, time_ms = 0;  // s, except time_ms
  double issue_rate = 1;  // step 2's factor on the first launch's issue rate (latency_issue_rate)
  std::string tensor_unit = "tensor", simt_unit = "fma_fp32", bound;
  std::map<std::string, double> unit_ms;
  std::vector<TimeTerm> terms;  // time_ms term by term (they add up to it), zero terms left out
};
// The first launch's terms; time_ms includes the later launches'.
Timing timing(const Layout& l, const GpuSpec& gpu);
// Step 3's compute time before the tail: the larger of the tensor and SIMT times, plus the smaller one's share
// that `interleave` streams leave exposed — none where a producer warpgroup copies the K/V tiles. timing() and
// FactorTiming both take it from here.
inline double overlapped_compute(double t_tensor, double t_simt, double interleave, bool producer_loads) {
  return std::max(t_tensor, t_simt) + (producer_loads ? 0.0 : std::min(t_tensor, t_simt) / interleave);
}
// The machine-repairman issue rate (step 2) of a scheduler with `warps` warps (between two integers:
// interpolated) that each stall `stall` > 0 cycles after every instruction.
double repairman_issue_rate(double warps, double stall);
// Step 2's factor on the issue rate: the repairman rate where the stall is measured (> 0), else min(1, W / L̄),
// or 1 where the term does not apply: timing() and FactorTiming both take it from here.
inline double latency_issue_rate(bool applies, double warps_per_scheduler, double issue_latency_cycles,
                                 double stall = 0) {
  if (applies && stall > 0) return repairman_issue_rate(warps_per_scheduler, stall);
  return applies ? std::min(1.0, warps_per_scheduler / issue_latency_cycles) : 1.0;
}

}  // namespace attnlab::sim
