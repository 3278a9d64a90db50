// attnlab report: the report folder — index.html, results.json (its large arrays in arrays/*.npy),
// results.csv, views/*.csv, the marker file .attnlab-report and, asked for, report.pdf (index.html printed
// by headless Chromium) — written atomically: all of it or nothing, and only where output_path.h allows.
#pragma once

#include "app/report/output_path.h"
#include "core/results.h"

#include <filesystem>
#include <string>
#include <vector>

namespace attnlab::report {

struct ReportRequest {
  bool pdf = false;                           // also print index.html to report.pdf
  std::string where = "report folder";        // what messages call the folder (the CLI: "--out")
  std::vector<std::filesystem::path> inputs;  // the run's input files: the folder may not hold one
  std::vector<const Results*> tour = {};      // a lesson's report: each step's run, in order (report/tour.h)
};

// Returns the absolute path of the written index.html. Throws InputError, with nothing written, when
// the folder may not be written (check_output_folder) or `pdf` is asked for and Chromium is missing or
// fails.
std::filesystem::path write_report(const Results& r, const std::filesystem::path& dir, const ReportRequest& how = {});

// A results folder — results.json, its arrays/ and the folder marker, no views — that `attnlab report
// --results` and the GUI's --results open elsewhere (`attnlab run --save`). Same folder rule and atomic
// replacement as write_report; returns the absolute path of the written results.json.
std::filesystem::path write_results_folder(const Results& r, const std::filesystem::path& dir, const OutputRule& rule);

// Headless Chromium, as --pdf needs it; throws InputError when it is not on the PATH. Commands ask for
// it before they run anything.
std::filesystem::path pdf_printer();

// An absolute path as a file:// URL: every byte other than letters, digits, "-._~/" percent-encoded.
std::string file_url(const std::filesystem::path& absolute);

}  // namespace attnlab::report
