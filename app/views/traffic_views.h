// attnlab views: HBM traffic per tensor, as the reference accounts it and as the cost model predicts it
// after L2 reuse. One of chart_views' parts (chart.h); the roofline is roofline_views.h.
#pragma once

#include "app/views/chart.h"

namespace attnlab::views {

std::vector<View> traffic_views(const Results& r);

}  // namespace attnlab::views
