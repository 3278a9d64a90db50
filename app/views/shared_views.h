// attnlab views: views that several variants share drawn once. Variants that differ only where a view does
// not look (int_flash on wgmma and on mma.sync, full and half INT8: the same GPU-quantized Q and K scales)
// would otherwise fill a panel with copies; the one view left names every variant it stands for.
#pragma once

#include "app/views/chart.h"

#include <string>
#include <vector>

namespace attnlab::views {

// The view's data as one string: its CSV table (view_as_table) without the title, numbers to 9
// significant digits. Two views have identical data when these are equal.
std::string data_key(const View& v);

// Per-variant views (View::variants set) of one panel with identical data become one, in the place of the
// first: its variants are all of theirs, its title names them ("int_flash, int_half: Q scales (kernel)";
// views whose titles differ past the variant are listed one after another, "; " between), its note says
// that the data are shared. Views of the whole run are left as they are.
std::vector<View> merge_shared(std::vector<View> views);

}  // namespace attnlab::views
