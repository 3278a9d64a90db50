// attnlab views: the cost model against the kernels — predicted beside measured time for every (variant,
// shape) that has both, with the model's error in percent, the largest error first: where the model is
// wrong, and by how much. One of chart_views' parts (chart.h); `attnlab bench` runs feed it many shapes.
#pragma once

#include "app/views/chart.h"
#include "core/results.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace attnlab::views {

// "B4 H16/16 N4096/4096 d128 causal": a problem section in one line (batch, query/KV heads, query/KV
// length, head dim).
std::string shape_label(const nlohmann::json& problem);

// The model's error against the kernel, in percent of the measured time: + when the model predicts slower.
double model_error_percent(double predicted_ms, double measured_ms);

// The view "model_vs_measured" over every run's variants (one run: one shape), or nothing when no variant
// has both a predicted and a measured time.
std::vector<View> model_vs_measured_views(const std::vector<Results>& runs);

}  // namespace attnlab::views
