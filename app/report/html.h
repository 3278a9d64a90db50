// attnlab report: one self-contained index.html — no network, no JavaScript — rendered from Results
// through the same views the CLI and the GUI use.
#pragma once

#include "core/results.h"

#include <string>

namespace attnlab::report {

std::string escape_html(const std::string& s);
// A view id as a file name: characters other than letters, digits, '.', '-', '_' become '_'.
std::string view_file_stem(const std::string& id);
std::string render_html(const Results& r);

}  // namespace attnlab::report
