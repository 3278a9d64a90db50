// attnlab sim: calibration — fit the cost model's per-unit efficiency factors to measured kernel times.
//
// The model (cost_model.h) divides each unit's work by peak × efficiency. Calibration fits one factor per
// execution unit (hbm, mma_fp16, mma_int8, exp_sfu, …: a handful of interpretable numbers, never a
// curve per kernel), the per-wave CTA overhead and the latency term's cycles between a warp's instructions
// (cost_model.h, step 2; searched in [4, 30] cycles and pulled towards the spec's value) by minimizing Σᵢ (ln t_model,i − ln t_measured,i)² — relative errors, so short and
// long kernels weigh the same — plus 10⁻⁵·Σ ln² factor, a weak pull towards the datasheet that picks,
// among units that could equally explain a time, the one needing the smaller correction. Coordinate
// descent on ln(factor) ∈ [ln 0.02, ln 1.5]: 40 sweeps, each a golden-section line search per unit over
// its whole range; a unit whose factor moves no prediction (never on a critical path in these
// measurements) stays at 1 and is reported as not identifiable. Every prediction goes through
// FactorTiming (factor_timing.h): timing()'s arithmetic without its maps and strings.
//
// Leave-one-out: each measurement is predicted by factors fitted without it, so a model that only fits by
// memorizing shows it. Up to 100 measurements each of those N fits is the full procedure above (from 1,
// 40 sweeps): N² × ~20000 predictions at ~15 ns, 0.4 s of CPU at 36, ~3 s at 100. That grows with N²
// (1000 measurements: ~6 min; before FactorTiming, hours), so beyond 100 each fit starts from the full
// fit's factors instead and moves them by Levenberg–Marquardt (all factors at once, a few passes over the
// rows per step): 1000 measurements in about 3 s on 2 shared cores ([calibrate-bench]). It is an
// approximation of the refit: coordinate descent from 1 and Levenberg–Marquardt from the full fit stop at
// different kinks of the model's max() and min() terms. Measured gaps between the two: at most 6.1% of a
// prediction (one row: the latency term's kink, test_calibrate.cpp) and 0.6 points of the median error on
// the shipped files, 1.2% and 0.1 points on 200 synthetic measurements. The leave-one-out fits run on every
// worker thread (ATTNLAB_THREADS).
#pragma once

#include "sim/cost_model.h"
#include "sim/gpu_spec.h"
#include "sim/measurements.h"

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace attnlab::sim {

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

// The median of v (the mean of the middle two for an even count; 0 for none): the fit's and the tests' error summary.
double median(std::vector<double> v);

// Called with the fraction done and what is running (from worker threads, one call at a time).
using CalibrationProgress = std::function<void(double fraction, const std::string& stage)>;

// How the leave-one-out fits are made: automatic picks refit up to 100 measurements, else from_full_fit.
enum class LooMethod { automatic, refit, from_full_fit };

// Fits the factors of `gpu` (its current efficiency is ignored: the fit starts from 1). Rows measured across GPUs
// (problem.gpus > 1: attnlab's context-parallel ring) fit the link term instead, after the units are fitted on the
// rows of one GPU: the ring's blocks are predicted with those units, and the links' efficiency and latency per
// transfer ("link_efficiency", "link_latency_us", held to physical_range) are fitted through over_link
// (context_parallel_model.h), each ring row also predicted by a fit without it (with one ring row, by the fit); a
// parameter a 10% change of which moves no ring row's time by 0.5% is not identifiable (every transfer hidden under
// the attention; a decode's partials of a few KB tell the latency, not the rate) and stays at the links section's
// estimate. Rows come back in `m`'s order. Throws InputError (naming the row) for a
// ring measured by another implementation or on a spec without links, and for a file whose every row is a ring.
Calibration calibrate(const GpuSpec& gpu, const std::vector<Measurement>& m, const ModelOptions& o = {},
                      const CalibrationProgress& progress = {}, LooMethod loo = LooMethod::automatic);

// The physical range [lo, hi] a fitted factor is held to (a unit's efficiency, cta_overhead_us,
// issue_latency_cycles): calibrate.cpp's kPhysical, each with its reason. Every factor calibrate fits has one;
// any other name throws std::logic_error.
std::pair<double, double> physical_range(const std::string& factor);

// The spec file's text with `measured` replaced by the calibration (written by `attnlab calibrate`).
// `source` names the measurements file, recorded beside the factors.
std::string spec_with_calibration(const std::string& spec_path, const Calibration& c, size_t measurements,
                                  const std::string& source);

}  // namespace attnlab::sim
