// attnlab sim: calibration — fit the cost model's per-unit efficiency factors to measured kernel times.
//
// The model (cost_model.h) divides each unit's work by peak × efficiency. Calibration fits one factor per
// execution unit (hbm, mma_fp16, mma_int8, exp_sfu, …: a handful of interpretable numbers, never a
// curve per kernel) by minimizing Σᵢ (ln t_model,i − ln t_measured,i)² — relative errors, so short and
// long kernels weigh the same — plus 10⁻⁵·Σ ln² factor, a weak pull towards the datasheet that picks,
// among units that could equally explain a time, the one needing the smaller correction. Coordinate descent on ln(factor) ∈ [ln 0.02, ln 1.5] with a golden-section
// line search per unit; a unit whose factor moves no prediction (never on a critical path in these
// measurements) stays at 1 and is reported as not identifiable. Leave-one-out: each measurement is
// predicted by factors fitted without it, so a model that only fits by memorizing shows it.
//
// Measurements file (what `attnlab bench --out` writes), schema "attnlab.measurements/1":
//   {"schema": "attnlab.measurements/1", "gpu": "h100-sxm5",
//    "measurements": [{"variant": "flash2", "params": {…}, "problem": {…config problem…},
//                      "median_ms": 0.41, "p10_ms": …, "p90_ms": …}, …]}
#pragma once

#include "core/config.h"
#include "core/results.h"
#include "sim/cost_model.h"
#include "sim/gpu_spec.h"

#include <map>
#include <string>
#include <vector>

namespace attnlab::sim {

struct Measurement {
  std::string label;  // "flash2 N=4096 d=128 causal" for tables
  Problem problem;
  VariantRequest variant;
  double median_ms = 0;
};

// The measurements file `attnlab bench --out` writes: every kernel timing in `runs`, with the spec id of the
// GPU that ran them (sim/gpu_spec.h spec_id_for_device; "" when unknown).
nlohmann::json measurements_json(const std::vector<Results>& runs);

// Reads a measurements file; errors name the file, the entry and the field (unknown variant, bad shape).
std::vector<Measurement> load_measurements(const std::string& path, std::string* gpu = nullptr);

struct CalibrationRow {
  std::string label;
  double measured_ms = 0, before_ms = 0, after_ms = 0, loo_ms = 0;  // loo: fitted without this row
};

struct Calibration {
  std::map<std::string, double> efficiency;  // fitted units only
  std::vector<std::string> not_identifiable;
  std::vector<CalibrationRow> rows;
  double median_error_before = 0, median_error_after = 0, median_error_loo = 0;  // |t/t_meas − 1|
};

// Fits the factors of `gpu` (its current efficiency is ignored: the fit starts from 1).
Calibration calibrate(const GpuSpec& gpu, const std::vector<Measurement>& m, const ModelOptions& o = {});

// The spec file's text with `measured` replaced by the calibration (written by `attnlab calibrate`).
// `source` names the measurements file, recorded beside the factors.
std::string spec_with_calibration(const std::string& spec_path, const Calibration& c, size_t measurements,
                                  const std::string& source);

}  // namespace attnlab::sim
