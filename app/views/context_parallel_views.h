// attnlab views: one problem across the GPUs of a host (problem.gpus; sim/context_parallel_model.h) — each GPU's
// ring step as the model predicts it (its attention, the wait for the slowest GPU or for its shard, what it sends),
// and the bytes each variant puts on the links beside the bytes it moves in HBM: where the links bind, and where a
// compressed K/V format pays on the wire as it pays in HBM. One of chart_views' parts (chart.h).
#pragma once

#include "app/views/chart.h"
#include "core/results.h"

#include <vector>

namespace attnlab::views {

// "cp_timeline" and "cp_bytes", or nothing when no variant's model ran across GPUs.
std::vector<View> context_parallel_views(const Results& r);

}  // namespace attnlab::views
