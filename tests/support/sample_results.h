// attnlab tests: a small hand-made Results with one variant carrying every probe kind the chart views
// read (scales, channels, priorities, SAS, trace, HBM bytes) plus model and kernel timings: B = 1, two
// query heads, one KV head, 6 tokens, d = 4.
#pragma once

#include "core/results.h"

namespace attnlab::test {

Results small_results();

}  // namespace attnlab::test
