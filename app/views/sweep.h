// attnlab views: the table of a sweep — one row per (grid point, variant, backend), the varied values
// first, then the columns of the results table. Shared by `attnlab sweep`, its CSV and the report.
#pragma once

#include "app/views/table.h"
#include "core/results.h"

#include <string>
#include <vector>

namespace attnlab::views {

// paths (axes); values[i] (axes) and results[i] belong to grid point i.
Table sweep_table(const std::vector<std::string>& paths, const std::vector<std::vector<std::string>>& values,
                  const std::vector<Results>& results);

}  // namespace attnlab::views
