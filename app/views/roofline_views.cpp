// attnlab views: the roofline (roofline_views.h).
#include "app/views/roofline_views.h"

#include "core/error.h"
#include "sim/gpu_spec.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace attnlab::views {

namespace {

// The tensor-core roofs a variant can run under, in the order the legend lists them.
struct Roof {
  sim::Unit unit;
  const char* name;
};
constexpr Roof kRoofs[] = {{sim::Unit::tensor_fp16, "FP16"}, {sim::Unit::tensor_fp8, "FP8"}, {sim::Unit::tensor_int8, "INT8"}};

// Two roofs are one line when they have the same vertices: equal peaks, or both still on the shared HBM
// slope across the whole drawn range.
bool same_line(const Series& a, const Series& b) {
  if (a.x != b.x) return false;
  for (size_t i = 0; i < a.y.size(); ++i)
    if (std::abs(a.y[i] - b.y[i]) > 1e-9 * std::max(a.y[i], b.y[i])) return false;
  return true;
}

// "FP8", "FP8 and INT8", "FP16, FP8 and INT8".
std::string names_of(const std::vector<std::string>& names) {
  if (names.size() == 1) return names[0];
  std::vector<std::string> head(names.begin(), names.end() - 1);
  return fmt::format("{} and {}", fmt::join(head, ", "), names.back());
}

}  // namespace

std::vector<View> roofline_views(const Results& r) {
  // Arithmetic intensity = useful FLOPs / the model's DRAM bytes; achieved rate = FLOPs / time.
  const double flops = problem_flops(r.problem);
  std::string gpu_id;
  for (const auto& v : r.variants)
    if (v.model) gpu_id = v.model->gpu;
  if (gpu_id.empty() || !(flops > 0)) return {};
  sim::GpuSpec gpu;
  try {
    gpu = sim::load_gpu_spec(gpu_id);
  } catch (const InputError&) {
    return {};  // a results file from a build with other specs: no roof to draw
  }
  LineChart c;
  c.x = {"arithmetic intensity", "FLOP/byte", true};
  c.y = {"rate", "TFLOP/s", true};
  c.link_meaning = "predicted → measured";
  Series model{"predicted (model)", {}, {}, true}, kernel{"measured (kernel)", {}, {}, true};
  auto add = [](Series& s, double x, double y, const std::string& label) {
    s.x.push_back(x), s.y.push_back(y), s.labels.push_back(label);
  };
  for (const auto& v : r.variants) {
    if (!v.model || !v.model->hbm_bytes.count("total") || !(v.model->hbm_bytes.at("total") > 0)) continue;
    const double x = flops / v.model->hbm_bytes.at("total");
    const double predicted = v.model->time_ms > 0 ? flops / (v.model->time_ms * 1e-3) / 1e12 : NAN;
    const double measured = v.kernel && v.kernel->median_ms > 0 ? flops / (v.kernel->median_ms * 1e-3) / 1e12 : NAN;
    if (std::isfinite(predicted)) add(model, x, predicted, v.label);
    if (std::isfinite(measured)) add(kernel, x, measured, v.label);
    if (std::isfinite(predicted) && std::isfinite(measured)) c.links.push_back({x, predicted, x, measured});
  }
  if (model.x.empty() && kernel.x.empty()) return {};
  if (c.links.empty()) c.link_meaning.clear();

  // The axes fit the points (roofline_views.h: kRooflineMargin), not the roofs: the roofs are drawn across
  // that range only.
  double x_lo = INFINITY, x_hi = 0, y_lo = INFINITY, y_hi = 0;
  for (const Series* s : {&model, &kernel})
    for (size_t i = 0; i < s->x.size(); ++i)
      x_lo = std::min(x_lo, s->x[i]), x_hi = std::max(x_hi, s->x[i]), y_lo = std::min(y_lo, s->y[i]),
      y_hi = std::max(y_hi, s->y[i]);
  c.x.lo = x_lo / kRooflineMargin, c.x.hi = x_hi * kRooflineMargin;
  const double bw = gpu.peak(sim::Unit::hbm);
  std::vector<Series> roofs;
  std::vector<std::vector<std::string>> roof_names;
  for (const Roof& roof : kRoofs) {
    const double peak = gpu.peak(roof.unit);
    if (!(peak > 0)) continue;
    Series line{"", {}, {}};
    const double knee = peak / bw;
    for (double x : {c.x.lo, knee, c.x.hi})
      if (x >= c.x.lo && x <= c.x.hi && (line.x.empty() || x > line.x.back()))
        line.x.push_back(x), line.y.push_back(std::min(peak, bw * x) / 1e12);
    const auto same = std::find_if(roofs.begin(), roofs.end(), [&](const Series& s) { return same_line(s, line); });
    if (same != roofs.end()) {
      roof_names[size_t(same - roofs.begin())].push_back(roof.name);
      continue;
    }
    roofs.push_back(line), roof_names.push_back({roof.name});
    for (double y : line.y) y_lo = std::min(y_lo, y), y_hi = std::max(y_hi, y);
  }
  c.y.lo = y_lo / kRooflineMargin, c.y.hi = y_hi * kRooflineMargin;
  for (size_t i = 0; i < roofs.size(); ++i) {
    roofs[i].name = names_of(roof_names[i]) + " roof";
    c.series.push_back(roofs[i]);
  }
  if (!model.x.empty()) c.series.push_back(model);
  if (!kernel.x.empty()) c.series.push_back(kernel);
  return {{"roofline", "HBM traffic", fmt::format("Roofline on the {}", gpu.name),
           "Each variant at its arithmetic intensity (useful FLOPs over the model's DRAM bytes): the model's "
           "predicted rate, and the measured kernel's where one ran, joined by a line — its length is the "
           "model's error. Roofs that coincide over the drawn range are one line naming them all.",
           c}};
}

}  // namespace attnlab::views
