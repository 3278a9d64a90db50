// attnlab sim: the cost model's data files (GPU specs, model files, measurements) declared as tables.
//
// Every field of every data file is one FieldSpec row: name, type, range, whether it is required, and a
// one-line help. check_fields() holds a JSON object to its table the way the config parser holds a
// variant's parameters to its ParamSpec rows (core/params.h): numbers go through the very same checker
// (integers must be integral, every number finite and inside its inclusive range), unknown fields are
// refused, required ones must be there, and text must be one printable line of bounded length. A file
// that passes cannot carry 0.5 SMs, 1e300 GB/s or a ten-megabyte name into the model or a message.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace attnlab::sim {

enum class FieldType {
  integer,         // a whole number in [min, max]
  real,            // a finite number in [min, max]
  text,            // one printable line of min..max bytes
  choice,          // one of `choices`
  id,              // a file id: letters, digits, '.', '_', '-' (not first), min..max bytes (is_file_id)
  object,          // an object checked against `fields()` (none: checked by the reader, `help` says how)
  array,           // min..max elements, each checked against `fields()`'s one row
  text_or_object,  // a text as above, or an object checked against `fields()`
};
const char* to_string(FieldType t);

struct FieldSpec;
using FieldTable = std::vector<FieldSpec>;

struct FieldSpec {
  std::string name;
  FieldType type = FieldType::real;
  double min = 0, max = 0;  // integer, real: the value; text, id: the length in bytes; array: the count
  bool required = true;
  bool sourced = false;  // written {"value": v, "source": "where v comes from"} (GPU specs' numbers)
  std::vector<std::string> choices;
  const FieldTable& (*fields)() = nullptr;  // object, text_or_object: its table; array: one row per element
  std::string help;

  static FieldSpec integer(std::string name, double min, double max, std::string help);
  static FieldSpec real(std::string name, double min, double max, std::string help);
  static FieldSpec text(std::string name, double max_bytes, std::string help);
  static FieldSpec choice(std::string name, std::vector<std::string> choices, std::string help);
  static FieldSpec id(std::string name, std::string help);
  static FieldSpec object(std::string name, const FieldTable& (*fields)(), std::string help);
  static FieldSpec array(std::string name, double min_count, double max_count, const FieldTable& (*element)(),
                         std::string help);
  FieldSpec optional() const;
  FieldSpec with_source() const;
  FieldSpec or_empty() const;  // text, id: "" is accepted too (e.g. a device nobody could name)
  FieldSpec or_object(const FieldTable& (*object_fields)()) const;  // text → text_or_object
};

// Checks `j` against `table`; errors name "<where>.<field>" (or "<where>[i]" inside arrays) and the rule.
void check_fields(const nlohmann::json& j, const FieldTable& table, const std::string& where);

// A number field's value, unwrapping {"value", "source"}; only after check_fields.
double number(const nlohmann::json& j, const std::string& name);

// The source of a {"value", "source"} field ("" when the field is absent or not sourced).
std::string source_of(const nlohmann::json& j, const std::string& name);

// An id names a data file without being a path: 1–64 bytes of letters, digits, '.', '_', '-', not starting
// with '.' or '-', and no ".." ("h100-sxm5", "llama-3-8b").
bool is_file_id(std::string_view s);
inline constexpr std::size_t kMaxIdBytes = 64;

// How a --gpu, --model or gpu_model value names its data file — the one rule, for the readers below and the
// command line's parse-time checks (app/cli/value_checks.h): a value ending in ".json" is a path (of the user's
// own file, anywhere); any other value is an id, looked up in the tool's own folder, and must be one
// (is_file_id: no '/', no "..", so an id never leaves that folder); anything else is neither.
enum class DataFileName { id, path, neither };
DataFileName data_file_name(std::string_view arg);
// The rule a value that is neither broke, as "<where>: " + this: "'<value>' is neither a <what> id (…) nor a
// path to a .json file".
std::string neither_id_nor_path(std::string_view arg, const std::string& what);

// Where the data file named by `arg` lies (data_file_name's rule): `arg` itself when it is a path, else
// `dir`/<arg>.json. A value that is neither is refused as "<where>: …", naming `what` ("GPU", "model"); an id
// with no file is refused listing the ids in `dir`.
std::string data_file_path(const std::string& arg, const std::string& dir, const std::string& what,
                           const std::string& where);

// The ids of the .json files in `dir`, sorted ("" entries and odd names left out).
std::vector<std::string> file_ids(const std::string& dir);

// A path as the start of a message ("<path>.<field>: …"): escaped, and cut only past 200 characters.
std::string where_of(const std::string& path);

// Reads a data file through core/json_input.h (size, NUL, nesting and number-range guards) and refuses
// anything but an object.
nlohmann::json read_data_file(const std::string& path);

}  // namespace attnlab::sim
