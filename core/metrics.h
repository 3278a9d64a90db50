// attnlab core: error metrics of an output against the FP64 ground truth (DESIGN.md, "variants").
#pragma once

#include "core/tensor.h"

#include <nlohmann/json_fwd.hpp>

namespace attnlab {

struct Metrics {
  double rel_l2 = 0.0;   // ‖o − ref‖₂ / ‖ref‖₂
  double mre = 0.0;      // mean over elements of |o − ref| / (|ref| + 1e-5)
  double cosine = 0.0;   // ⟨o, ref⟩ / (‖o‖ ‖ref‖); 1 when both are zero
  double max_abs = 0.0;  // max |o − ref|
};

inline constexpr double kMreFloor = 1e-5;  // DESIGN.md's definition of mre

// Accumulates in double. Throws std::invalid_argument if the shapes differ. An output or truth holding
// NaN or Inf has no meaningful error: every metric is then NaN (never a finite number such as a max abs
// of 0 or a cosine of 0 that a NaN comparison would otherwise leave behind); the runner refuses such
// outputs first, naming the variant (core/runner.cpp).
Metrics compare_to_truth(const Tensor& out, const TensorF64& truth);
// The flat index of the first NaN or Inf in `t`, or −1.
int64_t first_nonfinite(const Tensor& t);
// Every metric NaN: a run that computed no ground truth (timing only).
Metrics no_metrics();

nlohmann::json to_json(const Metrics& m);
Metrics metrics_from_json(const nlohmann::json& j);

}  // namespace attnlab
