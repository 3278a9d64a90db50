// attnlab sim: the cost model's time (cost_model.h timing()) of a fixed set of layouts as a function of the
// calibrated parameters alone — what calibration evaluates millions of times.
//
// timing() rebuilds a map of unit times keyed by name and looks every factor up by name: ~0.4 µs per
// prediction, 84% of a calibration's instructions (callgrind: a quarter in GpuSpec::efficiency_of's string
// keys, a quarter in map nodes' malloc/free), which made calibrating 29 measurements cost 4.7 s of CPU and
// 36 cost 10 s (now 0.2 s and 0.4 s, the same output to the last digit). Here each layout's constants (its
// operations per unit, DRAM and serial bytes, interleave, tail, waves, launches) are laid out once, and the
// rates (peak × factor, × mma_sync_fraction for mma.sync) once per parameter set, so one time is a few
// divisions and maxima. The arithmetic is timing()'s, step for step and in the same order (the build
// does not contract to FMA: -ffp-contract=off), so the doubles are the same; a test holds it to timing().
#pragma once

#include "sim/cost_model.h"
#include "sim/gpu_spec.h"

#include <array>
#include <cstddef>
#include <vector>

namespace attnlab::sim {

inline constexpr std::size_t kUnitCount = sizeof(kUnits) / sizeof(kUnits[0]);
inline constexpr std::size_t unit_index(Unit u) { return static_cast<std::size_t>(u); }

// What calibration fits: one efficiency factor per unit (1 = the datasheet), the per-wave CTA overhead and
// the latency term's cycles between a warp's instructions (cost_model.h, step 2).
struct FactorParams {
  std::array<double, kUnitCount> efficiency;
  double cta_overhead_us = 1.0;
  double issue_latency_cycles = 5.5;
  FactorParams() { efficiency.fill(1.0); }
};

class FactorTiming {
 public:
  // Throws InputError (as timing() does) when a layout needs a unit the GPU does not have.
  FactorTiming(const GpuSpec& gpu, const std::vector<Layout>& layouts);

  // The rates of one parameter set, shared by every layout's time.
  struct Rates {
    std::array<double, kUnitCount> plain{}, mma_sync{};  // peak × factor; tensor units × mma_sync_fraction too
    double bandwidth = 0, cta_overhead_us = 0, issue_latency_cycles = 1;
  };
  Rates rates(const FactorParams& p) const;

  // timing(layouts[i], gpu with p's factors).time_ms.
  double time_ms(std::size_t i, const Rates& r) const;
  std::size_t size() const { return rows_.size(); }

 private:
  struct Op {
    std::size_t unit;
    double ops;
    bool tensor;
  };
  struct Row {
    std::vector<Op> ops;  // the units with work, in Unit order (timing()'s map order)
    bool mma_sync = true;
    double dram_bytes = 0, serial_bytes = 0, interleave = 1, tail_factor = 1, waves = 0;
    double warps_per_scheduler = 1, issue_stall = 0;
    bool latency_term = true, producer_loads = false;
    int stages = 2, launches = 1;
    std::vector<Row> then;  // the later launches
  };
  static Row row_of(const Layout& l);
  double time_ms(const Row& l, const Rates& r) const;
  std::array<double, kUnitCount> peak_{};
  double mma_sync_fraction_ = 1;
  std::vector<Row> rows_;
};

}  // namespace attnlab::sim
