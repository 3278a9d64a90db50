// attnlab views: point-label placement (label_layout.h).
#include "app/views/label_layout.h"

#include <algorithm>
#include <cstddef>
#include <functional>

namespace attnlab::views {

namespace {

struct Rect {
  double x0, y0, x1, y1;
  bool overlaps(const Rect& o) const { return x0 < o.x1 && o.x0 < x1 && y0 < o.y1 && o.y0 < y1; }
  bool inside(const PlotBox& b) const { return x0 >= b.x0 && x1 <= b.x1 && y0 >= b.y0 && y1 <= b.y1; }
};

}  // namespace

std::vector<LabelPlace> place_labels(const std::vector<LabelRequest>& labels, const PlotBox& box, double gap) {
  std::vector<LabelPlace> out(labels.size());
  std::vector<Rect> taken;
  const double mid = (box.x0 + box.x1) / 2;
  for (std::size_t i = 0; i < labels.size(); ++i) {
    const LabelRequest& l = labels[i];
    const bool right_first = l.x < mid;
    for (const double rows : {0.0, -1.0, 1.0, -2.0, 2.0}) {
      for (const bool right : {right_first, !right_first}) {
        const double left = right ? l.x + gap : l.x - gap - l.w, centre = l.y + rows * l.h;
        const Rect r{left, centre - l.h / 2, left + l.w, centre + l.h / 2};
        if (!r.inside(box)) continue;
        bool free = true;
        for (const Rect& t : taken) free = free && !r.overlaps(t);
        if (!free) continue;
        taken.push_back(r);
        out[i] = {true, left, centre};
        break;
      }
      if (out[i].shown) break;
    }
  }
  return out;
}

double bar_axis_top(double top, double plot_px, double reserved_px) {
  if (!(top > 0)) top = 1;
  if (!(plot_px > 0)) return top;
  const double kept = std::clamp(reserved_px, 0.0, 0.6 * plot_px);
  return top * plot_px / (plot_px - kept);
}

std::vector<LabelPlace> place_bar_values(const std::vector<LabelRequest>& values, const PlotBox& box, double gap,
                                         int max_raise) {
  std::vector<LabelPlace> out(values.size());
  std::vector<Rect> taken;
  for (std::size_t i = 0; i < values.size(); ++i) {
    const LabelRequest& v = values[i];
    const double left = v.x - v.w / 2, natural = v.y - gap - v.h / 2;
    // Where it may go, lowest first: its own place, then just above each value placed before it.
    std::vector<double> centres{natural};
    for (const Rect& t : taken)
      if (t.y0 - v.h / 2 < natural) centres.push_back(t.y0 - v.h / 2);
    std::sort(centres.begin(), centres.end(), std::greater<>());
    for (const double centre : centres) {
      if (natural - centre > double(max_raise) * v.h) break;
      const Rect r{left, centre - v.h / 2, left + v.w, centre + v.h / 2};
      bool free = r.inside(box);
      for (const Rect& t : taken) free = free && !r.overlaps(t);
      if (!free) continue;
      taken.push_back(r);
      out[i] = {true, left, centre};
      break;
    }
  }
  return out;
}

}  // namespace attnlab::views
