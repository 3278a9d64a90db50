#include "app/report/csv.h"

#include <fmt/format.h>

#include <cmath>

namespace attnlab::report {

namespace {

std::string quoted(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    out += c;
    if (c == '"') out += '"';  // RFC 4180: a quote inside a quoted field is doubled
  }
  out += '"';
  return out;
}

}  // namespace

std::string to_csv(const views::Table& t) {
  std::string out;
  for (size_t c = 0; c < t.columns.size(); ++c) {
    if (c) out += ',';
    const auto& col = t.columns[c];
    out += quoted(col.key);  // keys name their unit where they have one (time_ms, kv_cache_bytes)
  }
  out += '\n';
  for (const auto& row : t.rows) {
    for (size_t c = 0; c < row.size(); ++c) {
      if (c) out += ',';
      if (!std::isnan(row[c].value)) out += fmt::format("{}", row[c].value);
      // A missing number ("—", or "— (why)" where a backend cannot fill it): an empty field.
      else if (row[c].text.rfind(views::kNoNumber, 0) != 0) out += quoted(row[c].text);
    }
    out += '\n';
  }
  return out;
}

}  // namespace attnlab::report
