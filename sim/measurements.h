// attnlab sim: measurement files — the kernel timings `attnlab bench --out` (and
// kernels/bench/sdpa_bench.py) write and `attnlab calibrate` fits the cost model to.
//
// Schema "attnlab.measurements/1" (every field declared in measurement_file_fields()):
//   {"schema": "attnlab.measurements/1", "gpu": "h100-sxm5", "device": "NVIDIA H100 80GB HBM3",
//    "measurements": [{"variant": "flash2", "params": {…}, "problem": {…config problem…},
//                      "median_ms": 0.41, "p10_ms": …, "p90_ms": …}, …]}
// A run across GPUs adds "context_parallel": {"gpus", "wire_bytes", "merge_ms", "timeline": the traced run's slots
// [{"step", "gpu", "compute_ms", "idle_ms", "exchange_ms"}, …], "model": {"time_ms", "one_gpu_ms",
// "scaling_efficiency", "timeline"}}: the measured ring step by step beside the cost model's.
// Where the SM clock was read (kernels/common/sm_clock.h): "sm_clock_mhz" (median), "sm_clock_min_mhz",
// "sm_clock_max_mhz" and "timed_runs".
#pragma once

#include "core/config.h"
#include "core/results.h"
#include "sim/data_fields.h"

#include <string>
#include <vector>

namespace attnlab::sim {

struct Measurement {
  std::string label;  // "flash2 N=4096 d=128 causal" for tables
  Problem problem;
  VariantRequest variant;
  double median_ms = 0;
  std::string implementation;  // what ran it when not attnlab's kernel ("" = ours): the model then predicts the
                               // variant's design, not our kernel's measured work (schedule.h Kernels)
};

// The measurements file `attnlab bench --out` writes: every kernel timing in `runs`, with the spec id of the
// GPU that ran them (core/gpu_names.h spec_id_for_device; "" when unknown).
nlohmann::json measurements_json(const std::vector<Results>& runs);

// Every field of a measurements file and of one measurement (data_fields.h); unknown fields are refused.
const FieldTable& measurement_file_fields();
const FieldTable& measurement_fields();

// Reads a measurements file; errors name the file, the entry and the field (unknown variant, bad shape).
// `gpu` receives the file's GPU id ("" when it names none).
std::vector<Measurement> load_measurements(const std::string& path, std::string* gpu = nullptr);

}  // namespace attnlab::sim
