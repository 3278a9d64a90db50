// attnlab views: speed over the FP16 baseline as bars, measured beside predicted (TurboAttention Fig. 6's
// form). One of chart_views' parts (chart.h).
#pragma once

#include "app/views/chart.h"

namespace attnlab::views {

// Present when the run holds an FP16 baseline — the first variant whose storage declaration (core/storage.h)
// keeps Q, K, V, P and O and its cache in FP16 — and another variant with a time from the same backend: one
// bar per (variant, backend) with a time, baseline time / its time, kernel bars marked as measured. When the
// kernels did not run, the note says so and why (the run's skipped reason).
std::vector<View> speedup_views(const Results& r);

}  // namespace attnlab::views
