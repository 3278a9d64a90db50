#include "app/report/results_file.h"

#include "app/report/atomic_dir.h"
#include "core/error.h"
#include "core/json_input.h"
#include "core/results_sidecars.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <system_error>

namespace attnlab::report {

namespace fs = std::filesystem;

namespace {

void write_bytes(const fs::path& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  f << bytes;
  f.close();
  if (!f) fail_input(echo_path(path.string()), "write failed (disk full?)");
}

// run --json FILE's sidecar folder: FILE.arrays beside it.
fs::path arrays_folder_of(const fs::path& file) { return file.parent_path() / (file.filename().string() + ".arrays"); }

// Each sidecar's .npy into `folder` (one at a time: a run's arrays are never all in memory twice).
void write_sidecars(const SidecarPlan& plan, const fs::path& folder) {
  for (const Sidecar& s : plan.sidecars()) write_bytes(folder / s.name, sidecar_bytes(s));
}

}  // namespace

fs::path results_file_of(const fs::path& path_or_folder) {
  std::error_code ec;
  return fs::is_directory(path_or_folder, ec) ? path_or_folder / "results.json" : path_or_folder;
}

Results read_results(const fs::path& path_or_folder, const std::string& where) {
  const fs::path file = results_file_of(path_or_folder);
  const std::string named = where + " " + echo_path(file.string());
  try {
    // Sidecar arrays stay on disk until a view, the report or Python asks for them (results_sidecars.h).
    return results_from_json(read_json_file(file.string()), ResultsSource{file.string(), file.parent_path()});
  } catch (const InputError& err) {
    const std::string what = err.what();
    // read_json_file and the schema check name the file themselves.
    throw InputError(what.find(echo_path(file.string())) != std::string::npos ? what : named + ": " + what);
  } catch (const nlohmann::json::exception& err) {  // a field missing or of the wrong type
    throw InputError(named + ": not attnlab results: " + one_line(err.what()));
  }
}

void write_results_into(const Results& r, const fs::path& folder) {
  SidecarPlan plan("arrays");
  const std::string text = to_json(r, plan).dump(1) + "\n";
  if (!plan.sidecars().empty()) {
    fs::create_directory(folder / plan.dir());
    write_sidecars(plan, folder / plan.dir());
  }
  write_bytes(folder / "results.json", text);
}

void check_results_file(const fs::path& file, const OutputRule& rule) {
  check_output_file(file, rule, OutputKind::results_json);
  check_output_folder(arrays_folder_of(file), rule);  // reached only when FILE names a file
}

void write_results_file(const Results& r, const fs::path& file, const OutputRule& rule) {
  check_results_file(file, rule);  // FILE too, before its arrays are committed
  SidecarPlan plan(arrays_folder_of(file).filename().string());
  const std::string text = to_json(r, plan).dump(1) + "\n";
  if (!plan.sidecars().empty()) {
    StagedDir arrays(arrays_folder_of(file), rule);
    write_sidecars(plan, arrays.path());
    arrays.commit();
  }
  write_output_file(file, text, rule, OutputKind::results_json);
}

}  // namespace attnlab::report
