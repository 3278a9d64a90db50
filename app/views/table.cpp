#include "app/views/table.h"

#include "core/error.h"
#include "core/config.h"
#include "core/problem.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string_view>

namespace attnlab::views {

namespace {

constexpr double kNoValue = std::numeric_limits<double>::quiet_NaN();

Cell text(std::string s) { return {std::move(s), kNoValue}; }
Cell sci(double v) { return number_cell(v, "{:.3e}"); }
Cell fixed(double v, int digits) {
  return std::isfinite(v) ? Cell{fmt::format("{:.{}f}", v, digits), v} : Cell{kNoNumber, kNoValue};
}
Cell cosine(double v) { return number_cell(v, "{:.6f}"); }
Cell bytes(double v) {
  if (!std::isfinite(v)) return {kNoNumber, kNoValue};
  if (v >= 1 << 30) return {fmt::format("{:.2f} GiB", v / (1 << 30)), v};
  if (v >= 1 << 20) return {fmt::format("{:.2f} MiB", v / (1 << 20)), v};
  if (v >= 1 << 10) return {fmt::format("{:.1f} KiB", v / (1 << 10)), v};
  return {fmt::format("{:.0f} B", v), v};
}
// A rate in FLOP/s, printed in the unit that fits it (a kernel's hundreds of TFLOP/s, the CPU reference's
// GFLOP/s); the cell's value stays in FLOP/s. A rate of 0 is one that was not recorded.
Cell rate(double flop_per_s) {
  if (!std::isfinite(flop_per_s) || !(flop_per_s > 0)) return {kNoNumber, kNoValue};
  struct Unit {
    double scale;
    const char* name;
  };
  constexpr Unit kUnits[] = {{1e15, "PFLOP/s"}, {1e12, "TFLOP/s"}, {1e9, "GFLOP/s"}, {1e6, "MFLOP/s"}};
  for (const Unit& u : kUnits)
    if (flop_per_s >= u.scale) return {fmt::format("{:.1f} {}", flop_per_s / u.scale, u.name), flop_per_s};
  return {fmt::format("{:.0f} FLOP/s", flop_per_s), flop_per_s};
}
// A cell a backend cannot fill, saying why.
Cell none(const char* why) { return text(fmt::format("{} ({})", kNoNumber, why)); }

}  // namespace

double problem_flops(const nlohmann::json& j) {
  Problem p;
  p.batch = j.value("batch", p.batch), p.q_heads = j.value("q_heads", p.q_heads);
  p.kv_heads = j.value("kv_heads", p.kv_heads), p.q_len = j.value("q_len", p.q_len);
  p.kv_len = j.value("kv_len", p.kv_len), p.head_dim = j.value("head_dim", p.head_dim);
  p.causal = j.value("causal", p.causal);
  return p.flops();
}

Cell number_cell(double value, const char* format) {
  if (!std::isfinite(value)) return {kNoNumber, kNoValue};
  return {fmt::format(fmt::runtime(format), value), value};
}

namespace {

// A machine as a column title names it: the GPU without its vendor's word ("H200", "H100 80GB HBM3").
std::string short_gpu(const std::string& name) {
  constexpr std::string_view kVendor = "NVIDIA ";
  return name.rfind(kVendor, 0) == 0 ? name.substr(kVendor.size()) : name;
}

// Which backend a results row belongs to, from its backend cell ("model (memory-bound)" is the model's).
std::string backend_of(const std::string& cell) { return cell.substr(0, cell.find(' ')); }

// Whether `backend` (one of kBackends) left its result in v.
bool has_result(const VariantResult& v, const std::string& backend) {
  if (backend == "reference") return v.reference.has_value();
  if (backend == "kernel") return v.kernel.has_value();
  return v.model.has_value();
}

}  // namespace

Table results_table(const Results& r) {
  Table t;
  t.title = "Results (errors against the FP64 ground truth)";
  const auto any = [&](const char* backend) {
    return std::any_of(r.variants.begin(), r.variants.end(), [&](const VariantResult& v) { return has_result(v, backend); });
  };
  const bool reference = any("reference"), kernel = any("kernel"), model = any("model");
  std::string model_gpu;
  for (const auto& v : r.variants)
    if (v.model) model_gpu = v.model->gpu;
  const Environment& env = r.environment;
  t.columns = {{"variant", "variant", ""}, {"backend", "backend", ""}, {"rel_l2", "rel L2", ""},
               {"mre", "MRE", ""},         {"cosine", "cosine", ""},   {"max_abs", "max abs", ""}};
  // One time column per machine: a CPU's milliseconds and a GPU's are not the same quantity.
  std::vector<std::string> legend;
  if (reference) {
    t.columns.push_back({kTimeKeys[0], "time on CPU", "ms"});
    legend.push_back(fmt::format("time on CPU: the reference on {}, {} threads", env.cpu.empty() ? "this CPU" : env.cpu,
                                 env.threads));
  }
  if (kernel) {
    const std::string gpu = env.gpu ? short_gpu(*env.gpu) : "GPU";
    t.columns.push_back({kTimeKeys[1], "time on " + gpu, "ms"});
    legend.push_back(fmt::format("time on {}: the kernel's median on the {}", gpu, env.gpu.value_or("GPU")));
  }
  if (model) {
    t.columns.push_back({kTimeKeys[2], "predicted for " + model_gpu, "ms"});
    legend.push_back(fmt::format("predicted for {}: the cost model, not a measurement", model_gpu));
  }
  const bool external = !r.external.empty();
  if (external) {
    std::string gpu = r.external.front().gpu;
    for (const auto& x : r.external)
      if (x.gpu != gpu) gpu.clear();
    const std::string title = gpu.empty() ? "measured elsewhere" : "measured on " + gpu;
    t.columns.push_back({kTimeKeys[3], title, "ms"});
    std::vector<std::string> files;
    for (const auto& x : r.external)
      if (std::find(files.begin(), files.end(), x.file) == files.end()) files.push_back(x.file);
    legend.push_back(fmt::format("{}: other implementations' times from {}, not this run", title, fmt::join(files, ", ")));
  }
  t.columns.push_back({"flop_per_s", "rate", ""});
  t.columns.push_back({"kv_cache_bytes", "KV cache", ""});
  const auto time_cells = [&](size_t backend, Cell c) {  // this row's time in its machine's column, the others empty
    std::vector<Cell> cells;
    const bool shown[] = {reference, kernel, model, external};
    for (size_t b = 0; b < 4; ++b)
      if (shown[b]) cells.push_back(b == backend ? c : Cell{"", kNoValue});
    return cells;
  };
  const auto row_of = [&](std::vector<Cell> head, std::vector<Cell> times, Cell rate_cell, Cell kv) {
    head.insert(head.end(), times.begin(), times.end());
    head.push_back(std::move(rate_cell));
    head.push_back(std::move(kv));
    return head;
  };
  // Rates and sizes carry their unit in each cell (the one that fits); the CSV keeps FLOP/s and bytes.
  const double flops = problem_flops(r.problem);
  // A metric that is not a number says why where the reason is this row's (its output held NaN or Inf); where
  // it is the whole run's (a timing-only run computed no truth), the cell is empty and the legend says it once.
  const auto metric = [&](double value, auto format) {
    if (!env.ground_truth) return Cell{"", kNoValue};
    return std::isfinite(value) ? format(value) : none("the output is not finite");
  };
  const Cell empty{"", kNoValue};
  for (const auto& v : r.variants) {
    if (v.reference) {
      const auto& x = *v.reference;
      t.rows.push_back(row_of({text(v.label), text("reference"), metric(x.metrics.rel_l2, sci),
                               metric(x.metrics.mre, sci), metric(x.metrics.cosine, cosine),
                               metric(x.metrics.max_abs, sci)},
                              time_cells(0, fixed(x.time_ms, 1)), rate(x.gflops * 1e9),
                              bytes(double(x.kv_cache_bytes))));
    }
    if (v.kernel) {
      const auto& x = *v.kernel;
      t.rows.push_back(row_of({text(v.label), text("kernel"), metric(x.metrics.rel_l2, sci), metric(x.metrics.mre, sci),
                               metric(x.metrics.cosine, cosine), metric(x.metrics.max_abs, sci)},
                              time_cells(1, fixed(x.median_ms, 3)), rate(x.tops * 1e12), empty));
    }
    if (v.model) {
      const auto& x = *v.model;
      t.rows.push_back(row_of({text(v.label), text("model (" + x.bound + "-bound)"), empty, empty, empty, empty},
                              time_cells(2, fixed(x.time_ms, 3)),
                              rate(x.time_ms > 0 ? flops / (x.time_ms * 1e-3) : kNoValue), empty));
    }
  }
  if (!env.ground_truth) legend.push_back("no errors: a timing-only run computes no FP64 truth");
  if (model) legend.push_back("model rows have no output, so no errors");
  if (kernel || model) legend.push_back("KV cache: counted by the reference");
  for (const auto& x : r.external)
    t.rows.push_back(row_of({text(x.implementation), text("external"), empty, empty, empty, empty},
                            time_cells(3, fixed(x.median_ms, 3)),
                            rate(x.median_ms > 0 ? flops / (x.median_ms * 1e-3) : kNoValue), empty));
  if (external) legend.push_back("external rows: timings only, no output to compare");
  bool dashes = false;
  for (const auto& row : t.rows)
    for (const auto& c : row) dashes = dashes || c.text.rfind(kNoNumber, 0) == 0;
  if (dashes) legend.push_back(fmt::format("{}: no finite number", kNoNumber));
  t.legend = fmt::format("{}", fmt::join(legend, " · "));
  return t;
}

Table with_time_ratio(Table t, const std::string& baseline) {
  const auto col = [&](const std::string& key) {
    for (size_t c = 0; c < t.columns.size(); ++c)
      if (t.columns[c].key == key) return c;
    return t.columns.size();
  };
  const size_t variant = col("variant"), backend = col("backend");
  const auto time_of = [&](const std::vector<Cell>& row) {  // the row's own time: the one time column it fills
    for (const char* key : kTimeKeys)
      if (const size_t c = col(key); c < t.columns.size() && !row[c].text.empty()) return row[c].value;
    return kNoValue;
  };
  std::map<std::string, double> base;  // backend → the baseline's time on it
  for (const auto& row : t.rows)
    if (row[variant].text == baseline) base[backend_of(row[backend].text)] = time_of(row);
  if (base.empty()) throw InputError(fmt::format("--baseline: no row of the variant '{}'", echo(baseline)));
  t.columns.push_back({"time_ratio", "time / " + baseline, ""});
  for (auto& row : t.rows) {
    const auto b = base.find(backend_of(row[backend].text));
    row.push_back(b == base.end() ? Cell{"", kNoValue} : fixed(time_of(row) / b->second, 2));
  }
  t.legend += fmt::format("{}time / {}: over {}'s time on the same backend", t.legend.empty() ? "" : " · ", baseline,
                          baseline);
  return t;
}

Table params_table(const Results& r) {
  Table t;
  t.title = "Variant parameters";
  t.columns = {{"variant", "variant", ""}, {"param", "parameter", ""}, {"value", "value", ""}};
  for (const auto& v : r.variants)
    for (const auto& [name, value] : v.params.items())
      t.rows.push_back({text(v.label), text(name),
                        value.is_number() ? Cell{value.dump(), value.get<double>()} : text(value.dump())});
  return t;
}

std::string gpu_line(const Environment& env) {
  // Where the model predicted for another GPU than this one, or for a spec standing in for one without its own,
  // the line says so (core/gpu_names.h): its numbers are not this GPU's.
  if (env.gpu) return env.model_gpu_note.empty() ? *env.gpu : *env.gpu + " (" + env.model_gpu_note + ")";
  for (const auto& s : env.skipped)
    if (s.backend == "kernel" && s.variant.empty() && s.reason != kNotRequested) return "none — " + s.reason;
  return "none";
}

std::string ran_line(const Environment& env) {
  std::string line;
  for (const auto& b : env.ran) line += (line.empty() ? "" : ", ") + b;
  return line;
}

std::string not_run_line(const Environment& env) {
  std::string line;
  for (const auto& s : env.skipped)
    if (s.reason != kNotRequested)
      line += (line.empty() ? "" : "; ") + s.backend + (s.variant.empty() ? "" : " for " + s.variant) + ": " + s.reason;
  return line;
}

Table what_ran_table(const Results& r) {
  Table t;
  t.title = "What ran";
  t.columns = {{"backend", "backend", ""}, {"ran_for", "ran for", ""}, {"not_run", "did not run, and why", ""}};
  for (const std::string& name : kBackends) {
    std::vector<std::string> ran, not_run;
    bool asked = false;
    for (const auto& v : r.variants)
      if (has_result(v, name)) ran.push_back(v.label);
    for (const auto& s : r.environment.skipped) {
      if (s.backend != name || s.reason == kNotRequested) continue;
      asked = true;
      not_run.push_back(s.variant.empty() ? s.reason : s.variant + ": " + s.reason);
    }
    if (ran.empty() && !asked) continue;  // not asked for
    const bool all = !ran.empty() && ran.size() == r.variants.size();
    t.rows.push_back({text(name), text(all ? "every variant" : ran.empty() ? "none" : fmt::format("{}", fmt::join(ran, ", "))),
                      text(not_run.empty() ? "" : fmt::format("{}", fmt::join(not_run, "; ")))});
  }
  return t;
}

}  // namespace attnlab::views
