// attnlab core: parameters declared as data.
//
// Every variant (and every data generator) lists its parameters as ParamSpec rows: name, type,
// default, range, one-line help. The config parser validates against the rows, the GUI draws its
// controls from them and the report prints them; nothing else knows a parameter's name.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

namespace attnlab {

enum class ParamType { integer, real, boolean, choice };
const char* to_string(ParamType t);

using ParamValue = std::variant<int64_t, double, bool, std::string>;

struct ParamSpec {
  std::string name;
  ParamType type = ParamType::integer;
  ParamValue default_value;
  double min = 0.0;                  // inclusive range for integer and real parameters
  double max = 0.0;
  std::vector<std::string> choices;  // for choice parameters
  std::string help;

  static ParamSpec integer(std::string name, int64_t def, int64_t min, int64_t max, std::string help);
  static ParamSpec real(std::string name, double def, double min, double max, std::string help);
  static ParamSpec boolean(std::string name, bool def, std::string help);
  static ParamSpec choice(std::string name, std::string def, std::vector<std::string> choices,
                          std::string help);
};

// A complete set of values for one parameter table: every declared name present, all validated.
class ParamValues {
 public:
  ParamValues() = default;
  // Defaults for every row of `specs`.
  static ParamValues defaults(const std::vector<ParamSpec>& specs);
  // Validates `given` (a JSON object, may be null) against `specs` and fills defaults. Errors name
  // `where` + ".<param>" and the rule: unknown name, wrong type, out of range, not a listed choice.
  static ParamValues parse(const std::vector<ParamSpec>& specs, const nlohmann::json& given,
                           const std::string& where);

  int64_t integer(const std::string& name) const;
  double real(const std::string& name) const;
  bool flag(const std::string& name) const;
  const std::string& choice(const std::string& name) const;

  // Sets one value after checking it against its row (used by sweeps and the GUI).
  void set(const std::vector<ParamSpec>& specs, const std::string& name, const nlohmann::json& value,
           const std::string& where);

  const std::map<std::string, ParamValue>& values() const { return values_; }
  nlohmann::json to_json() const;

 private:
  const ParamValue& get(const std::string& name) const;
  std::map<std::string, ParamValue> values_;
};

nlohmann::json to_json(const ParamValue& v);
nlohmann::json to_json(const ParamSpec& spec);

// An integer taken from JSON, checked against [min, max] before it is converted: JSON integers of either
// sign (non-negative literals arrive unsigned, so 2^64 − 1 must not wrap to −1) and floats without a
// fractional part (64.0; 1e30 is out of range, not undefined behaviour). Throws InputError naming
// `field`: "expected integer, got <kind>" or "<value> is outside [min, max]".
int64_t json_integer(const nlohmann::json& v, int64_t min, int64_t max, const std::string& field);

}  // namespace attnlab
