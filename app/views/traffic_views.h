// attnlab views: HBM traffic per tensor and the roofline (model points, measured kernel points). One of
// chart_views' parts (chart.h).
#pragma once

#include "app/views/chart.h"

namespace attnlab::views {

std::vector<View> traffic_views(const Results& r);

}  // namespace attnlab::views
