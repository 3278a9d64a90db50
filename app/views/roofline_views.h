// attnlab views: the roofline — every variant at its arithmetic intensity, the cost model's predicted rate
// and the kernel's measured one, each point labelled with its variant and each predicted point joined to
// its measured one; roofs that coincide over the drawn range are one line naming them all. One of
// chart_views' parts (chart.h).
#pragma once

#include "app/views/chart.h"

namespace attnlab::views {

// The axes span the points by this factor on each side (log axes: about a sixth of a decade), so no point
// sits on the frame and a label beside it has room.
inline constexpr double kRooflineMargin = 1.5;

// The view "roofline", or nothing when no model ran (no DRAM bytes, no intensity) or its GPU is unknown.
std::vector<View> roofline_views(const Results& r);

}  // namespace attnlab::views
