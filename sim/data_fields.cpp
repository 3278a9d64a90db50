// attnlab sim: checking the data files against their field tables (data_fields.h).
#include "sim/data_fields.h"

#include "core/error.h"
#include "core/json_input.h"
#include "core/params.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <limits>

namespace attnlab::sim {

namespace fs = std::filesystem;
using nlohmann::json;

const char* to_string(FieldType t) {
  switch (t) {
    case FieldType::integer: return "integer";
    case FieldType::real: return "number";
    case FieldType::text: return "text";
    case FieldType::choice: return "text";
    case FieldType::id: return "text (an id)";
    case FieldType::object: return "object";
    case FieldType::array: return "array";
    case FieldType::text_or_object: return "text or object";
  }
  return "?";
}

FieldSpec FieldSpec::integer(std::string name, double min, double max, std::string help) {
  FieldSpec f;
  f.name = std::move(name), f.type = FieldType::integer, f.min = min, f.max = max, f.help = std::move(help);
  return f;
}
FieldSpec FieldSpec::real(std::string name, double min, double max, std::string help) {
  FieldSpec f = integer(std::move(name), min, max, std::move(help));
  f.type = FieldType::real;
  return f;
}
FieldSpec FieldSpec::text(std::string name, double max_bytes, std::string help) {
  FieldSpec f = integer(std::move(name), 1, max_bytes, std::move(help));
  f.type = FieldType::text;
  return f;
}
FieldSpec FieldSpec::choice(std::string name, std::vector<std::string> choices, std::string help) {
  FieldSpec f = integer(std::move(name), 0, 0, std::move(help));
  f.type = FieldType::choice, f.choices = std::move(choices);
  return f;
}
FieldSpec FieldSpec::id(std::string name, std::string help) {
  FieldSpec f = integer(std::move(name), 1, double(kMaxIdBytes), std::move(help));
  f.type = FieldType::id;
  return f;
}
FieldSpec FieldSpec::object(std::string name, const FieldTable& (*fields)(), std::string help) {
  FieldSpec f = integer(std::move(name), 0, 0, std::move(help));
  f.type = FieldType::object, f.fields = fields;
  return f;
}
FieldSpec FieldSpec::array(std::string name, double min_count, double max_count, const FieldTable& (*element)(),
                           std::string help) {
  FieldSpec f = integer(std::move(name), min_count, max_count, std::move(help));
  f.type = FieldType::array, f.fields = element;
  return f;
}
FieldSpec FieldSpec::optional() const {
  FieldSpec f = *this;
  f.required = false;
  return f;
}
FieldSpec FieldSpec::with_source() const {
  FieldSpec f = *this;
  f.sourced = true;
  return f;
}
FieldSpec FieldSpec::or_empty() const {
  FieldSpec f = *this;
  f.min = 0;
  return f;
}
FieldSpec FieldSpec::or_object(const FieldTable& (*object_fields)()) const {
  FieldSpec f = *this;
  f.type = FieldType::text_or_object, f.fields = object_fields;
  return f;
}

namespace {

constexpr double kMaxSourceBytes = 1000;

std::string kind_of(const json& v) {
  if (v.is_boolean()) return "boolean";
  if (v.is_number_integer() || v.is_number_unsigned()) return "integer";
  if (v.is_number()) return "number";
  if (v.is_string()) return "text";
  if (v.is_null()) return "null";
  if (v.is_array()) return "array";
  return "object";
}

[[noreturn]] void wrong_type(const FieldSpec& f, const json& v, const std::string& path) {
  fail_input(path, fmt::format("expected {}, got {}", to_string(f.type), kind_of(v)));
}

// One printable line of f.min..f.max bytes: control characters (a newline) would break the one-line
// messages and the tables that print it.
void check_text(const FieldSpec& f, const json& v, const std::string& path) {
  if (!v.is_string()) wrong_type(f, v, path);
  const std::string& s = v.get_ref<const std::string&>();
  if (double(s.size()) < f.min || double(s.size()) > f.max)
    fail_input(path, fmt::format("'{}' is {} bytes long: expected {} to {}", echo(s), s.size(), f.min, f.max));
  const auto bad = std::find_if(s.begin(), s.end(), [](char c) {
    const auto b = static_cast<unsigned char>(c);
    return b < 0x20 || b == 0x7F;
  });
  if (bad != s.end())
    fail_input(path, fmt::format("'{}' holds a control character (byte {}): expected one printable line", echo(s),
                                 bad - s.begin()));
}

// Integers and reals: the variants' own checker (core/params.h), so the rules and their wording are the same.
void check_number(const FieldSpec& f, const json& v, const std::string& parent) {
  const std::string path = parent + "." + f.name;
  if (!v.is_number()) wrong_type(f, v, path);
  // Out of range first, whatever its form: 1e300 SMs is too many, not "not an integer".
  if (v.is_number_unsigned() && v.get<std::uint64_t>() > std::uint64_t(std::numeric_limits<std::int64_t>::max()))
    fail_input(path, fmt::format("{} is outside [{}, {}]", v.get<std::uint64_t>(), f.min, f.max));
  if (v.is_number_float() && (v.get<double>() < f.min || v.get<double>() > f.max))
    fail_input(path, fmt::format("{} is outside [{}, {}]", v.get<double>(), f.min, f.max));
  const ParamSpec p = f.type == FieldType::integer
                          ? ParamSpec::integer(f.name, std::int64_t(f.min), std::int64_t(f.min), std::int64_t(f.max), f.help)
                          : ParamSpec::real(f.name, f.min, f.min, f.max, f.help);
  ParamValues values;
  values.set({p}, f.name, v, parent);
}

FieldSpec source_row() {
  return FieldSpec::text("source", kMaxSourceBytes, "where the value comes from (datasheet, guide, measurement)");
}

void check_value(const FieldSpec& f, const json& v, const std::string& parent);

// {"value": v, "source": "…"}: v checked against f's row, errors naming the field itself.
void check_sourced(const FieldSpec& f, const json& v, const std::string& parent) {
  const std::string path = parent + "." + f.name;
  if (!v.is_object() || !v.contains("value") || !v.contains("source"))
    fail_input(path, "expected {\"value\": number, \"source\": \"where it comes from\"}");
  for (const auto& [key, _] : v.items())
    if (key != "value" && key != "source") fail_input(path + "." + echo(key), "unknown field (known: value, source)");
  FieldSpec plain = f;
  plain.sourced = false;
  check_value(plain, v["value"], parent);
  check_text(source_row(), v["source"], path + ".source");
}

void check_value(const FieldSpec& f, const json& v, const std::string& parent) {
  if (f.sourced) return check_sourced(f, v, parent);
  const std::string path = parent + "." + f.name;
  switch (f.type) {
    case FieldType::integer:
    case FieldType::real: return check_number(f, v, parent);
    case FieldType::text: return check_text(f, v, path);
    case FieldType::choice: {
      if (!v.is_string()) wrong_type(f, v, path);
      const std::string& s = v.get_ref<const std::string&>();
      if (std::find(f.choices.begin(), f.choices.end(), s) == f.choices.end())
        fail_input(path, fmt::format("'{}' is not one of: {}", echo(s), fmt::join(f.choices, ", ")));
      return;
    }
    case FieldType::id:
      if (!v.is_string()) wrong_type(f, v, path);
      if (f.min == 0 && v.get_ref<const std::string&>().empty()) return;
      if (!is_file_id(v.get_ref<const std::string&>()))
        fail_input(path, fmt::format("'{}' is not an id (1 to {} letters, digits, '.', '_', '-')",
                                     echo(v.get_ref<const std::string&>()), kMaxIdBytes));
      return;
    case FieldType::object:
      if (!v.is_object()) wrong_type(f, v, path);
      if (f.fields) check_fields(v, f.fields(), path);
      return;
    case FieldType::text_or_object:
      if (v.is_object()) return check_fields(v, f.fields(), path);
      return check_text(f, v, path);
    case FieldType::array: {
      if (!v.is_array()) wrong_type(f, v, path);
      if (double(v.size()) < f.min || double(v.size()) > f.max)
        fail_input(path, fmt::format("has {} entries: expected {} to {}", v.size(), f.min, f.max));
      FieldSpec element = f.fields().at(0);
      for (size_t i = 0; i < v.size(); ++i) {
        element.name = fmt::format("{}[{}]", f.name, i);
        check_value(element, v[i], parent);
      }
      return;
    }
  }
}

}  // namespace

void check_fields(const json& j, const FieldTable& table, const std::string& where) {
  if (!j.is_object()) fail_input(where, fmt::format("expected an object, got {}", kind_of(j)));
  for (const auto& [name, _] : j.items()) {
    const bool known = std::any_of(table.begin(), table.end(), [&](const FieldSpec& f) { return f.name == name; });
    if (!known) {
      std::vector<std::string> names;
      for (const auto& f : table) names.push_back(f.name);
      fail_input(where + "." + echo(name), fmt::format("unknown field (known: {})", fmt::join(names, ", ")));
    }
  }
  for (const auto& f : table) {
    if (j.contains(f.name)) check_value(f, j[f.name], where);
    else if (f.required) fail_input(where + "." + f.name, fmt::format("missing ({})", f.help));
  }
}

double number(const json& j, const std::string& name) {
  const json& v = j.at(name);
  return v.is_object() ? v.at("value").get<double>() : v.get<double>();
}

std::string source_of(const json& j, const std::string& name) {
  if (!j.contains(name) || !j[name].is_object() || !j[name].contains("source")) return "";
  return j[name]["source"].get<std::string>();
}

bool is_file_id(std::string_view s) {
  if (s.empty() || s.size() > kMaxIdBytes || s[0] == '.' || s[0] == '-') return false;
  if (s.find("..") != std::string_view::npos) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
           c == '-';
  });
}

DataFileName data_file_name(std::string_view arg) {
  constexpr std::string_view kJson = ".json";
  if (arg.size() > kJson.size() && arg.substr(arg.size() - kJson.size()) == kJson) return DataFileName::path;
  return is_file_id(arg) ? DataFileName::id : DataFileName::neither;
}

std::string neither_id_nor_path(std::string_view arg, const std::string& what) {
  return fmt::format("'{}' is neither a {} id (1 to {} letters, digits, '.', '_', '-'; no '/' or \"..\") nor a path "
                     "to a .json file",
                     echo(arg), what, kMaxIdBytes);
}

std::vector<std::string> file_ids(const std::string& dir) {
  std::vector<std::string> ids;
  std::error_code ec;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec))
    if (it->path().extension() == ".json" && is_file_id(it->path().stem().string()))
      ids.push_back(it->path().stem().string());
  std::sort(ids.begin(), ids.end());
  return ids;
}

std::string data_file_path(const std::string& arg, const std::string& dir, const std::string& what,
                           const std::string& where) {
  switch (data_file_name(arg)) {
    case DataFileName::path: return arg;
    case DataFileName::neither: fail_input(where, neither_id_nor_path(arg, what));
    case DataFileName::id: break;
  }
  const fs::path file = fs::path(dir) / (arg + ".json");
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(file, ec);
  if (st.type() == fs::file_type::not_found) {
    const std::vector<std::string> ids = file_ids(dir);
    fail_input(where, fmt::format("unknown {} '{}' (known: {})", what, echo(arg),
                                  ids.empty() ? "none in " + echo_path(dir) : fmt::format("{}", fmt::join(ids, ", "))));
  }
  return file.string();  // whatever else is wrong with it (a folder, a loop) the reader says
}

std::string where_of(const std::string& path) { return echo_path(path); }

json read_data_file(const std::string& path) {
  json j = read_json_file(path);
  if (!j.is_object()) fail_input(where_of(path), "expected a JSON object");
  return j;
}

}  // namespace attnlab::sim
