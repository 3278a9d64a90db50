#include "app/report/output_kinds.h"

#include "app/report/png_text.h"
#include "core/error.h"
#include "core/json_input.h"
#include "sim/gpu_spec.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace attnlab::report {

namespace fs = std::filesystem;

namespace {

// Finds the top-level "schema" string of a JSON object, reading events until it is there: a file that is
// not JSON, not an object, or cut short before it stops the reading at once. Nesting costs no stack
// (nlohmann's SAX parser keeps its own).
class TopLevelSchema final : public nlohmann::json_sax<nlohmann::json> {
 public:
  std::optional<std::string> schema;

  bool null() override { return scalar(); }
  bool boolean(bool) override { return scalar(); }
  bool number_integer(number_integer_t) override { return scalar(); }
  bool number_unsigned(number_unsigned_t) override { return scalar(); }
  bool number_float(number_float_t, const string_t&) override { return scalar(); }
  bool binary(binary_t&) override { return scalar(); }
  bool string(string_t& s) override {
    if (depth_ == 1 && schema_key_) {
      schema = s;
      return false;  // found: stop reading
    }
    return scalar();
  }
  bool start_object(std::size_t) override { return open(); }
  bool key(string_t& k) override {
    schema_key_ = depth_ == 1 && k == "schema";
    return true;
  }
  bool end_object() override { return --depth_ > 0; }
  bool start_array(std::size_t) override { return depth_ > 0 && open(); }  // a top-level array is no object
  bool end_array() override { return --depth_ > 0; }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }

 private:
  bool scalar() {
    schema_key_ = false;
    return depth_ > 0;  // a top-level scalar is no object
  }
  bool open() {
    schema_key_ = false;
    ++depth_;
    return true;
  }
  int depth_ = 0;
  bool schema_key_ = false;  // the last top-level key was "schema": its value is next
};

bool has_schema(std::string_view head, std::string_view prefix) {
  TopLevelSchema sax;
  try {
    nlohmann::json::sax_parse(head.begin(), head.end(), &sax);
  } catch (const nlohmann::json::exception&) {
    return false;
  }
  return sax.schema && sax.schema->rfind(prefix, 0) == 0;
}

bool results_json(std::string_view head, const fs::path&) { return has_schema(head, "attnlab.results/"); }
bool measurements_json(std::string_view head, const fs::path&) { return has_schema(head, "attnlab.measurements/"); }

// The header sweep_table writes (app/views/sweep.cpp): the one or two varied paths, then the results
// table's columns, which begin variant,backend. The columns after those change as the results table
// grows, so they are not compared.
bool sweep_csv(std::string_view head, const fs::path&) {
  const size_t end = head.find('\n');
  if (end == std::string_view::npos) return false;  // no whole first line in what was read
  std::vector<std::string_view> fields;
  for (std::string_view line = head.substr(0, end);;) {
    const size_t comma = line.find(',');
    fields.push_back(line.substr(0, comma));
    if (comma == std::string_view::npos) break;
    line.remove_prefix(comma + 1);
  }
  for (const std::string_view f : fields)
    if (f.empty() || f.find_first_of("\"\r\t ") != std::string_view::npos) return false;  // keys only
  for (size_t axes = 1; axes <= 2; ++axes)
    if (fields.size() > axes + 2 && fields[axes] == "variant" && fields[axes + 1] == "backend") return true;
  return false;
}

bool gpu_spec(std::string_view, const fs::path& file) {
  try {
    sim::load_gpu_spec_file(file.string());  // reads at most kMaxJsonFileBytes itself
    return true;
  } catch (const InputError&) {
    return false;
  } catch (const nlohmann::json::exception&) {
    return false;
  }
}

bool screenshot_png(std::string_view head, const fs::path&) { return has_attnlab_software(head); }

constexpr std::uint64_t kAnySize = std::numeric_limits<std::uint64_t>::max();

struct KindRow {
  OutputKind kind;
  std::string_view name;    // "exists and is not <name>"
  std::uint64_t max_bytes;  // a larger file is not of this kind: attnlab would not read it back
  std::uint64_t head_bytes; // how much of the file's start the signature is looked for in
  bool (*recognizes)(std::string_view head, const fs::path& file);
};

// attnlab reads results, measurements and specs only up to kMaxJsonFileBytes (core/json_input.h); the
// schema is looked for in all of that, since nlohmann writes keys sorted and "schema" follows "config",
// "data", "environment" and "problem" (or "measurements"). A CSV header and the PNG chunks before the
// image data lie in the first 64 KiB.
constexpr KindRow kOutputKinds[] = {
    {OutputKind::results_json, "attnlab results JSON", kMaxJsonFileBytes, kMaxJsonFileBytes, results_json},
    {OutputKind::measurements_json, "attnlab measurements JSON", kMaxJsonFileBytes, kMaxJsonFileBytes, measurements_json},
    {OutputKind::sweep_csv, "an attnlab sweep CSV", kAnySize, 64 << 10, sweep_csv},
    {OutputKind::gpu_spec, "an attnlab GPU spec", kMaxJsonFileBytes, 0, gpu_spec},
    {OutputKind::screenshot_png, "a PNG attnlab wrote", kAnySize, 64 << 10, screenshot_png},
};

const KindRow& row_of(OutputKind kind) {
  for (const KindRow& row : kOutputKinds)
    if (row.kind == kind) return row;
  throw std::logic_error("output_kinds: a kind without a row");
}

// At most `limit` bytes from the start of `file` (fewer when it is shorter); nullopt when it cannot be read.
std::optional<std::string> read_head(const fs::path& file, std::uint64_t size, std::uint64_t limit) {
  std::string head(size_t(std::min(size, limit)), '\0');
  if (head.empty()) return head;
  std::ifstream in(file, std::ios::binary);
  if (!in) return std::nullopt;
  in.read(head.data(), std::streamsize(head.size()));
  head.resize(size_t(in.gcount()));  // the file may have shrunk since its size was read
  return head;
}

}  // namespace

std::string_view kind_name(OutputKind kind) { return row_of(kind).name; }

bool is_own_output(const fs::path& file, OutputKind kind) {
  const KindRow& row = row_of(kind);
  std::error_code ec;
  const std::uint64_t size = fs::file_size(file, ec);
  if (ec || size > row.max_bytes) return false;
  const std::optional<std::string> head = read_head(file, size, row.head_bytes);
  return head && row.recognizes(*head, file);
}

}  // namespace attnlab::report
