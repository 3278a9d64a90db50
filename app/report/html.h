// attnlab report: one self-contained index.html — no network, no JavaScript — rendered from Results
// through the same views the CLI and the GUI use.
#pragma once

#include "core/results.h"

#include "app/views/table.h"

#include <string>
#include <vector>

namespace attnlab::report {

// The page's heatmaps are binned to at most this many columns (the GUI's to 128): with rows one per
// (batch, head) pair, no chart on the page grows with the sequence — no per-token array reaches
// index.html, only its binned maxima (B4 H16: ≤ 4096 cells, about 0.5 MB of SVG per heatmap).
inline constexpr int64_t kPageHeatmapCols = 64;

std::string escape_html(const std::string& s);
// A view id as a file name: characters other than letters, digits, '.', '-', '_' become '_'.
std::string view_file_stem(const std::string& id);
// A lesson's report (its config has a "lesson") passes the run of each step: the tour comes first
// (report/tour.h), then the lesson config's own run as in any report.
std::string render_html(const Results& r, const std::vector<const Results*>& tour = {});
// A table as a bare <table> element (no heading).
std::string table_element(const views::Table& t);

}  // namespace attnlab::report
