#include "app/views/bench.h"

#include "app/views/measured_views.h"
#include "core/gpu_names.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <limits>

namespace attnlab::views {

namespace {

constexpr double kNoValue = std::numeric_limits<double>::quiet_NaN();

}  // namespace

Table bench_table(const std::vector<Results>& runs) {
  Table t;
  t.title = "GPU kernel timings (CUDA events, median of the timed runs) and the cost model's prediction";
  t.columns = {{"variant", "variant", ""},    {"shape", "shape", ""},         {"median_ms", "median", "ms"},
               {"p10_ms", "p10", "ms"},       {"p90_ms", "p90", "ms"},        {"tflops", "rate", "TFLOP/s"},
               {"hbm_gbps", "HBM", "GB/s"},   {"model_ms", "model", "ms"},    {"model_ratio", "model / measured", ""},
               {"step_ratio", "decode step / attend", ""}};
  // Times measured elsewhere on the same shapes (report.baselines): rows of their own after each shape's kernels, and
  // a column with the fastest of them on this GPU over each kernel's time — above 1, the kernel is faster.
  const bool external = std::any_of(runs.begin(), runs.end(), [](const Results& r) { return !r.external.empty(); });
  if (external) t.columns.push_back({"best_baseline_ratio", "best baseline / ours", ""});
  // The SM clock over the timed runs where it was read (kernels/common/sm_clock.h): rows timed at different clocks
  // differ by the clock as well as by the kernel.
  const auto clocked = [](const VariantResult& v) { return v.kernel && v.kernel->sm_clock; };
  const bool clocks = std::any_of(runs.begin(), runs.end(), [&](const Results& r) {
    return std::any_of(r.variants.begin(), r.variants.end(), clocked);
  });
  if (clocks) t.columns.push_back({"sm_clock_mhz", "SM clock, median (lowest–highest)", "MHz"});
  for (const Results& r : runs) {
    const ExternalTiming* best = nullptr;  // the fastest baseline measured on this run's GPU
    for (const auto& x : r.external)
      if (same_gpu(x.gpu, r.environment.gpu) && (!best || x.median_ms < best->median_ms)) best = &x;
    for (const VariantResult& v : r.variants) {
      if (!v.kernel) continue;
      const KernelResult& k = *v.kernel;
      const double model = v.model ? v.model->time_ms : kNoValue;
      // The ratio only where the model predicted for the GPU that ran (core/gpu_names.h): across two GPUs it is
      // no model error, and the cell says why.
      const bool same = v.model && same_gpu(v.model->gpu, r.environment.gpu);
      // The serving loop's time per token (append, flush, attend) over the attention alone, where it ran.
      const auto steps = k.probes.find("decode.steps");
      const double step_ratio = steps != k.probes.end() && steps->second.values.size() >= 4 ? steps->second.values[3] : kNoValue;
      t.rows.push_back({Cell{v.label, kNoValue}, Cell{shape_label(r.problem), kNoValue},
                        number_cell(k.median_ms, "{:.4f}"), number_cell(k.p10_ms, "{:.4f}"),
                        number_cell(k.p90_ms, "{:.4f}"), number_cell(k.tops, "{:.1f}"),
                        number_cell(k.hbm_gbps, "{:.0f}"), number_cell(model, "{:.4f}"),
                        !v.model || same ? number_cell(model / k.median_ms, "{:.2f}")
                                         : Cell{fmt::format("— (model for {})", v.model->gpu), kNoValue},
                        number_cell(step_ratio, "{:.3f}")});
      if (external)
        t.rows.back().push_back(best ? number_cell(best->median_ms / k.median_ms, "{:.2f}")
                                     : Cell{r.external.empty() ? kNoNumber : "— (baselines from another GPU)", kNoValue});
      if (clocks) {
        if (const auto& c = k.sm_clock)
          t.rows.back().push_back(
              Cell{fmt::format("{:.0f} ({:.0f}–{:.0f})", c->median_mhz, c->min_mhz, c->max_mhz), c->median_mhz});
        else
          t.rows.back().push_back(Cell{kNoNumber, kNoValue});
      }
    }
    for (const auto& x : r.external) {
      t.rows.push_back({Cell{x.implementation + " (" + (x.gpu.empty() ? "unnamed GPU" : x.gpu) + ")", kNoValue},
                        Cell{shape_label(r.problem), kNoValue}, number_cell(x.median_ms, "{:.4f}")});
      while (t.rows.back().size() < t.columns.size()) t.rows.back().push_back(Cell{"", kNoValue});
    }
  }
  if (external)
    t.legend = "rows named (gpu): other implementations' times from report.baselines, measured elsewhere; best baseline / "
               "ours: the fastest of them on this GPU over the kernel's time";
  return t;
}

}  // namespace attnlab::views
