// attnlab views: the speedup over the config's baseline variant, predicted beside measured (speedup_views.h).
#include "app/views/speedup_views.h"

#include "core/gpu_names.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace attnlab::views {

namespace {

// One kind of bar: a backend's time per variant, and how the note speaks of it. The bars of each kind
// stand side by side within a variant's slot, in this order.
struct Timing {
  const char* stack;    // the legend's name for these bars
  const char* backend;  // the backend that records the time (as Results' skipped entries name it)
  const char* who;      // the subject of "… did not run"
  const char* alone;    // what the bars show when they are the only ones
  double (*time_ms)(const VariantResult&);                         // NaN where the backend left no time
  std::string (*source)(const Results&, const VariantResult&);     // where the times come from (the baseline's)
  // A baseline measured elsewhere on the GPU of spec `gpu` stands for these bars' base only on their own GPU: the
  // kernels' device, the GPU the model predicts for. `machine` names theirs when it is another.
  bool (*on_gpu)(const Results&, const std::string& gpu);
  std::string (*machine)(const Results&);
};

// The GPU the model predicted for: the run's resolved spec, or (files from before it was recorded) the variants'.
std::string model_gpu(const Results& r) {
  if (!r.environment.model_gpu.empty()) return r.environment.model_gpu;
  for (const auto& v : r.variants)
    if (v.model) return v.model->gpu;
  return "";
}

const Timing kTimings[] = {
    {"predicted (model)", "model", "The cost model", "the cost model's prediction",
     [](const VariantResult& v) { return v.model ? v.model->time_ms : kNone; },
     [](const Results&, const VariantResult& base) { return fmt::format("predicted: the cost model for the {}", base.model->gpu); },
     [](const Results& r, const std::string& gpu) { return !gpu.empty() && gpu == model_gpu(r); },
     [](const Results& r) { return "the model predicts for the " + model_gpu(r); }},
    {"measured (kernel)", "kernel", "The kernels", "the kernels' measurement",
     [](const VariantResult& v) { return v.kernel ? v.kernel->median_ms : kNone; },
     [](const Results& r, const VariantResult&) {
       return fmt::format("measured: the kernels' median time on the {}", r.environment.gpu.value_or("GPU"));
     },
     [](const Results& r, const std::string& gpu) { return same_gpu(gpu, r.environment.gpu); },
     [](const Results& r) { return "the kernels ran on " + r.environment.gpu.value_or("no GPU"); }},
};

// Why `backend` left no time for the variant `id`: the run's entry for the whole backend, else the variant's.
std::string why_not(const Environment& env, const std::string& backend, const std::string& id, bool* whole) {
  for (const auto& s : env.skipped)
    if (s.backend == backend && s.variant.empty()) return *whole = true, s.reason;
  for (const auto& s : env.skipped)
    if (s.backend == backend && s.variant == id) return s.reason;
  return "no time recorded";
}

std::string baseline_name(const Results& r) {
  const auto it = r.config.find("report");
  if (it == r.config.end() || !it->is_object()) return "";
  const auto name = it->find("speedup_over");
  return name != it->end() && name->is_string() ? name->get<std::string>() : "";
}

// A baseline measured elsewhere (report.baselines): its time stands for the base of a kind of bar only on the GPU
// those bars are of — the kernels' device for measured bars, the model's spec for predicted ones — else no bars of
// that kind, and why.
double external_base_ms(const Timing& t, const ExternalTiming& x, const Results& r, std::string* why) {
  if (t.on_gpu(r, x.gpu)) return x.median_ms;
  *why = fmt::format("{} was measured on {}, {}", x.implementation, x.gpu.empty() ? "an unnamed GPU" : "the " + x.gpu,
                     t.machine(r));
  return kNone;
}

}  // namespace

std::vector<View> speedup_views(const Results& r) {
  const std::string name = baseline_name(r);
  const auto base = std::find_if(r.variants.begin(), r.variants.end(), [&](const VariantResult& v) { return v.label == name; });
  // Or an implementation measured elsewhere on this problem (Results::external).
  const auto ext = std::find_if(r.external.begin(), r.external.end(),
                                [&](const ExternalTiming& x) { return x.implementation == name; });
  if (name.empty() || (base == r.variants.end() && ext == r.external.end())) return {};
  const bool external = base == r.variants.end();

  BarChart c;
  c.y = {fmt::format("speedup over {}", name), "×"};
  c.x_label = "variant";
  c.grouped = true;
  for (const auto& v : r.variants) c.bars.push_back({v.label, {}, false});
  std::vector<std::string> sources, missing;
  bool some_absent = false;  // a kind of bar with no value at all
  for (const Timing& t : kTimings) {
    std::string external_why;
    const double base_ms = external ? external_base_ms(t, *ext, r, &external_why) : t.time_ms(*base);
    std::vector<double> ratios;
    for (const auto& v : r.variants) {
      const double ms = t.time_ms(v);
      ratios.push_back(base_ms > 0 && ms > 0 ? base_ms / ms : kNone);
    }
    if (external && !external_why.empty()) {
      missing.push_back(fmt::format("No {} bars: {}.", t.stack, external_why));
      some_absent = true;
      continue;
    }
    if (std::none_of(ratios.begin(), ratios.end(), [](double x) { return std::isfinite(x); })) {
      bool whole = false;
      const std::string why = why_not(r.environment, t.backend, external ? ext->implementation : base->id, &whole);
      missing.push_back(whole ? fmt::format("{} did not run: {}.", t.who, why)
                              : fmt::format("No {} bars: {} has no time ({}).", t.stack, name, why));
      some_absent = true;
      continue;
    }
    c.stacks.push_back(t.stack);
    sources.push_back(external ? fmt::format("{} over {} measured on the {} ({})", t.stack, ext->implementation,
                                             ext->gpu, ext->file)
                               : t.source(r, *base));
    for (size_t i = 0; i < ratios.size(); ++i) {
      c.bars[i].segments.push_back(ratios[i]);
      bool whole = false;
      if (!std::isfinite(ratios[i]))
        missing.push_back(fmt::format("No {} bar for {}: {}.", t.stack, r.variants[i].label,
                                      why_not(r.environment, t.backend, r.variants[i].id, &whole)));
    }
  }
  if (c.stacks.empty()) return {};

  std::string note = fmt::format("The time of {} divided by each variant's: above 1 is faster than {} ({}).", name,
                                 name, fmt::join(sources, "; "));
  for (const auto& m : missing) note += " " + m;
  if (c.stacks.size() == 1 && some_absent)
    note += fmt::format(" The bars show {} alone.",
                        std::find_if(std::begin(kTimings), std::end(kTimings), [&](const Timing& t) {
                          return c.stacks.front() == t.stack;
                        })->alone);
  return {{"speedup", "HBM traffic", fmt::format("Speedup over {}: {}", name, fmt::join(c.stacks, " beside ")), note, c}};
}

}  // namespace attnlab::views
