#include "app/report/results_file.h"

#include "core/error.h"
#include "core/json_input.h"

#include <nlohmann/json.hpp>

#include <system_error>

namespace attnlab::report {

namespace fs = std::filesystem;

fs::path results_file_of(const fs::path& path_or_folder) {
  std::error_code ec;
  return fs::is_directory(path_or_folder, ec) ? path_or_folder / "results.json" : path_or_folder;
}

Results read_results(const fs::path& path_or_folder, const std::string& where) {
  const fs::path file = results_file_of(path_or_folder);
  const std::string named = where + " " + echo_path(file.string());
  try {
    return results_from_json(read_json_file(file.string()));
  } catch (const InputError& err) {
    const std::string what = err.what();
    // read_json_file names the file itself; a schema error names only the field.
    throw InputError(what.find(file.string()) != std::string::npos ? what : named + ": " + what);
  } catch (const nlohmann::json::exception& err) {  // a field missing or of the wrong type
    throw InputError(named + ": not attnlab results: " + one_line(err.what()));
  }
}

}  // namespace attnlab::report
