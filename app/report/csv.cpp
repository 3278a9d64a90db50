#include "app/report/csv.h"

#include <fmt/format.h>

#include <cmath>

namespace attnlab::report {

namespace {

std::string quoted(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

}  // namespace

std::string to_csv(const views::Table& t) {
  std::string out;
  for (size_t c = 0; c < t.columns.size(); ++c)
    out += (c ? "," : "") + quoted(t.columns[c].unit.empty() ? t.columns[c].key : t.columns[c].key + "_" + t.columns[c].unit);
  out += "\n";
  for (const auto& row : t.rows) {
    for (size_t c = 0; c < row.size(); ++c)
      out += (c ? "," : "") + (std::isnan(row[c].value) ? quoted(row[c].text) : fmt::format("{}", row[c].value));
    out += "\n";
  }
  return out;
}

}  // namespace attnlab::report
