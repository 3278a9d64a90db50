// attnlab report: chart views (app/views/chart.h) as inline SVG — axes with ticks and units, a colour bar
// for heatmaps, a legend for series and stacks. Pure string building, no external resources.
#include "app/report/svg.h"

#include "app/report/html.h"
#include "app/views/axis.h"
#include "app/views/label_layout.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace attnlab::report {

namespace {

std::string hex(unsigned rgb) { return fmt::format("#{:06x}", rgb); }
std::string palette(size_t k) { return hex(views::kPalette[k % views::kPalette.size()]); }
std::string colour_at(double t) { return hex(views::colour_map(t)); }
std::string num(double x) { return views::tick_label(x); }

std::string axis_title(const views::Axis& a) { return a.unit.empty() ? a.label : a.label + " (" + a.unit + ")"; }

// Text extents without a font at hand: DejaVu Sans at 11 px advances about 6.4 px per character on average
// (wide glyphs run over by a few pixels); a line is 13 px.
constexpr double kCharPx = 6.4, kLabelLinePx = 13;

size_t utf8_chars(const std::string& s) {
  size_t n = 0;
  for (unsigned char ch : s) n += (ch & 0xC0) != 0x80;
  return n;
}

using Scale = views::AxisScale;
Scale scale_of(double lo, double hi, double p0, double p1, bool log) { return views::axis_scale(lo, hi, p0, p1, log); }

struct Frame {
  int w, h;
  double left = 70, right = 20, top = 16, bottom = 48;
  double x0() const { return left; }
  double x1() const { return w - right; }
  double y0() const { return h - bottom; }
  double y1() const { return top; }
};

std::string open_svg(const Frame& f, const std::string& label) {
  return fmt::format(
      "<svg width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" role=\"img\" "
      "aria-label=\"{2}\" font-family=\"DejaVu Sans, sans-serif\" font-size=\"11\">\n"
      "<rect x=\"0\" y=\"0\" width=\"{0}\" height=\"{1}\" fill=\"white\"/>\n",
      f.w, f.h, escape_html(label));
}

std::string axes(const Frame& f, const Scale& xs, const Scale& ys, const views::Axis& xa, const views::Axis& ya,
                 bool x_ticks = true) {
  std::string s = fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#444\"/>\n",
                              f.x0(), f.y1(), f.x1() - f.x0(), f.y0() - f.y1());
  for (double t : ys.ticks()) {
    const double y = ys.at(t);
    s += fmt::format("<line x1=\"{0}\" x2=\"{1}\" y1=\"{2:.1f}\" y2=\"{2:.1f}\" stroke=\"#e4e4e4\"/>"
                     "<text x=\"{3}\" y=\"{4:.1f}\" text-anchor=\"end\">{5}</text>\n",
                     f.x0(), f.x1(), y, f.x0() - 4, y + 4, num(t));
  }
  if (x_ticks)
    for (double t : xs.ticks()) {
      const double x = xs.at(t);
      s += fmt::format("<line x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1}\" y2=\"{2}\" stroke=\"#e4e4e4\"/>"
                       "<text x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"middle\">{4}</text>\n",
                       x, f.y1(), f.y0(), f.y0() + 14, num(t));
    }
  s += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", (f.x0() + f.x1()) / 2, f.h - 8,
                   escape_html(axis_title(xa)));
  s += fmt::format("<text transform=\"translate(14 {:.1f}) rotate(-90)\" text-anchor=\"middle\">{}</text>\n",
                   (f.y0() + f.y1()) / 2, escape_html(axis_title(ya)));
  return s;
}

std::string legend(const Frame& f, const std::vector<std::pair<std::string, std::string>>& entries) {
  // As wide as its longest entry (a swatch, a gap, the text), at least 150 px, inside the plot's right edge.
  size_t longest = 0;
  for (const auto& e : entries) longest = std::max(longest, utf8_chars(e.first));
  const double x = f.x1() - std::max(150.0, 20 + kCharPx * double(longest));
  std::string s;
  double y = f.y1() + 6;
  for (const auto& [name, colour] : entries) {
    s += fmt::format("<rect x=\"{0:.1f}\" y=\"{1:.1f}\" width=\"10\" height=\"10\" fill=\"{2}\"/>"
                     "<text x=\"{3:.1f}\" y=\"{4:.1f}\">{5}</text>\n",
                     x, y, colour, x + 14, y + 9, escape_html(name));
    y += 14;
  }
  return s;
}

std::string heatmap_svg(const views::Heatmap& h, const std::string& label, int w, int height) {
  Frame f{w, height};
  f.left = 80, f.right = 90;
  std::string s = open_svg(f, label);
  double lo = INFINITY, hi = -INFINITY;
  for (double v : h.values)
    if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  if (!(lo <= hi)) lo = 0, hi = 1;
  const double cw = (f.x1() - f.x0()) / double(std::max<int64_t>(h.cols, 1));
  const double ch = (f.y0() - f.y1()) / double(std::max<int64_t>(h.rows, 1));
  for (int64_t r = 0; r < h.rows; ++r)
    for (int64_t c = 0; c < h.cols; ++c) {
      const double v = h.values[size_t(r * h.cols + c)];
      s += fmt::format("<rect x=\"{:.2f}\" y=\"{:.2f}\" width=\"{:.2f}\" height=\"{:.2f}\" fill=\"{}\"><title>{} · {} {}: "
                       "{}</title></rect>\n",
                       f.x0() + double(c) * cw, f.y1() + double(r) * ch, cw + 0.05, ch + 0.05,
                       colour_at(hi > lo ? (v - lo) / (hi - lo) : 0.5), escape_html(h.row_names.at(size_t(r))),
                       escape_html(h.x.label), c * h.col_bin, num(v));
    }
  const int64_t every = std::max<int64_t>(1, int64_t(std::ceil(12.0 / ch)));  // row labels ≥ 12 px apart
  for (int64_t r = 0; r < h.rows; r += every)
    s += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n", f.x0() - 4,
                     f.y1() + (double(r) + 0.5) * ch + 4, escape_html(h.row_names.at(size_t(r))));
  const Scale xs = scale_of(0, double(h.cols * h.col_bin), f.x0(), f.x1(), false);
  s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#444\"/>\n", f.x0(), f.y1(),
                   f.x1() - f.x0(), f.y0() - f.y1());
  const Scale exact{0, double(h.cols * h.col_bin), f.x0(), f.x1(), false};
  for (double t : xs.ticks(true))
    if (t <= double(h.cols * h.col_bin))
      s += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", exact.at(t), f.y0() + 14, num(t));
  s += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", (f.x0() + f.x1()) / 2, f.h - 8,
                   escape_html(axis_title(h.x)));
  // Colour bar: 40 steps from lo (bottom) to hi (top).
  const double bx = f.x1() + 16, bh = (f.y0() - f.y1()) / 40;
  for (int i = 0; i < 40; ++i)
    s += fmt::format("<rect x=\"{}\" y=\"{:.2f}\" width=\"14\" height=\"{:.2f}\" fill=\"{}\"/>\n", bx,
                     f.y0() - double(i + 1) * bh, bh + 0.05, colour_at((double(i) + 0.5) / 40));
  s += fmt::format("<text x=\"{0}\" y=\"{1}\">{2}</text><text x=\"{0}\" y=\"{3:.1f}\">{4}</text>\n", bx + 18, f.y1() + 8,
                   num(hi), f.y0(), num(lo));
  s += fmt::format("<text transform=\"translate({} {:.1f}) rotate(-90)\" text-anchor=\"middle\">{}</text>\n", f.w - 6,
                   (f.y0() + f.y1()) / 2,
                   escape_html(h.value_unit.empty() ? h.value_label : h.value_label + " (" + h.value_unit + ")"));
  return s + "</svg>\n";
}

std::string line_svg(const views::LineChart& c, const std::string& label, int w, int height) {
  Frame f{w, height};
  double xl = INFINITY, xh = -INFINITY, yl = INFINITY, yh = -INFINITY;
  for (const auto& s : c.series)
    for (size_t i = 0; i < s.x.size(); ++i) {
      if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i]) || (c.x.log && s.x[i] <= 0) || (c.y.log && s.y[i] <= 0)) continue;
      xl = std::min(xl, s.x[i]), xh = std::max(xh, s.x[i]), yl = std::min(yl, s.y[i]), yh = std::max(yh, s.y[i]);
    }
  if (!(xl <= xh)) xl = 0, xh = 1, yl = 0, yh = 1;
  // An axis whose range the view fixed (a roofline fitted to its points) is drawn over that range exactly.
  const Scale xs = c.x.fixed() ? Scale{c.x.lo, c.x.hi, f.x0(), f.x1(), c.x.log} : scale_of(xl, xh, f.x0(), f.x1(), c.x.log);
  const Scale ys = c.y.fixed() ? Scale{c.y.lo, c.y.hi, f.y0(), f.y1(), c.y.log} : scale_of(yl, yh, f.y0(), f.y1(), c.y.log);
  std::string s = open_svg(f, label) + axes(f, xs, ys, c.x, c.y);
  std::vector<std::pair<std::string, std::string>> entries;
  constexpr unsigned kLinkGrey = 0x888888;
  for (const auto& l : c.links)  // under the points they join
    s += fmt::format("<line class=\"link\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\" "
                     "stroke-width=\"1.4\" stroke-dasharray=\"4 3\"/>\n",
                     xs.at(l.x0), ys.at(l.y0), xs.at(l.x1), ys.at(l.y1), hex(kLinkGrey));
  if (!c.link_meaning.empty()) entries.emplace_back(c.link_meaning, hex(kLinkGrey));
  std::vector<views::LabelRequest> requests;  // the points' labels, placed after the points (label_layout.h)
  std::vector<std::pair<std::string, std::string>> texts;  // their text and colour
  for (size_t k = 0; k < c.series.size(); ++k) {
    const auto& se = c.series[k];
    const std::string colour = palette(k);
    entries.emplace_back(se.name, colour);
    std::string pts;
    for (size_t i = 0; i < se.x.size(); ++i) {
      if (!std::isfinite(se.x[i]) || !std::isfinite(se.y[i]) || (c.x.log && se.x[i] <= 0) || (c.y.log && se.y[i] <= 0)) continue;
      const double x = xs.at(se.x[i]), y = ys.at(se.y[i]);
      if (se.points)
        s += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\" fill=\"{}\"><title>{}: {}, {}</title></circle>\n", x, y,
                         colour, escape_html(se.name), num(se.x[i]), num(se.y[i]));
      else
        pts += fmt::format("{:.1f},{:.1f} ", x, y);
      if (i < se.labels.size() && !se.labels[i].empty()) {
        requests.push_back({x, y, kCharPx * double(utf8_chars(se.labels[i])), kLabelLinePx});
        texts.emplace_back(se.labels[i], colour);
      }
    }
    if (!se.points && !pts.empty())
      s += fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.6\" points=\"{}\"/>\n", colour, pts);
  }
  const auto places = views::place_labels(requests, {f.x0(), f.y1(), f.x1(), f.y0()}, 6);
  for (size_t i = 0; i < places.size(); ++i)
    if (places[i].shown)  // the baseline a third of the line below its centre
      s += fmt::format("<text class=\"point-label\" x=\"{:.1f}\" y=\"{:.1f}\" fill=\"{}\">{}</text>\n", places[i].x,
                       places[i].y + kLabelLinePx / 3, texts[i].second, escape_html(texts[i].first));
  return s + legend(f, entries) + "</svg>\n";
}

// Bar labels are written at −35° from the axis down to the left. Their room is estimated from kCharPx:
// the frame's bottom grows to hold the longest label (at most half the chart), its left margin so that the
// first bars' labels do not leave the chart, and a label that still does not fit is shortened with an
// ellipsis.
constexpr double kLabelAngle = 35.0 * 3.14159265358979323846 / 180.0;

std::string shortened(const std::string& s, size_t chars) {
  if (utf8_chars(s) <= chars) return s;
  std::string out;
  size_t n = 0;
  for (unsigned char ch : s) {
    if ((ch & 0xC0) != 0x80 && ++n > (chars > 0 ? chars - 1 : 0)) break;
    out += char(ch);
  }
  return out + "…";
}

std::string bar_svg(const views::BarChart& c, const std::string& label, int w, int height) {
  Frame f{w, height};
  std::vector<std::string> names;
  for (const auto& b : c.bars) names.push_back(b.label + (b.marked ? " ●" : ""));
  size_t longest = 0;
  for (const auto& n : names) longest = std::max(longest, utf8_chars(n));
  f.bottom = std::clamp(40 + std::sin(kLabelAngle) * kCharPx * double(longest), 70.0, height / 2.0);
  const size_t fits = size_t((f.bottom - 40) / (std::sin(kLabelAngle) * kCharPx));
  for (auto& n : names) n = shortened(n, fits);
  for (int pass = 0; pass < 2; ++pass) {  // the slot width depends on the left margin: settle it twice
    const double slot_w = (f.x1() - f.x0()) / double(std::max<size_t>(c.bars.size(), 1));
    double need = 70;
    for (size_t i = 0; i < names.size(); ++i)
      need = std::max(need, std::cos(kLabelAngle) * kCharPx * double(utf8_chars(names[i])) - (double(i) + 0.5) * slot_w + 4);
    f.left = std::min(need, w / 3.0);
  }
  double top = 0;  // the tallest stack, or with grouped bars the tallest segment
  for (const auto& b : c.bars) {
    double sum = 0;
    for (double v : b.segments)
      if (std::isfinite(v)) sum = c.grouped ? std::max(sum, v) : sum + std::max(0.0, v);
    top = std::max(top, sum);
  }
  // Room above the tallest bar for the legend (14 px an entry, from 6 px down) and, grouped, one line of values.
  const size_t entries_n = c.stacks.size() + (c.mark_meaning.empty() ? 0 : 1);
  const double reserved = 6 + 14.0 * double(entries_n) + (c.grouped ? kLabelLinePx + 3 : 0);
  const Scale ys = scale_of(0, views::bar_axis_top(top, f.y0() - f.y1(), reserved), f.y0(), f.y1(), false);
  const Scale xs{0, 1, f.x0(), f.x1(), false};
  std::string s = open_svg(f, label) + axes(f, xs, ys, {c.x_label, ""}, c.y, false);
  const double slot = (f.x1() - f.x0()) / double(std::max<size_t>(c.bars.size(), 1)), bw = slot * 0.7;
  // Grouped: each segment its own bar of width bw / (segments), from zero, its value written above it.
  const double sw = c.grouped ? bw / double(std::max<size_t>(c.stacks.size(), 1)) : bw;
  std::vector<std::string> values;
  std::vector<views::LabelRequest> value_at;
  for (size_t i = 0; i < c.bars.size(); ++i) {
    const auto& b = c.bars[i];
    const double x = f.x0() + double(i) * slot + (slot - bw) / 2;
    double base = 0;
    for (size_t k = 0; k < b.segments.size(); ++k) {
      if (!std::isfinite(b.segments[k])) continue;  // a value that does not exist: no bar
      const double v = std::max(0.0, b.segments[k]);
      const double sx = c.grouped ? x + double(k) * sw : x;
      const double y_top = ys.at(base + v), y_bottom = ys.at(base);
      s += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"{}\"{}><title>{} · {}: {}</title></rect>\n",
                       sx, y_top, sw, std::max(0.0, y_bottom - y_top), palette(k),
                       b.marked ? " stroke=\"#000\" stroke-width=\"2\"" : "", escape_html(b.label),
                       escape_html(c.stacks.at(k)), num(b.segments[k]));
      if (c.grouped) {  // its value over it, placed once every bar is known (views::place_bar_values)
        values.push_back(num(b.segments[k]));
        value_at.push_back({sx + sw / 2, y_top, kCharPx * double(utf8_chars(values.back())), kLabelLinePx});
      } else {
        base += v;
      }
    }
    s += fmt::format("<text class=\"bar-label\" transform=\"translate({:.1f} {:.1f}) rotate(-35)\" text-anchor=\"end\">{}</text>\n",
                     x + bw / 2, f.y0() + 12, escape_html(names[i]));
  }
  // Values that would overlap a neighbour's go above it, or are left to the bar's tooltip (<title>).
  const auto places = views::place_bar_values(value_at, {f.x0(), f.y1(), f.x1(), f.y0()}, 3);
  for (size_t i = 0; i < places.size(); ++i)
    if (places[i].shown)
      s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n", value_at[i].x,
                       places[i].y + 4, values[i]);
  std::vector<std::pair<std::string, std::string>> entries;
  for (size_t k = 0; k < c.stacks.size(); ++k) entries.emplace_back(c.stacks[k], palette(k));
  if (!c.mark_meaning.empty()) entries.emplace_back("● outlined: " + c.mark_meaning, "#ffffff");
  return s + legend(f, entries) + "</svg>\n";
}

}  // namespace

std::string render_svg(const views::View& v, int width, int height) {
  if (const auto* h = std::get_if<views::Heatmap>(&v.body)) return heatmap_svg(*h, v.title, width, height);
  if (const auto* c = std::get_if<views::LineChart>(&v.body)) return line_svg(*c, v.title, width, height);
  if (const auto* b = std::get_if<views::BarChart>(&v.body)) return bar_svg(*b, v.title, width, height);
  return "";  // tables are HTML, not SVG
}

}  // namespace attnlab::report
