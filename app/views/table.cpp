#include "app/views/table.h"

#include "core/error.h"

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

}  // namespace

Cell number_cell(double value, const char* format) {
  if (!std::isfinite(value)) return {kNoNumber, kNoValue};
  return {fmt::format(fmt::runtime(format), value), value};
}

Table results_table(const Results& r) {
  Table t;
  t.title = "Results (errors against the FP64 ground truth)";
  t.columns = {{"variant", "variant", ""},   {"backend", "backend", ""},   {"rel_l2", "rel L2", ""},
               {"mre", "MRE", ""},           {"cosine", "cosine", ""},     {"max_abs", "max abs", ""},
               {"time_ms", "time", "ms"},    {"gflops", "rate", "GFLOP/s"},  {"kv_cache_bytes", "KV cache", "bytes"}};
  for (const auto& v : r.variants) {
    if (v.reference) {
      const auto& x = *v.reference;
      t.rows.push_back({text(v.label), text("reference"), sci(x.metrics.rel_l2), sci(x.metrics.mre),
                        cosine(x.metrics.cosine), sci(x.metrics.max_abs), fixed(x.time_ms, 1), fixed(x.gflops, 1),
                        bytes(double(x.kv_cache_bytes))});
    }
    if (v.kernel) {
      const auto& x = *v.kernel;
      t.rows.push_back({text(v.label), text("kernel"), sci(x.metrics.rel_l2), sci(x.metrics.mre),
                        cosine(x.metrics.cosine), sci(x.metrics.max_abs), fixed(x.median_ms, 3),
                        fixed(x.tops * 1e3, 1), text("")});
    }
    if (v.model) {
      const auto& x = *v.model;
      t.rows.push_back({text(v.label), text("model (" + x.bound + "-bound)"), text(""), text(""), text(""), text(""),
                        fixed(x.time_ms, 3), text(""), text("")});
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

Table skipped_table(const Results& r) {
  Table t;
  t.title = "Backends that did not run";
  t.columns = {{"backend", "backend", ""}, {"variant", "variant", ""}, {"reason", "reason", ""}};
  for (const auto& s : r.environment.skipped)
    t.rows.push_back({text(s.backend), text(s.variant.empty() ? "all" : s.variant), text(s.reason)});
  return t;
}

}  // namespace attnlab::views
