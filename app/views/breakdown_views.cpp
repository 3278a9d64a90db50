// attnlab views: the cost model's time per unit beside the measured time (breakdown_views.h).
#include "app/views/breakdown_views.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace attnlab::views {

namespace {

constexpr double kNone = std::numeric_limits<double>::quiet_NaN();

// The units in the order the bars stand (the model's names, sim/gpu_spec.cpp), and how the note speaks of each.
struct UnitName {
  const char* unit;
  const char* words;
};
constexpr UnitName kUnits[] = {
    {"hbm", "HBM bandwidth"},          {"mma_fp16", "FP16 tensor cores"}, {"mma_fp8", "FP8 tensor cores"},
    {"mma_int8", "INT8 tensor cores"}, {"fma_fp32", "the FP32 pipe"},     {"exp_sfu", "the SFU's exponentials"},
    {"int32", "the integer pipe"},     {"cvt", "the conversion pipe"},    {"issue", "instruction issue"},
};
constexpr const char* kTotal = "model total";
constexpr const char* kMeasured = "measured (kernel)";

const char* words_of(const std::string& unit) {
  for (const auto& u : kUnits)
    if (unit == u.unit) return u.words;
  return nullptr;
}

// One variant's sentence: what binds, and the latency term behind an issue bound.
std::string sentence(const VariantResult& v) {
  const ModelResult& m = *v.model;
  const char* w = words_of(m.bound);
  std::string s = fmt::format("{}: {:.3g} ms predicted, bound by {}", v.label, m.time_ms,
                              m.bound == "latency" ? "instruction issue, slowed by latency"
                              : w != nullptr       ? w
                                                   : m.bound.c_str());
  const auto rate = m.details.find("issue_rate"), warps = m.details.find("warps_per_scheduler");
  if (rate != m.details.end() && warps != m.details.end() && rate->is_number() && warps->is_number() &&
      rate->get<double>() < 1)
    s += fmt::format(" ({:.2g} warps per scheduler issue {:.0f}% of the peak rate)", warps->get<double>(),
                     100 * rate->get<double>());
  if (v.kernel) s += fmt::format("; measured {:.3g} ms", v.kernel->median_ms);
  return s + ".";
}

}  // namespace

std::vector<View> breakdown_views(const Results& r) {
  std::vector<const VariantResult*> shown;
  for (const auto& v : r.variants)
    if (v.model && v.model->details.contains("unit_ms") && v.model->details["unit_ms"].is_object()) shown.push_back(&v);
  if (shown.empty()) return {};

  BarChart c;
  c.y = {"time", "ms"};
  c.x_label = "variant";
  c.grouped = true;
  for (const auto& u : kUnits)
    if (std::any_of(shown.begin(), shown.end(), [&](const VariantResult* v) { return v->model->details["unit_ms"].contains(u.unit); }))
      c.stacks.push_back(u.unit);
  c.stacks.push_back(kTotal);
  const bool measured = std::any_of(shown.begin(), shown.end(), [](const VariantResult* v) { return bool(v->kernel); });
  if (measured) c.stacks.push_back(kMeasured);

  std::vector<std::string> sentences;
  for (const VariantResult* v : shown) {
    const nlohmann::json& units = v->model->details["unit_ms"];
    Bar b{v->label, {}, false};
    for (const auto& stack : c.stacks) {
      if (stack == kTotal) b.segments.push_back(v->model->time_ms);
      else if (stack == kMeasured) b.segments.push_back(v->kernel ? v->kernel->median_ms : kNone);
      else b.segments.push_back(units.contains(stack) ? units[stack].get<double>() : kNone);
    }
    c.bars.push_back(std::move(b));
    sentences.push_back(sentence(*v));
  }
  const std::string gpu = shown.front()->model->gpu;
  std::string note = fmt::format(
      "Each unit's time alone as the cost model counts it for the {} — the work the kernel gives that unit over its "
      "rate; instruction issue at the rate its warps per scheduler allow — then the model's total (the binding "
      "unit, the others overlapped, plus the waves' fixed costs){}. {}",
      gpu, measured ? " and the kernel's measured time" : "", fmt::join(sentences, " "));
  return {{"model_breakdown", "HBM traffic", "Where the model's time goes: each unit alone, the total, the measurement",
           note, c}};
}

}  // namespace attnlab::views
