#include "app/views/table.h"

#include "core/error.h"
#include "core/problem.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

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

Table results_table(const Results& r) {
  Table t;
  t.title = "Results (errors against the FP64 ground truth)";
  t.columns = {{"variant", "variant", ""},   {"backend", "backend", ""},   {"rel_l2", "rel L2", ""},
               {"mre", "MRE", ""},           {"cosine", "cosine", ""},     {"max_abs", "max abs", ""},
               {"time_ms", "time", "ms"},    {"flop_per_s", "rate", ""},   {"kv_cache_bytes", "KV cache", ""}};
  // Rates and sizes carry their unit in each cell (the one that fits); the CSV keeps FLOP/s and bytes.
  // What a backend does not produce is a dash with the reason: the model predicts time and traffic, not an
  // output; the cache's size is what the reference's storage accounting records, not a kernel timing.
  const double flops = problem_flops(r.problem);
  // A metric that is not a number says why: no truth was computed (a timing-only run), or the output
  // held NaN or Inf.
  const auto metric = [&](double value, auto format) {
    if (!r.environment.ground_truth) return none("a timing-only run computes no FP64 truth");
    return std::isfinite(value) ? format(value) : none("the output is not finite");
  };
  for (const auto& v : r.variants) {
    if (v.reference) {
      const auto& x = *v.reference;
      t.rows.push_back({text(v.label), text("reference"), metric(x.metrics.rel_l2, sci), metric(x.metrics.mre, sci),
                        metric(x.metrics.cosine, cosine), metric(x.metrics.max_abs, sci), fixed(x.time_ms, 1), rate(x.gflops * 1e9),
                        bytes(double(x.kv_cache_bytes))});
    }
    if (v.kernel) {
      const auto& x = *v.kernel;
      t.rows.push_back({text(v.label), text("kernel"), metric(x.metrics.rel_l2, sci), metric(x.metrics.mre, sci),
                        metric(x.metrics.cosine, cosine), metric(x.metrics.max_abs, sci), fixed(x.median_ms, 3), rate(x.tops * 1e12),
                        none(v.reference ? "the reference row gives its size" : "sized by the reference, which did not run")});
    }
    if (v.model) {
      const auto& x = *v.model;
      const char* no_output = "a prediction has no output";
      t.rows.push_back({text(v.label), text("model (" + x.bound + "-bound)"), none(no_output), none(no_output),
                        none(no_output), none(no_output), fixed(x.time_ms, 3),
                        rate(x.time_ms > 0 ? flops / (x.time_ms * 1e-3) : kNoValue),
                        none("the model counts traffic, not the cache")});
    }
  }
  return t;
}

Table with_time_ratio(Table t, const std::string& baseline) {
  const auto col = [&](const std::string& key) {
    for (size_t c = 0; c < t.columns.size(); ++c)
      if (t.columns[c].key == key) return c;
    return t.columns.size();
  };
  const size_t variant = col("variant"), backend = col("backend"), time = col("time_ms");
  double base = kNoValue;
  for (const auto& row : t.rows)
    if (row[variant].text == baseline && row[backend].text == "reference") base = row[time].value;
  if (!(base > 0)) throw InputError(fmt::format("--baseline: no reference row for variant '{}'", echo(baseline)));
  t.columns.push_back({"time_ratio", "time / " + baseline, ""});
  for (auto& row : t.rows) row.push_back(fixed(row[time].value / base, 2));
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
    if (s.variant.empty() && s.reason != kNotRequested) line += (line.empty() ? "" : "; ") + s.backend + ": " + s.reason;
  return line;
}

Table skipped_table(const Results& r) {
  Table t;
  t.title = "Backends that did not run";
  t.columns = {{"backend", "backend", ""}, {"variant", "variant", ""}, {"reason", "reason", ""}};
  for (const auto& s : r.environment.skipped)
    t.rows.push_back({text(s.backend), text(s.variant.empty() ? "all" : s.variant), text(s.reason)});
  return t;
}

}  // namespace attnlab::views
