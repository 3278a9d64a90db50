// attnlab report: one self-contained index.html — no network, no JavaScript — rendered from Results
// through the same views the CLI and the GUI use.
#pragma once

#include "core/results.h"

#include <string>

namespace attnlab::report {

std::string escape_html(const std::string& s);
std::string render_html(const Results& r);

}  // namespace attnlab::report
