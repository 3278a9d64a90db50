#include "app/views/sweep.h"

#include <charconv>
#include <limits>

namespace attnlab::views {

namespace {

// A varied value as a cell: its number where it is one (so the CSV column is numeric), else text.
Cell value_cell(const std::string& text) {
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) v = std::numeric_limits<double>::quiet_NaN();
  return {text, v};
}

}  // namespace

Table sweep_table(const std::vector<std::string>& paths, const std::vector<std::vector<std::string>>& values,
                  const std::vector<Results>& results) {
  Table t;
  t.title = "Sweep (errors against the FP64 ground truth at each point)";
  for (const auto& p : paths) t.columns.push_back({p, p, ""});
  bool first = true;
  for (size_t i = 0; i < results.size(); ++i) {
    const Table point = results_table(results[i]);
    if (first) t.columns.insert(t.columns.end(), point.columns.begin(), point.columns.end()), first = false;
    for (const auto& row : point.rows) {
      std::vector<Cell> cells;
      for (const auto& v : values[i]) cells.push_back(value_cell(v));
      cells.insert(cells.end(), row.begin(), row.end());
      t.rows.push_back(std::move(cells));
    }
  }
  return t;
}

}  // namespace attnlab::views
