#include "app/views/sweep.h"

#include <charconv>
#include <limits>
#include <map>

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
  // The points' tables may differ in their columns (a backend that ran at one point and not at another gives a
  // time column only there): the sweep's columns are their union by key, in first-seen order.
  std::vector<Table> points;
  for (const auto& r : results) points.push_back(results_table(r));
  std::map<std::string, size_t> at;  // key → column
  for (const auto& point : points)
    for (const auto& c : point.columns)
      if (at.emplace(c.key, t.columns.size()).second) t.columns.push_back(c);
  for (size_t i = 0; i < points.size(); ++i) {
    for (const auto& row : points[i].rows) {
      std::vector<Cell> cells(t.columns.size(), Cell{"", std::numeric_limits<double>::quiet_NaN()});
      for (size_t a = 0; a < values[i].size(); ++a) cells[a] = value_cell(values[i][a]);
      for (size_t c = 0; c < row.size(); ++c) cells[at.at(points[i].columns[c].key)] = row[c];
      t.rows.push_back(std::move(cells));
    }
  }
  if (!points.empty()) t.legend = points.front().legend;
  return t;
}

}  // namespace attnlab::views
