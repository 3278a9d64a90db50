// attnlab views: charts built from the backends' probes (block scales, channel outliers, head priority,
// SAS, online-softmax trace). chart_views (chart.h) is the entry point; this is one of its parts.
#pragma once

#include "app/views/chart.h"

namespace attnlab::views {

std::vector<View> probe_views(const Results& r, int64_t max_heatmap_cols, int64_t channel_head);

}  // namespace attnlab::views
