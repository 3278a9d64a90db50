// attnlab views: where the cost model's time goes, per kernel — each unit's time alone (HBM, each kind of
// tensor core, the FP32, SFU, integer and conversion pipes, instruction issue at the rate the latency term
// allows), the model's total and the kernel's measured time beside them, and which unit binds: why an INT8
// kernel is not twice as fast as FP16 (it is bound by issue, not by its tensor cores). One of chart_views'
// parts (chart.h).
#pragma once

#include "app/views/chart.h"
#include "core/results.h"

#include <vector>

namespace attnlab::views {

// The view "model_breakdown", or nothing when no variant has a model result with its unit times.
std::vector<View> breakdown_views(const Results& r);

}  // namespace attnlab::views
