// attnlab report: a chart view (app/views/chart.h) as one inline <svg> element — no script, no external
// resource. Table views are not charts: render_svg returns "" for them (the HTML prints them as tables).
#pragma once

#include "app/views/chart.h"

#include <string>

namespace attnlab::report {

std::string render_svg(const views::View& v, int width = 760, int height = 340);

}  // namespace attnlab::report
