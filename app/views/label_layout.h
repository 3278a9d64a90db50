// attnlab views: where the point labels of a chart go (the roofline's variant names, beside their model
// and measured points; the values over grouped bars) so that no two overlap and none leaves the plot — shared by the report's SVG and
// the GUI, which measure text differently and so pass each label's size in.
#pragma once

#include <vector>

namespace attnlab::views {

struct LabelRequest {
  double x = 0, y = 0;  // the point it names (pixels; y grows downwards)
  double w = 0, h = 0;  // the text's size
};

struct LabelPlace {
  bool shown = false;
  double x = 0;         // the text's left edge
  double y = 0;         // the text's vertical centre
};

struct PlotBox {
  double x0 = 0, y0 = 0, x1 = 0, y1 = 0;  // left, top, right, bottom
};

// Greedy, in request order: each label beside its point (`gap` pixels away), on the side facing the plot's
// middle first, then the other side, then one and two text heights above and below on either side; the
// first place that stays inside `box` and overlaps no label placed before it wins. A label with no such
// place is not shown (its point keeps its tooltip).
std::vector<LabelPlace> place_labels(const std::vector<LabelRequest>& labels, const PlotBox& box, double gap);

// The values written over the bars of a grouped bar chart (each request: x the bar's centre, y its top): centred
// over its bar `gap` pixels up, or, where that overlaps a value placed before it, just above the lowest such value
// that leaves it free — at most `max_raise` text heights above its own place and inside `box`; a value with no
// free place is not shown (its bar keeps the tooltip). Neighbouring short bars of nearly equal height are where
// plain centring overlapped.
// The top of a bar chart's value axis that keeps its tallest bar (value `top`) below `reserved_px` pixels at the top
// of a plot `plot_px` high — the legend and the values written over bars stand there, over no bar. The reserve is
// capped at 60% of the plot (a legend taller than that overlaps rather than crushing the bars flat).
double bar_axis_top(double top, double plot_px, double reserved_px);

std::vector<LabelPlace> place_bar_values(const std::vector<LabelRequest>& values, const PlotBox& box, double gap,
                                         int max_raise = 2);

}  // namespace attnlab::views
