// attnlab report: one self-contained index.html — no network, no JavaScript — rendered from Results
// through the same views the CLI and the GUI use.
#pragma once

#include "core/results.h"

#include "app/views/table.h"

#include <string>
#include <vector>

namespace attnlab::report {

std::string escape_html(const std::string& s);
// A view id as a file name: characters other than letters, digits, '.', '-', '_' become '_'.
std::string view_file_stem(const std::string& id);
// A lesson's report (its config has a "lesson") passes the run of each step: the tour comes first
// (report/tour.h), then the lesson config's own run as in any report.
std::string render_html(const Results& r, const std::vector<const Results*>& tour = {});
// A table as a bare <table> element (no heading).
std::string table_element(const views::Table& t);

}  // namespace attnlab::report
