// attnlab report: the report folder — index.html, results.json, results.csv, views/*.csv and, asked for,
// report.pdf (index.html printed by headless Chromium) — written atomically: all of it or nothing.
#pragma once

#include "core/results.h"

#include <filesystem>

namespace attnlab::report {

// Returns the path of the written index.html.
// Throws InputError (nothing written) when `pdf` is asked for and Chromium is missing or fails.
std::filesystem::path write_report(const Results& r, const std::filesystem::path& dir, bool pdf = false);

}  // namespace attnlab::report
