// attnlab report: the report folder — index.html, results.json, results.csv — written atomically.
#pragma once

#include "core/results.h"

#include <filesystem>

namespace attnlab::report {

// Returns the path of the written index.html.
std::filesystem::path write_report(const Results& r, const std::filesystem::path& dir);

}  // namespace attnlab::report
