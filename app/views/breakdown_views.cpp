// attnlab views: the cost model's time per unit beside the measured time (breakdown_views.h).
#include "app/views/breakdown_views.h"

#include "sim/cost_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace attnlab::views {

namespace {

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

// The name a term of the model's total stands under: a unit's words for the binding unit's own time, the
// model's words for the other terms (sim/cost_model.h kTimeTerms).
std::string term_words(const std::string& term) {
  if (const char* w = words_of(term)) return std::string(w) + " at peak rate";
  for (const auto& t : sim::kTimeTerms)
    if (term == t.key) return t.words;
  return term;
}

// The stacks of the terms view, bottom first: the model's order, the binding units (in kUnits' order) where
// kTimeTerms leaves their place, between the K/V traffic and latency.
std::vector<std::string> term_order(const std::vector<const VariantResult*>& shown) {
  const auto present = [&](const std::string& term) {
    return std::any_of(shown.begin(), shown.end(), [&](const VariantResult* v) {
      for (const auto& t : v->model->details["time_terms_ms"])
        if (t.value("term", "") == term) return true;
      return false;
    });
  };
  std::vector<std::string> order;
  for (const auto& t : sim::kTimeTerms) {
    if (std::string(t.key) == "latency")
      for (const auto& u : kUnits)
        if (present(u.unit)) order.push_back(u.unit);
    if (present(t.key)) order.push_back(t.key);
  }
  return order;
}

// "Where the model's time goes": each variant's predicted time as the stack of the terms that make it — they add
// up to the total exactly — with the kernel's measured time as a bar beside it.
std::vector<View> total_terms_view(const Results& r) {
  std::vector<const VariantResult*> shown;
  for (const auto& v : r.variants)
    if (v.model && v.model->details.contains("time_terms_ms") && v.model->details["time_terms_ms"].is_array())
      shown.push_back(&v);
  if (shown.empty()) return {};
  BarChart c;
  c.y = {"time", "ms"};
  c.x_label = "variant";
  const std::vector<std::string> order = term_order(shown);
  for (const auto& term : order) c.stacks.push_back(term_words(term));
  const bool measured = std::any_of(shown.begin(), shown.end(), [](const VariantResult* v) { return bool(v->kernel); });
  if (measured) c.stacks.push_back(kMeasured);
  for (const VariantResult* v : shown) {
    Bar b{v->label + (measured ? " (model)" : ""), std::vector<double>(c.stacks.size(), kNone), false};
    for (const auto& t : v->model->details["time_terms_ms"]) {
      const auto at = std::find(order.begin(), order.end(), t.value("term", ""));
      if (at != order.end()) b.segments[size_t(at - order.begin())] = t.value("ms", kNone);
    }
    c.bars.push_back(std::move(b));
    if (v->kernel) {
      Bar m{v->label + " (measured)", std::vector<double>(c.stacks.size(), kNone), false};
      m.segments.back() = v->kernel->median_ms;
      c.bars.push_back(std::move(m));
    }
  }
  const std::string note = fmt::format(
      "The cost model's time for the {} as the sum it is: the traffic that is not overlapped, then the larger of the "
      "K/V traffic and the compute — the binding unit's work at its peak rate, what latency adds where too few warps "
      "issue, the other units' exposed share, the stretch of the last partial wave — then the fixed costs per wave "
      "and per launch and any later launch{}. The segments add up to the total.",
      shown.front()->model->gpu, measured ? "; beside it, the kernel's measured time" : "");
  return {{"model_total", "HBM traffic", "Where the model's time goes: every term of its total, beside the measurement",
           note, c}};
}

std::vector<View> unit_views(const Results& r) {
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
  return {{"model_breakdown", "HBM traffic", "Each unit alone as the model counts it, the total, the measurement", note, c}};
}

}  // namespace

std::vector<View> breakdown_views(const Results& r) {
  std::vector<View> out = total_terms_view(r);
  for (auto& v : unit_views(r)) out.push_back(std::move(v));
  return out;
}

}  // namespace attnlab::views
