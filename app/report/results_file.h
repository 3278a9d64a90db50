// attnlab report: saved results read back — a results.json, or a folder holding one (a report folder,
// `attnlab run --save`) — for everything that shows results computed elsewhere: `attnlab report
// --results`, `attnlab-gui --results`.
#pragma once

#include "core/results.h"

#include <filesystem>
#include <string>

namespace attnlab::report {

// The results.json a path names: the path itself, or results.json inside it when it is a folder.
std::filesystem::path results_file_of(const std::filesystem::path& path_or_folder);

// Reads and checks it. Throws InputError naming `where` (the option, e.g. "--results") and the file: not
// found, not JSON, another schema, or a field missing or of the wrong type.
Results read_results(const std::filesystem::path& path_or_folder, const std::string& where);

}  // namespace attnlab::report
