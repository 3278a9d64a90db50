// attnlab views: speed over the FP16 baseline as bars, measured beside predicted (speedup_views.h).
#include "app/views/speedup_views.h"

#include "core/config.h"
#include "core/registry.h"
#include "core/storage.h"

#include <fmt/format.h>

#include <optional>

namespace attnlab::views {

namespace {

// Whether variant i of the run's config computes and stores in FP16 throughout: the baseline a speedup is
// measured against.
bool fp16_throughout(const Experiment& e, size_t i) {
  const VariantSpec* spec = find_variant(e.variants[i].id);
  if (!spec || !spec->storage) return false;
  const Storage st = spec->storage(e.problem, e.variants[i].params);
  for (const NumberFormat f : {st.q, st.k, st.v, st.p, st.o})
    if (f != kFp16) return false;
  for (const HeadClass& c : st.cache.classes)
    if (c.k.codes != kFp16 || c.v.codes != kFp16 || !c.k.scales.empty() || !c.v.scales.empty()) return false;
  return !st.kv_in && !st.cache.residual;
}

std::optional<double> time_of(const VariantResult& v, bool kernel) {
  if (kernel && v.kernel && v.kernel->median_ms > 0) return v.kernel->median_ms;
  if (!kernel && v.model && v.model->time_ms > 0) return v.model->time_ms;
  return std::nullopt;
}

// Why the kernel backend did not run, from the run's environment ("" when it ran or was not asked).
std::string kernel_absence(const Results& r) {
  for (const SkippedBackend& s : r.environment.skipped)
    if (s.backend == "kernel" && s.variant.empty()) return s.reason;
  return "";
}

}  // namespace

std::vector<View> speedup_views(const Results& r) {
  Experiment e;
  try {
    e = parse_experiment(r.config);
  } catch (const std::exception&) {
    return {};  // a results file whose config this build does not read: no baseline to name
  }
  const VariantResult* base = nullptr;
  for (size_t i = 0; i < r.variants.size() && i < e.variants.size(); ++i)
    if (fp16_throughout(e, i)) {
      base = &r.variants[i];
      break;
    }
  if (!base) return {};
  BarChart c;
  c.y = {fmt::format("speedup over {}", base->label), "×"};
  c.x_label = "variant · backend";
  c.stacks = {"speedup"};
  c.mark_meaning = "measured on the GPU (kernel backend); unmarked: the cost model's prediction";
  bool measured = false;
  for (const VariantResult& v : r.variants) {
    if (&v == base) continue;
    for (const bool kernel : {true, false}) {
      const std::optional<double> t = time_of(v, kernel), t0 = time_of(*base, kernel);
      if (!t || !t0) continue;
      c.bars.push_back({fmt::format("{} · {}", v.label, kernel ? "measured" : "model"), {*t0 / *t}, kernel});
      measured = measured || kernel;
    }
  }
  if (c.bars.empty()) return {};
  std::string note = fmt::format(
      "Attention time of {} over each variant's, per backend: above 1 is faster than the FP16 baseline "
      "(TurboAttention Fig. 6 plots the same ratio on an A100).",
      base->label);
  if (!measured) {
    const std::string why = kernel_absence(r);
    note += why.empty() ? " The kernels did not run: these bars are the cost model's prediction only."
                        : fmt::format(" The kernels did not run ({}): these bars are the cost model's prediction only.", why);
  }
  return {{"speedup", "HBM traffic", fmt::format("Speed over the FP16 baseline ({}), measured and predicted", base->label), note, c}};
}

}  // namespace attnlab::views
