#include "app/cli/arguments.h"

#include "core/error.h"
#include "sim/data_fields.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstring>

namespace attnlab::cli {

std::string check_input_file(const std::string& value) {
  if (value.empty()) return "is empty: give a file path";
  struct stat st {};
  if (stat(value.c_str(), &st) != 0) return fmt::format("'{}': {}", echo_path(value), std::strerror(errno));
  if (S_ISDIR(st.st_mode)) return fmt::format("'{}': is a folder, not a file", echo_path(value));
  if (!S_ISREG(st.st_mode))
    return fmt::format("'{}': is not a regular file (a FIFO, socket or device)", echo_path(value));
  return "";
}

std::string check_name(const std::string& value, const std::string& what, const std::string& listed) {
  const auto allowed = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_';
  };
  bool ok = !value.empty() && value.size() <= 64 && value[0] != '.';
  for (const char c : value) ok = ok && allowed(c);
  if (ok) return "";
  return fmt::format("'{}' is not {} (1 to 64 letters, digits, '.', '-', '_'); {}", echo(value), what, listed);
}

std::string check_whole_number(const std::string& value) {
  int64_t n = 0;
  const char* begin = value.data() + (value.size() > 1 && value[0] == '+' ? 1 : 0);
  const auto [end, ec] = std::from_chars(begin, value.data() + value.size(), n);
  if (ec == std::errc::result_out_of_range) return fmt::format("'{}' is beyond the range of a 64-bit integer", echo(value));
  if (ec != std::errc() || end != value.data() + value.size() || begin == end)
    return fmt::format("'{}' is not a whole number", echo(value));
  return "";
}

CLI::Validator input_file() {
  return CLI::Validator([](std::string& v) { return check_input_file(v); }, "FILE");
}

CLI::Validator not_empty(const std::string& expected) {
  return CLI::Validator([expected](std::string& v) { return v.empty() ? "is empty: give " + expected : std::string(); }, "");
}

// An id or a path, by sim/data_fields.h's rule (data_file_name): a path must end in .json and be a readable
// file; an id is looked up when the file is read (an unknown one lists the known ids there). A value with a '/'
// that does not end in .json ("../../etc/passwd") is neither, and is never read.
static std::string check_data_file_name(const std::string& value, const std::string& what, const std::string& id_words,
                                        const std::string& listed) {
  switch (sim::data_file_name(value)) {
    case sim::DataFileName::path: return check_input_file(value);
    case sim::DataFileName::id: return "";
    case sim::DataFileName::neither: break;
  }
  if (value.find('/') == std::string::npos)
    if (std::string why = check_name(value, id_words, listed); !why.empty()) return why;
  return sim::neither_id_nor_path(value, what) + "; " + listed;
}

std::string check_gpu_id(const std::string& value) {
  return check_data_file_name(value, "GPU", "a GPU id", "attnlab gpus lists them, or give a spec .json");
}

std::string check_model_id(const std::string& value) {
  return check_data_file_name(value, "model", "a model name", "sim/models/ lists them, or give a model .json");
}

CLI::Validator gpu_id() {
  return CLI::Validator([](std::string& v) { return check_gpu_id(v); }, "");
}

CLI::Validator model_id() {
  return CLI::Validator([](std::string& v) { return check_model_id(v); }, "");
}

CLI::Validator whole_number() {
  return CLI::Validator([](std::string& v) { return check_whole_number(v); }, "");
}

}  // namespace attnlab::cli
