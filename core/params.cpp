#include "core/params.h"

#include "core/error.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace attnlab {

using nlohmann::json;

const char* to_string(ParamType t) {
  switch (t) {
    case ParamType::integer: return "integer";
    case ParamType::real: return "number";
    case ParamType::boolean: return "boolean";
    case ParamType::choice: return "string";
  }
  return "?";
}

ParamSpec ParamSpec::integer(std::string name, int64_t def, int64_t min, int64_t max, std::string help) {
  return {std::move(name), ParamType::integer, def, double(min), double(max), {}, std::move(help)};
}
ParamSpec ParamSpec::real(std::string name, double def, double min, double max, std::string help) {
  return {std::move(name), ParamType::real, def, min, max, {}, std::move(help)};
}
ParamSpec ParamSpec::boolean(std::string name, bool def, std::string help) {
  return {std::move(name), ParamType::boolean, def, 0, 1, {}, std::move(help)};
}
ParamSpec ParamSpec::choice(std::string name, std::string def, std::vector<std::string> choices,
                            std::string help) {
  return {std::move(name), ParamType::choice, std::move(def), 0, 0, std::move(choices), std::move(help)};
}

namespace {

const ParamSpec& find_spec(const std::vector<ParamSpec>& specs, const std::string& name,
                           const std::string& where) {
  for (const auto& s : specs)
    if (s.name == name) return s;
  std::string known;
  for (const auto& s : specs) known += (known.empty() ? "" : ", ") + s.name;
  fail_input(where + "." + echo(name),
             fmt::format("unknown parameter (known: {})", known.empty() ? "none" : known));
}

std::string json_kind(const json& v) {
  if (v.is_boolean()) return "boolean";
  if (v.is_number_integer() || v.is_number_unsigned()) return "integer";
  if (v.is_number()) return "number";
  if (v.is_string()) return "string";
  if (v.is_null()) return "null";
  if (v.is_array()) return "array";
  return "object";
}

// One value checked against its row; errors name the field and the rule.
ParamValue check_value(const ParamSpec& s, const json& v, const std::string& field) {
  auto type_error = [&] {
    fail_input(field, fmt::format("expected {}, got {}", to_string(s.type), json_kind(v)));
  };
  auto range_error = [&](const std::string& shown) {
    fail_input(field, fmt::format("{} is outside [{}, {}]", shown, s.min, s.max));
  };
  switch (s.type) {
    case ParamType::integer:
      return json_integer(v, static_cast<int64_t>(s.min), static_cast<int64_t>(s.max), field);
    case ParamType::real: {
      if (!v.is_number()) type_error();
      const double x = v.get<double>();
      if (!std::isfinite(x)) fail_input(field, "must be finite");
      if (x < s.min || x > s.max) range_error(fmt::format("{}", x));
      return x;
    }
    case ParamType::boolean:
      if (!v.is_boolean()) type_error();
      return v.get<bool>();
    case ParamType::choice: {
      if (!v.is_string()) type_error();
      const auto x = v.get<std::string>();
      if (std::find(s.choices.begin(), s.choices.end(), x) == s.choices.end())
        fail_input(field, fmt::format("'{}' is not one of: {}", echo(x), fmt::join(s.choices, ", ")));
      return x;
    }
  }
  throw std::logic_error("unhandled parameter type");
}

}  // namespace

int64_t json_integer(const json& v, int64_t min, int64_t max, const std::string& field) {
  auto outside = [&](const std::string& shown) {
    if (min == std::numeric_limits<int64_t>::min() && max == std::numeric_limits<int64_t>::max())
      fail_input(field, fmt::format("{} does not fit a 64-bit integer", shown));
    fail_input(field, fmt::format("{} is outside [{}, {}]", shown, min, max));
  };
  if (v.is_number_unsigned()) {  // checked first: is_number_integer() holds for unsigned values too
    const uint64_t u = v.get<uint64_t>();
    if (max < 0 || u > static_cast<uint64_t>(max) || (min > 0 && u < static_cast<uint64_t>(min)))
      outside(std::to_string(u));
    return static_cast<int64_t>(u);
  }
  if (v.is_number_integer()) {
    const int64_t x = v.get<int64_t>();
    if (x < min || x > max) outside(std::to_string(x));
    return x;
  }
  if (v.is_number_float()) {
    const double f = v.get<double>();
    if (!std::isfinite(f) || f != std::floor(f)) fail_input(field, "expected integer, got number");
    // ±2^63 bound the conversion itself: double(INT64_MAX) rounds up to 2^63, which does not convert.
    if (f < double(min) || f > double(max) || f >= 0x1p63 || f < -0x1p63) outside(fmt::format("{}", f));
    return static_cast<int64_t>(f);  // 64.0 is accepted as 64
  }
  fail_input(field, fmt::format("expected integer, got {}", json_kind(v)));
}

ParamValues ParamValues::defaults(const std::vector<ParamSpec>& specs) {
  ParamValues out;
  for (const auto& s : specs) out.values_[s.name] = s.default_value;
  return out;
}

ParamValues ParamValues::parse(const std::vector<ParamSpec>& specs, const json& given,
                               const std::string& where) {
  ParamValues out = defaults(specs);
  if (given.is_null()) return out;
  if (!given.is_object()) fail_input(where, fmt::format("expected an object, got {}", json_kind(given)));
  for (const auto& [name, value] : given.items()) {
    const ParamSpec& s = find_spec(specs, name, where);
    out.values_[name] = check_value(s, value, where + "." + name);
  }
  return out;
}

void ParamValues::set(const std::vector<ParamSpec>& specs, const std::string& name, const json& value,
                      const std::string& where) {
  const ParamSpec& s = find_spec(specs, name, where);
  values_[name] = check_value(s, value, where + "." + name);
}

const ParamValue& ParamValues::get(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) throw std::logic_error("parameter '" + name + "' was never declared");
  return it->second;
}

int64_t ParamValues::integer(const std::string& name) const { return std::get<int64_t>(get(name)); }
double ParamValues::real(const std::string& name) const { return std::get<double>(get(name)); }
bool ParamValues::flag(const std::string& name) const { return std::get<bool>(get(name)); }
const std::string& ParamValues::choice(const std::string& name) const {
  return std::get<std::string>(get(name));
}

json to_json(const ParamValue& v) {
  return std::visit([](const auto& x) { return json(x); }, v);
}

json ParamValues::to_json() const {
  json out = json::object();
  for (const auto& [name, v] : values_) out[name] = attnlab::to_json(v);
  return out;
}

json to_json(const ParamSpec& s) {
  json out = {{"name", s.name}, {"type", to_string(s.type)}, {"default", to_json(s.default_value)},
              {"help", s.help}};
  if (s.type == ParamType::integer || s.type == ParamType::real) out["range"] = {s.min, s.max};
  if (s.type == ParamType::choice) out["choices"] = s.choices;
  return out;
}

}  // namespace attnlab
