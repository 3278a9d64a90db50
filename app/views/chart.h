// attnlab views: chart-shaped views of Results — heatmaps, bar charts, line charts — as plain data with
// titles, axis labels and units. The report draws them as SVG and the GUI on its draw list; neither
// computes anything itself, and a view never computes anything a backend has not recorded (it selects,
// reshapes and, for wide heatmaps, bins).
#pragma once

#include "app/views/table.h"

#include <cmath>
#include <string>
#include <variant>
#include <vector>

namespace attnlab::views {

struct Axis {
  std::string label;
  std::string unit;  // "" when dimensionless
  bool log = false;  // logarithmic scale (values must be > 0)
  // The range the view fixes, when it knows better than "everything drawn" (the roofline fits its points,
  // not its roofs); NaN: the renderer fits the data.
  double lo = NAN, hi = NAN;
  bool fixed() const { return std::isfinite(lo) && std::isfinite(hi) && lo < hi; }
};

// rows × cols values, row-major; rows are usually (batch, head) pairs, columns blocks, tokens or channels.
struct Heatmap {
  Axis x, y;
  std::string value_label, value_unit;  // what the colour encodes
  int64_t rows = 0, cols = 0;
  std::vector<double> values;
  std::vector<std::string> row_names;  // one per row ("b0 h3")
  int64_t col_bin = 1;                 // columns of the source per column here (wide sources are binned)
  std::string bin_rule;                // how a bin summarises its columns ("largest"), when col_bin > 1
};

struct Series {
  std::string name;
  std::vector<double> x, y;
  bool points = false;  // markers only (measurements), else a polyline
  std::vector<std::string> labels = {};  // a text beside each point (its variant), or none: empty
};

// A straight line from one data point to another, drawn under the points: it pairs points of two series
// that belong together (a variant's predicted rate and its measured one).
struct Link {
  double x0, y0, x1, y1;
};

struct LineChart {
  Axis x, y;
  std::vector<Series> series;
  std::vector<Link> links = {};
  std::string link_meaning = {};  // the legend's text for the links ("" when there are none)
};

// One bar per category, made of stacked segments (one per stack name) — or, `grouped`, of segments side
// by side, each from zero (two measures of one category: predicted beside measured); a NaN segment is a
// value that does not exist (no bar drawn). `marked` bars are highlighted (e.g. the heads a policy chose
// for 2-bit storage).
inline constexpr double kNone = NAN;  // a segment that does not exist: no bar drawn

struct Bar {
  std::string label;
  std::vector<double> segments;  // one per BarChart::stacks entry
  bool marked = false;
};

struct BarChart {
  Axis y;
  std::string x_label;
  std::vector<std::string> stacks;  // segment names, bottom first
  std::vector<Bar> bars;
  std::string mark_meaning;         // legend text for marked bars ("" when none are)
  bool grouped = false;             // segments side by side, each labelled with its value, instead of stacked
};

struct View {
  std::string id;     // stable machine name: file names (views/<id>.csv), GUI panel keys
  std::string panel;  // the GUI panel it belongs to ("Block scales", "HBM traffic", …)
  std::string title;
  std::string note;   // one or two sentences: what to look at, which paper figure it mirrors
  std::variant<Heatmap, LineChart, BarChart, Table> body;
  // Whose data it shows: the one variant label of a per-variant view (its title starts "label: "), or,
  // after identical views were merged (shared_views.h), every variant that shares the data. Empty for
  // views of the whole run.
  std::vector<std::string> variants = {};
};

// Every view the results support, in panel order: block scales, channel outliers, head priority, SAS,
// the speedup over the config's baseline, predicted against measured time, HBM traffic, roofline,
// online-softmax trace. Views whose probes no variant recorded are absent; views with identical data are
// drawn once, naming every variant that shares them (shared_views.h).
// `channel_head` picks the (batch · KV heads + KV head) whose channel ranges the line charts show.
std::vector<View> chart_views(const Results& r, int64_t max_heatmap_cols = 128, int64_t channel_head = 0);

// One CSV table per view (a heatmap's cells in long form; a line chart's points; a bar chart's segments).
Table view_as_table(const View& v);

}  // namespace attnlab::views
