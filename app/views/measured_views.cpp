// attnlab views: predicted against measured time, per kernel (measured_views.h).
#include "app/views/measured_views.h"

#include "core/gpu_names.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

namespace attnlab::views {

std::string shape_label(const nlohmann::json& p) {
  return fmt::format("B{} H{}/{} N{}/{} d{}{}", p.value("batch", 0), p.value("q_heads", 0), p.value("kv_heads", 0),
                     p.value("q_len", 0), p.value("kv_len", 0), p.value("head_dim", 0),
                     p.value("causal", false) ? " causal" : "");
}

double model_error_percent(double predicted_ms, double measured_ms) { return (predicted_ms / measured_ms - 1) * 100; }

std::vector<View> model_vs_measured_views(const std::vector<Results>& runs) {
  struct Pair {
    std::string variant, shape;
    double predicted_ms, measured_ms, error;
  };
  std::vector<Pair> pairs;
  std::set<std::string> shapes;
  std::string gpu;
  for (const Results& r : runs)
    for (const VariantResult& v : r.variants) {
      if (!v.model || !v.kernel || !(v.model->time_ms > 0) || !(v.kernel->median_ms > 0)) continue;
      // A prediction for one GPU against a measurement on another is no model error (core/gpu_names.h).
      if (!same_gpu(v.model->gpu, r.environment.gpu)) continue;
      pairs.push_back({v.label, shape_label(r.problem), v.model->time_ms, v.kernel->median_ms,
                       model_error_percent(v.model->time_ms, v.kernel->median_ms)});
      shapes.insert(pairs.back().shape);
      if (r.environment.gpu) gpu = *r.environment.gpu;
    }
  if (pairs.empty()) return {};
  std::stable_sort(pairs.begin(), pairs.end(),
                   [](const Pair& a, const Pair& b) { return std::abs(a.error) > std::abs(b.error); });
  BarChart c;
  c.y = {"time", "ms"};
  c.grouped = true;
  c.stacks = {"predicted (model)", "measured (kernel)"};
  // One shape: it is the title's; several: each bar names its own.
  const bool one_shape = shapes.size() == 1;
  c.x_label = one_shape ? "variant: model error" : "variant · shape: model error";
  for (const Pair& p : pairs)
    c.bars.push_back({fmt::format("{}{}: {:+.1f}%", p.variant, one_shape ? "" : " · " + p.shape, p.error),
                      {p.predicted_ms, p.measured_ms}, false});
  return {{"model_vs_measured", "HBM traffic",
           one_shape ? fmt::format("Predicted against measured time, {}", *shapes.begin())
                     : "Predicted against measured time, every shape",
           fmt::format("Each kernel's median time{} beside the cost model's prediction; the label gives the "
                       "model's error (predicted / measured − 1: + predicts slower), the largest error first.",
                       gpu.empty() ? "" : " on the " + gpu),
           c}};
}

}  // namespace attnlab::views
