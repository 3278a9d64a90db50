// attnlab report: saved results, both ways — a results.json with its sidecar arrays (.npy files, schema
// "attnlab.results/2", core/results_sidecars.h), written for `attnlab run --save/--json` and the report,
// and read back for everything that shows results computed elsewhere: `attnlab report --results`,
// `attnlab-gui --results`, Python's attnlab.load_results.
#pragma once

#include "app/report/output_path.h"
#include "core/results.h"

#include <filesystem>
#include <string>

namespace attnlab::report {

// The results.json a path names: the path itself, or results.json inside it when it is a folder.
std::filesystem::path results_file_of(const std::filesystem::path& path_or_folder);

// Reads and checks it (schema /2 or /1). Throws InputError naming `where` (the option, e.g. "--results")
// and the file: not found, not JSON, another schema, or a field missing or of the wrong type. Sidecar
// arrays are not read here: the first access to one reads it, and a missing or broken sidecar throws an
// InputError naming that file then.
Results read_results(const std::filesystem::path& path_or_folder, const std::string& where);

// Writes results.json into `folder` (a staging folder the caller commits), its large arrays into
// folder/arrays/ (created only when there are any).
void write_results_into(const Results& r, const std::filesystem::path& folder);

// `attnlab run --json FILE` may write FILE (new, or results JSON attnlab wrote) and FILE.arrays beside it
// (new, empty or a marked attnlab folder): output_path.h's rules, checked before the run. Throws
// InputError naming rule.where.
void check_results_file(const std::filesystem::path& file, const OutputRule& rule);

// `attnlab run --json FILE`: FILE, and its large arrays in the folder FILE.arrays beside it (a marked
// attnlab folder, replaced whole; made only when there are large arrays). Both are checked again first;
// the arrays are committed first and FILE last, each atomically, so a results.json never names sidecars
// that are not there.
void write_results_file(const Results& r, const std::filesystem::path& file, const OutputRule& rule);

}  // namespace attnlab::report
