// attnlab views: HBM traffic per tensor (reference accounting and model) and the roofline.
#include "app/views/traffic_views.h"

#include "core/problem.h"
#include "core/error.h"
#include "sim/gpu_spec.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

namespace attnlab::views {

namespace {

// The problem's useful FLOPs (Problem::flops: 4·B·H·pairs·d) from the results' problem section.
double problem_flops(const Results& r) {
  Problem p;
  p.batch = r.problem.value("batch", p.batch), p.q_heads = r.problem.value("q_heads", p.q_heads);
  p.kv_heads = r.problem.value("kv_heads", p.kv_heads), p.q_len = r.problem.value("q_len", p.q_len);
  p.kv_len = r.problem.value("kv_len", p.kv_len), p.head_dim = r.problem.value("head_dim", p.head_dim);
  p.causal = r.problem.value("causal", p.causal);
  return p.flops();
}

// Stacked bars: one per variant, one segment per tensor (the union of the variants' labels).
BarChart bytes_chart(const std::vector<std::pair<std::string, std::map<std::string, double>>>& rows) {
  BarChart c;
  c.y = {"HBM traffic", "bytes"};
  c.x_label = "variant";
  std::set<std::string> names;
  for (const auto& [label, bytes] : rows)
    for (const auto& [name, b] : bytes)
      if (name != "total") names.insert(name);
  c.stacks.assign(names.begin(), names.end());
  for (const auto& [label, bytes] : rows) {
    Bar bar{label, {}, false};
    for (const auto& name : c.stacks) bar.segments.push_back(bytes.count(name) ? bytes.at(name) : 0.0);
    c.bars.push_back(bar);
  }
  return c;
}

}  // namespace

std::vector<View> traffic_views(const Results& r) {
  std::vector<View> out;
  std::vector<std::pair<std::string, std::map<std::string, double>>> reference, model;
  for (const auto& v : r.variants) {
    if (v.reference && v.reference->probes.count("hbm_bytes")) {
      const ProbeArray& a = v.reference->probes.at("hbm_bytes");
      std::map<std::string, double> bytes;
      for (size_t i = 0; i < a.values.size() && i < a.labels.size(); ++i) bytes[a.labels[i]] = a.values[i];
      reference.emplace_back(v.label, bytes);
    }
    if (v.model) model.emplace_back(v.label, v.model->hbm_bytes);
  }
  if (!reference.empty())
    out.push_back({"hbm.reference", "HBM traffic", "HBM bytes per tensor (the reference's accounting)",
                   "What each schedule moves between HBM and the chip: the unfused naive passes write and re-read "
                   "S and P; the tiled ones read Q once and K/V once per row block.",
                   bytes_chart(reference)});
  if (!model.empty())
    out.push_back({"hbm.model", "HBM traffic", "HBM bytes per tensor (cost model, after L2 reuse)",
                   "The cost model's DRAM bytes: K/V re-reads of one head that L2 serves are not counted.",
                   bytes_chart(model)});

  // Roofline: arithmetic intensity = useful FLOPs / the model's DRAM bytes; achieved rate = FLOPs / time.
  const double flops = problem_flops(r);
  std::string gpu_id;
  for (const auto& v : r.variants)
    if (v.model) gpu_id = v.model->gpu;
  if (gpu_id.empty() || !(flops > 0)) return out;
  sim::GpuSpec gpu;
  try {
    gpu = sim::load_gpu_spec(gpu_id);
  } catch (const InputError&) {
    return out;  // a results file from a build with other specs: no roof to draw
  }
  LineChart c;
  c.x = {"arithmetic intensity", "FLOP/byte", true};
  c.y = {"rate", "TFLOP/s", true};
  Series model_points{"model", {}, {}, true}, kernel_points{"kernel (measured)", {}, {}, true};
  double lo = INFINITY, hi = 0;
  for (const auto& v : r.variants) {
    if (!v.model || !v.model->hbm_bytes.count("total") || !(v.model->hbm_bytes.at("total") > 0)) continue;
    const double x = flops / v.model->hbm_bytes.at("total");
    lo = std::min(lo, x), hi = std::max(hi, x);
    if (v.model->time_ms > 0) model_points.x.push_back(x), model_points.y.push_back(flops / (v.model->time_ms * 1e-3) / 1e12);
    if (v.kernel && v.kernel->median_ms > 0)
      kernel_points.x.push_back(x), kernel_points.y.push_back(flops / (v.kernel->median_ms * 1e-3) / 1e12);
  }
  if (model_points.x.empty()) return out;
  const double bw = gpu.peak(sim::Unit::hbm);
  const double x0 = std::min(lo / 4, 1.0), x1 = std::max(hi * 4, 4 * gpu.peak(sim::Unit::tensor_int8) / bw);
  for (const auto& [unit, name] : {std::pair{sim::Unit::tensor_fp16, "FP16"}, std::pair{sim::Unit::tensor_fp8, "FP8"},
                                   std::pair{sim::Unit::tensor_int8, "INT8"}}) {
    const double peak = gpu.peak(unit);
    if (!(peak > 0)) continue;
    Series roof{fmt::format("{} roof", name), {}, {}};
    const double knee = peak / bw;
    for (double x : {x0, std::clamp(knee, x0, x1), x1}) roof.x.push_back(x), roof.y.push_back(std::min(peak, bw * x) / 1e12);
    c.series.push_back(roof);
  }
  c.series.push_back(model_points);
  if (!kernel_points.x.empty()) c.series.push_back(kernel_points);
  out.push_back({"roofline", "HBM traffic", fmt::format("Roofline on the {}", gpu.name),
                 "Each variant at its arithmetic intensity (useful FLOPs over the model's DRAM bytes): the "
                 "model's predicted rate, and the measured kernel's where one ran — measured against model.",
                 c});
  return out;
}

}  // namespace attnlab::views
