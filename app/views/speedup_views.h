// attnlab views: every variant's time as a speedup over a baseline variant's — the config's
// "report": {"speedup_over": name} — as grouped bars, the cost model's prediction beside the kernels'
// measurement (TurboAttention Fig. 6 draws decode latency this way, against FlashAttention FP16). Where a
// backend did not run, its bars are absent and the view's note says so, with the reason the run recorded.
#pragma once

#include "app/views/chart.h"
#include "core/results.h"

#include <vector>

namespace attnlab::views {

// The view "speedup", or nothing when the config names no baseline or no ratio can be formed.
std::vector<View> speedup_views(const Results& r);

}  // namespace attnlab::views
