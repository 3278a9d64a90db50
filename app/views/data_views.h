// attnlab views: what the inputs do to attention (core/data/attention_stats.h) — per head the sink share, the
// mass on the last 64 keys and the entropy, with the heads a paper would call sink heads marked, and a table
// of their range across heads beside what the papers measured on real models. chart_views (chart.h) is the
// entry point; this is one of its parts.
#pragma once

#include "app/views/chart.h"

namespace attnlab::views {

// The "Data" panel's views; none when the results hold no attention statistics (a model-only run, an old file).
std::vector<View> data_views(const Results& r);

// One line on the data the results were computed on: the generator and its parameters and seed, or the file
// ("synthetic data: llm_like (seed 1; sink_heads 0.5, …)" / "data from q.npy …"): what a reader of any result
// must know first (the report's header, the GUI's status line).
// with_parameters false: the generator and seed alone (the GUI's one status line; its Experiment panel shows the rest).
// A model-only run, which made no data, adds its note ("… — none generated or read: only the model ran, …").
std::string data_line(const Results& r, bool with_parameters = true);

}  // namespace attnlab::views
