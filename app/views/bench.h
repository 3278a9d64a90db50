// attnlab views: the kernel timings of `attnlab bench` — one row per (grid point, variant with a kernel):
// median, p10, p90, TFLOP/s, achieved HBM bandwidth, and the cost model's prediction beside them.
#pragma once

#include "app/views/table.h"
#include "core/results.h"

#include <vector>

namespace attnlab::views {

Table bench_table(const std::vector<Results>& runs);

}  // namespace attnlab::views
