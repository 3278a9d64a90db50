// attnlab core: a sweep — one experiment run over a grid of one or two varied values (`attnlab sweep`,
// the GUI's sweep panel, the notebooks). The grid is expanded and every point checked before anything
// runs, so a bad value fails at once and nothing is half-computed.
#pragma once

#include "core/config.h"

#include <string>
#include <vector>

namespace attnlab {

// "PATH=v1,v2,…" (the --vary syntax) → an axis. Each value is read as JSON where it parses as a JSON
// scalar (numbers, true, false), else kept as a string ("--vary p_scale=tile,row"). Errors name --vary.
SweepAxis parse_axis(const std::string& spec);

struct SweepPoint {
  std::vector<std::string> values;  // (axes) each axis's value as text, for tables and CSV
  Experiment experiment;            // the base with those values set and checked
};

// Every combination of the axes' values, the first axis outermost; ≤ 2 axes, ≤ 10 000 points. Each
// value goes through set_value and check_experiment; errors name "<where>[axis] PATH=VALUE".
std::vector<SweepPoint> expand_sweep(const Experiment& base, const std::vector<SweepAxis>& axes,
                                     const std::string& where = "--vary");

}  // namespace attnlab
