// attnlab report: a table view as RFC 4180 CSV (the numbers, not the formatted text, where a cell has one;
// an empty field where a number is missing, the cells views show as "—": views::kNoNumber).
#pragma once

#include "app/views/table.h"

#include <string>

namespace attnlab::report {

std::string to_csv(const views::Table& t);

}  // namespace attnlab::report
