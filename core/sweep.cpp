#include "core/sweep.h"

#include "core/error.h"
#include "core/json_input.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <string_view>

namespace attnlab {

namespace {

constexpr size_t kMaxPoints = 10000;

std::string text_of(const nlohmann::json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

// A --vary value: a JSON scalar (number, true, false, null, "quoted") where it is one, else the text itself.
// Only scalars are parsed, through the guarded reader: a value opening an array or object (nested 90 000
// deep, say) is text, never handed to the parser.
nlohmann::json scalar_or_text(const std::string& item) {
  const size_t first = item.find_first_not_of(" \t");
  if (first == std::string::npos || item[first] == '[' || item[first] == '{') return item;
  try {
    nlohmann::json value = parse_json_text(item, "--vary");
    return value.is_structured() ? nlohmann::json(item) : value;
  } catch (const InputError&) {
    // A number JSON cannot hold (1e999) stays an error; other text is a choice or generator name (`tile`).
    if (std::string_view("+-.0123456789").find(item[first]) != std::string_view::npos) throw;
    return item;
  }
}

}  // namespace

SweepAxis parse_axis(const std::string& spec) {
  const auto eq = spec.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
    fail_input("--vary", fmt::format("'{}': expected PATH=v1,v2,… (e.g. two_bit_heads=0,2,4)", echo(spec)));
  SweepAxis axis{spec.substr(0, eq), {}};
  size_t from = eq + 1;
  while (true) {
    const size_t comma = spec.find(',', from);
    const std::string item = spec.substr(from, comma == std::string::npos ? std::string::npos : comma - from);
    if (item.empty()) fail_input("--vary", fmt::format("'{}': empty value in the list", echo(spec)));
    axis.values.push_back(scalar_or_text(item));
    if (comma == std::string::npos) break;
    from = comma + 1;
  }
  return axis;
}

std::vector<SweepPoint> expand_sweep(const Experiment& base, const std::vector<SweepAxis>& axes,
                                     const std::string& where) {
  if (axes.empty() || axes.size() > 2)
    fail_input(where, fmt::format("a sweep has one or two axes (got {})", axes.size()));
  size_t total = 1;
  for (const auto& a : axes) {
    if (a.values.empty()) fail_input(where, fmt::format("{}: no values", a.path));
    total *= a.values.size();
  }
  if (total > kMaxPoints) fail_input(where, fmt::format("{} points: at most {} per sweep", total, kMaxPoints));
  std::vector<SweepPoint> points;
  for (size_t i = 0; i < total; ++i) {
    std::vector<size_t> index(axes.size());
    for (size_t a = axes.size(), rest = i; a-- > 0; rest /= axes[a].values.size())  // last axis fastest
      index[a] = rest % axes[a].values.size();
    SweepPoint pt{{}, base};
    std::string at = where;
    for (size_t a = 0; a < axes.size(); ++a) {
      const nlohmann::json& v = axes[a].values[index[a]];
      pt.values.push_back(text_of(v));
      at = fmt::format("{}[{}] {}={}", where, a, echo(axes[a].path), echo(pt.values.back()));
      set_value(pt.experiment, axes[a].path, v, fmt::format("{}[{}]", where, a));
    }
    try {
      check_experiment(pt.experiment);
    } catch (const InputError& e) {
      throw InputError(fmt::format("{}: {}", at, e.what()));
    }
    points.push_back(std::move(pt));
  }
  return points;
}

}  // namespace attnlab
