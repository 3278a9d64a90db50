// attnlab views: every chart view of a Results, and each view as a table for its CSV.
#include "app/views/chart.h"

#include "app/views/breakdown_views.h"
#include "app/views/context_parallel_views.h"
#include "app/views/data_views.h"
#include "app/views/measured_views.h"
#include "app/views/probe_views.h"
#include "app/views/roofline_views.h"
#include "app/views/shared_views.h"
#include "app/views/speedup_views.h"
#include "app/views/traffic_views.h"

#include <fmt/format.h>

#include <cmath>
#include <type_traits>

namespace attnlab::views {

std::vector<View> chart_views(const Results& r, int64_t max_heatmap_cols, int64_t channel_head) {
  std::vector<View> out = probe_views(r, max_heatmap_cols, channel_head);
  // The panel's timing views first (the ones a figure is about), then bytes, then the roofline.
  std::vector<View> traffic = speedup_views(r);
  for (auto&& part : {model_vs_measured_views({r}), breakdown_views(r), traffic_views(r), context_parallel_views(r),
                      roofline_views(r)})
    traffic.insert(traffic.end(), part.begin(), part.end());
  // Panel order (chart.h): scales, channels, priority, SAS, then speedup, traffic and roofline, then the trace.
  auto trace = std::stable_partition(out.begin(), out.end(), [](const View& v) { return v.panel != "Tile stepper"; });
  out.insert(trace, std::make_move_iterator(traffic.begin()), std::make_move_iterator(traffic.end()));
  std::vector<View> data = data_views(r);  // the Data panel first: what the inputs do to attention
  out.insert(out.begin(), std::make_move_iterator(data.begin()), std::make_move_iterator(data.end()));
  return merge_shared(std::move(out));
}

Table view_as_table(const View& v) {
  auto num = [](double x) { return number_cell(x, "{:.9g}"); };
  auto text = [](std::string s) { return Cell{std::move(s), NAN}; };
  return std::visit(
      [&](const auto& body) -> Table {
        using T = std::decay_t<decltype(body)>;
        Table t;
        t.title = v.title;
        if constexpr (std::is_same_v<T, Table>) {
          return body;
        } else if constexpr (std::is_same_v<T, Heatmap>) {
          t.columns = {{"row", body.y.label, ""}, {"col", body.x.label, ""}, {"value", body.value_label, body.value_unit}};
          for (int64_t r = 0; r < body.rows; ++r)
            for (int64_t c = 0; c < body.cols; ++c)
              t.rows.push_back({text(body.row_names.at(size_t(r))), num(double(c * body.col_bin)),
                                num(body.values[size_t(r * body.cols + c)])});
        } else if constexpr (std::is_same_v<T, LineChart>) {
          t.columns = {{"series", "series", ""}, {"x", body.x.label, body.x.unit}, {"y", body.y.label, body.y.unit}};
          for (const auto& s : body.series)
            for (size_t i = 0; i < s.x.size(); ++i) t.rows.push_back({text(s.name), num(s.x[i]), num(s.y[i])});
        } else {
          t.columns = {{"bar", body.x_label, ""}, {"segment", "segment", ""}, {"value", body.y.label, body.y.unit},
                       {"marked", "marked", ""}};
          for (const auto& b : body.bars)
            for (size_t i = 0; i < b.segments.size(); ++i)
              t.rows.push_back({text(b.label), text(body.stacks.at(i)), num(b.segments[i]), num(b.marked ? 1 : 0)});
        }
        return t;
      },
      v.body);
}

}  // namespace attnlab::views
