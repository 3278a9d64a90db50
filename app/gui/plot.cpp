// attnlab gui: chart views drawn on ImGui's draw list — the same axes, ticks, colours and legends as the
// report's SVG (app/views/axis.h), plus hover tooltips and the linked (head, block) highlight.
#include "app/gui/plot.h"

#include "app/views/axis.h"
#include "app/views/label_layout.h"

#include <fmt/format.h>
#include <imgui.h>

#include <algorithm>
#include <cmath>

namespace attnlab::gui {

namespace {

ImU32 rgb(unsigned c, int alpha = 255) { return IM_COL32((c >> 16) & 0xff, (c >> 8) & 0xff, c & 0xff, alpha); }
ImU32 palette(size_t k) { return rgb(views::kPalette[k % views::kPalette.size()]); }
const ImU32 kInk = IM_COL32(40, 40, 40, 255), kGrid = IM_COL32(225, 225, 225, 255), kPaper = IM_COL32(255, 255, 255, 255);

std::string axis_title(const views::Axis& a) { return a.unit.empty() ? a.label : a.label + " (" + a.unit + ")"; }

struct Frame {
  ImVec2 min, max;  // plot area
};

constexpr float kLeftMarginEm = 4.5f;  // the y ticks' labels

// Reserves w × h, paints the background, returns the plot area (margins for labels and a legend; below the
// plot, `label_rows` rows of x labels and the axis title).
Frame reserve(const char* id, float w, float h, float right_margin, int label_rows = 1) {
  const ImVec2 at = ImGui::GetCursorScreenPos();
  ImGui::InvisibleButton(id, ImVec2(w, h));
  ImGui::GetWindowDrawList()->AddRectFilled(at, ImVec2(at.x + w, at.y + h), kPaper);
  const float em = ImGui::GetFontSize();
  return {ImVec2(at.x + kLeftMarginEm * em, at.y + 1.5f * em),
          ImVec2(at.x + w - right_margin, at.y + h - (1.6f + float(label_rows)) * em)};
}

// s, or as much of it as fits `width` followed by an ellipsis (cut between UTF-8 characters).
std::string fit_text(const std::string& s, float width) {
  if (ImGui::CalcTextSize(s.c_str()).x <= width) return s;
  std::string cut = s;
  while (!cut.empty()) {
    while (!cut.empty() && (static_cast<unsigned char>(cut.back()) & 0xC0) == 0x80) cut.pop_back();  // continuation bytes
    if (!cut.empty()) cut.pop_back();  // the last character's first byte
    if (ImGui::CalcTextSize((cut + "…").c_str()).x <= width) return cut + "…";
  }
  return "";
}

void axes(const Frame& f, const views::AxisScale& xs, const views::AxisScale& ys, const views::Axis& xa,
          const views::Axis& ya, bool x_ticks, bool integer_x, int label_rows = 1) {
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const float em = ImGui::GetFontSize();
  for (double t : ys.ticks()) {
    const float y = float(ys.at(t));
    dl->AddLine(ImVec2(f.min.x, y), ImVec2(f.max.x, y), kGrid);
    const std::string s = views::tick_label(t);
    dl->AddText(ImVec2(f.min.x - ImGui::CalcTextSize(s.c_str()).x - 4, y - em / 2), kInk, s.c_str());
  }
  if (x_ticks) {
    float free_from = -1e9f;  // labels that would overlap the previous one are left out
    for (double t : xs.ticks(integer_x)) {
      const float x = float(xs.at(t));
      dl->AddLine(ImVec2(x, f.min.y), ImVec2(x, f.max.y), kGrid);
      const std::string s = views::tick_label(t);
      const float w = ImGui::CalcTextSize(s.c_str()).x;
      if (x - w / 2 < free_from) continue;
      dl->AddText(ImVec2(x - w / 2, f.max.y + 2), kInk, s.c_str());
      free_from = x + w / 2 + em / 2;
    }
  }
  dl->AddRect(f.min, f.max, kInk);
  const std::string xt = axis_title(xa), yt = axis_title(ya);
  dl->AddText(ImVec2((f.min.x + f.max.x - ImGui::CalcTextSize(xt.c_str()).x) / 2, f.max.y + (0.2f + float(label_rows)) * em),
              kInk, xt.c_str());
  dl->AddText(ImVec2(f.min.x - 4.3f * em, f.min.y - 1.4f * em), kInk, yt.c_str());  // above the axis: no rotated text
}

// The legend in the plot's top-right corner, on a translucent white box (narrow panels keep their plot).
void legend(const Frame& f, const std::vector<std::pair<std::string, ImU32>>& entries) {
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const float em = ImGui::GetFontSize();
  float w = 0;
  for (const auto& e : entries) w = std::max(w, ImGui::CalcTextSize(e.first.c_str()).x);
  const float x0 = std::max(f.min.x, f.max.x - w - 2.0f * em), y0 = f.min.y + 0.2f * em;
  dl->AddRectFilled(ImVec2(x0, y0), ImVec2(f.max.x - 0.2f * em, y0 + 1.1f * em * float(entries.size()) + 0.2f * em),
                    IM_COL32(255, 255, 255, 210));
  float y = y0 + 0.3f * em;
  for (const auto& [name, colour] : entries) {
    dl->AddRectFilled(ImVec2(x0 + 0.3f * em, y), ImVec2(x0 + 1.0f * em, y + 0.7f * em), colour);
    dl->AddText(ImVec2(x0 + 1.3f * em, y - 0.2f * em), kInk, name.c_str());
    y += 1.1f * em;
  }
}

float legend_width(const std::vector<std::string>&) { return ImGui::GetFontSize() * 0.8f; }

bool hovered(const Frame& f) { return ImGui::IsItemHovered() && ImGui::IsMouseHoveringRect(f.min, f.max); }

void heatmap(const views::View& v, const views::Heatmap& h, HoverLink& link, float w, float height) {
  const float em = ImGui::GetFontSize();
  const Frame f = reserve(v.id.c_str(), w, height, 5.5f * em);
  ImDrawList* dl = ImGui::GetWindowDrawList();
  double lo = INFINITY, hi = -INFINITY;
  for (double x : h.values)
    if (std::isfinite(x)) lo = std::min(lo, x), hi = std::max(hi, x);
  if (!(lo <= hi)) lo = 0, hi = 1;
  const float cw = (f.max.x - f.min.x) / float(std::max<int64_t>(h.cols, 1));
  const float ch = (f.max.y - f.min.y) / float(std::max<int64_t>(h.rows, 1));
  for (int64_t r = 0; r < h.rows; ++r)
    for (int64_t c = 0; c < h.cols; ++c) {
      const double x = h.values[size_t(r * h.cols + c)];
      const ImVec2 a(f.min.x + float(c) * cw, f.min.y + float(r) * ch);
      dl->AddRectFilled(a, ImVec2(a.x + cw + 0.5f, a.y + ch + 0.5f), rgb(views::colour_map(hi > lo ? (x - lo) / (hi - lo) : 0.5)));
    }
  // The same (head, column) hovered in another heatmap this frame or the last: outline it here.
  if (link.active)
    for (int64_t r = 0; r < h.rows; ++r)
      if (h.row_names[size_t(r)] == link.row && link.col >= 0 && link.col / h.col_bin < h.cols) {
        const ImVec2 a(f.min.x + float(link.col / h.col_bin) * cw, f.min.y + float(r) * ch);
        dl->AddRect(a, ImVec2(a.x + cw, a.y + ch), IM_COL32(255, 255, 255, 255), 0, 0, 2.0f);
        dl->AddRect(a, ImVec2(a.x + cw, a.y + ch), IM_COL32(0, 0, 0, 255), 0, 0, 1.0f);
      }
  const int64_t every = std::max<int64_t>(1, int64_t(std::ceil(em / ch)));
  for (int64_t r = 0; r < h.rows; r += every) {
    const char* name = h.row_names[size_t(r)].c_str();
    dl->AddText(ImVec2(f.min.x - ImGui::CalcTextSize(name).x - 4, f.min.y + (float(r) + 0.5f) * ch - em / 2), kInk, name);
  }
  const views::AxisScale xs{0, double(h.cols * h.col_bin), f.min.x, f.max.x, false};
  float free_from = -1e9f;  // labels that would overlap the previous one are left out
  for (double t : views::axis_scale(0, double(h.cols * h.col_bin), f.min.x, f.max.x, false).ticks(true))
    if (t <= double(h.cols * h.col_bin)) {
      const std::string s = views::tick_label(t);
      const float tw = ImGui::CalcTextSize(s.c_str()).x, x = float(xs.at(t));
      if (x - tw / 2 < free_from) continue;
      dl->AddText(ImVec2(x - tw / 2, f.max.y + 2), kInk, s.c_str());
      free_from = x + tw / 2 + em / 2;
    }
  dl->AddRect(f.min, f.max, kInk);
  const std::string xt = axis_title(h.x);
  dl->AddText(ImVec2((f.min.x + f.max.x - ImGui::CalcTextSize(xt.c_str()).x) / 2, f.max.y + 1.2f * em), kInk, xt.c_str());
  // Colour bar.
  const float bx = f.max.x + 0.8f * em, bh = (f.max.y - f.min.y) / 40;
  for (int i = 0; i < 40; ++i)
    dl->AddRectFilled(ImVec2(bx, f.max.y - float(i + 1) * bh), ImVec2(bx + em, f.max.y - float(i) * bh + 0.5f),
                      rgb(views::colour_map((i + 0.5) / 40)));
  dl->AddText(ImVec2(bx + 1.2f * em, f.min.y), kInk, views::tick_label(hi).c_str());
  dl->AddText(ImVec2(bx + 1.2f * em, f.max.y - em), kInk, views::tick_label(lo).c_str());
  if (hovered(f)) {
    const ImVec2 m = ImGui::GetMousePos();
    const int64_t c = std::clamp<int64_t>(int64_t((m.x - f.min.x) / cw), 0, h.cols - 1);
    const int64_t r = std::clamp<int64_t>(int64_t((m.y - f.min.y) / ch), 0, h.rows - 1);
    link.next_row = h.row_names[size_t(r)], link.next_col = c * h.col_bin, link.next_active = true;
    ImGui::SetTooltip("%s\n%s %lld%s\n%s: %s %s", h.row_names[size_t(r)].c_str(), h.x.label.c_str(),
                      static_cast<long long>(c * h.col_bin),
                      h.col_bin > 1 ? fmt::format("–{}", (c + 1) * h.col_bin - 1).c_str() : "", h.value_label.c_str(),
                      views::tick_label(h.values[size_t(r * h.cols + c)]).c_str(), h.value_unit.c_str());
  }
}

void lines(const views::View& v, const views::LineChart& c, float w, float height) {
  std::vector<std::string> names;
  for (const auto& s : c.series) names.push_back(s.name);
  const Frame f = reserve(v.id.c_str(), w, height, legend_width(names));
  auto usable = [&](double x, double y) {
    return std::isfinite(x) && std::isfinite(y) && !(c.x.log && x <= 0) && !(c.y.log && y <= 0);
  };
  double xl = INFINITY, xh = -INFINITY, yl = INFINITY, yh = -INFINITY;
  for (const auto& s : c.series)
    for (size_t i = 0; i < s.x.size(); ++i)
      if (usable(s.x[i], s.y[i]))
        xl = std::min(xl, s.x[i]), xh = std::max(xh, s.x[i]), yl = std::min(yl, s.y[i]), yh = std::max(yh, s.y[i]);
  if (!(xl <= xh)) xl = 0, xh = 1, yl = 0, yh = 1;
  // An axis whose range the view fixed (a roofline fitted to its points) is drawn over that range exactly.
  const auto xs = c.x.fixed() ? views::AxisScale{c.x.lo, c.x.hi, f.min.x, f.max.x, c.x.log}
                              : views::axis_scale(xl, xh, f.min.x, f.max.x, c.x.log);
  const auto ys = c.y.fixed() ? views::AxisScale{c.y.lo, c.y.hi, f.max.y, f.min.y, c.y.log}
                              : views::axis_scale(yl, yh, f.max.y, f.min.y, c.y.log);
  axes(f, xs, ys, c.x, c.y, true, false);
  ImDrawList* dl = ImGui::GetWindowDrawList();
  dl->PushClipRect(f.min, f.max, true);
  std::vector<std::pair<std::string, ImU32>> entries;
  const ImU32 link_grey = rgb(0x888888);
  for (const auto& l : c.links)  // under the points they join
    dl->AddLine(ImVec2(float(xs.at(l.x0)), float(ys.at(l.y0))), ImVec2(float(xs.at(l.x1)), float(ys.at(l.y1))), link_grey,
                1.4f);
  if (!c.link_meaning.empty()) entries.emplace_back(c.link_meaning, link_grey);
  const float em = ImGui::GetFontSize();
  const ImVec2 mouse = ImGui::GetMousePos();
  float best = 64;  // px², the nearest point under the mouse gets the tooltip
  std::string tip;
  std::vector<views::LabelRequest> requests;  // the points' labels, placed after the points (label_layout.h)
  std::vector<std::pair<const std::string*, ImU32>> texts;
  for (size_t k = 0; k < c.series.size(); ++k) {
    const auto& s = c.series[k];
    entries.emplace_back(s.name, palette(k));
    std::vector<ImVec2> pts;
    for (size_t i = 0; i < s.x.size(); ++i) {
      if (!usable(s.x[i], s.y[i])) continue;
      const ImVec2 p(float(xs.at(s.x[i])), float(ys.at(s.y[i])));
      if (s.points) dl->AddCircleFilled(p, 4, palette(k));
      else pts.push_back(p);
      if (i < s.labels.size() && !s.labels[i].empty()) {
        requests.push_back({p.x, p.y, ImGui::CalcTextSize(s.labels[i].c_str()).x, em});
        texts.emplace_back(&s.labels[i], palette(k));
      }
      const float d = (p.x - mouse.x) * (p.x - mouse.x) + (p.y - mouse.y) * (p.y - mouse.y);
      if (d < best)
        best = d, tip = fmt::format("{}{}\n{}: {}\n{}: {}", s.name, i < s.labels.size() ? " · " + s.labels[i] : "",
                                    c.x.label, views::tick_label(s.x[i]), c.y.label, views::tick_label(s.y[i]));
    }
    if (pts.size() > 1) dl->AddPolyline(pts.data(), int(pts.size()), palette(k), 0, 1.6f);
  }
  const auto places = views::place_labels(requests, {f.min.x, f.min.y, f.max.x, f.max.y}, 6);
  for (size_t i = 0; i < places.size(); ++i)
    if (places[i].shown)
      dl->AddText(ImVec2(float(places[i].x), float(places[i].y) - em / 2), texts[i].second, texts[i].first->c_str());
  dl->PopClipRect();
  legend(f, entries);
  if (hovered(f) && !tip.empty()) ImGui::SetTooltip("%s", tip.c_str());
}

void bars(const views::View& v, const views::BarChart& c, float w, float height) {
  std::vector<std::string> names = c.stacks;
  if (!c.mark_meaning.empty()) names.push_back("outlined: " + c.mark_meaning);
  // Bar labels wider than a bar's slot go on two staggered rows (each then has two slots of width) and are
  // shortened with an ellipsis only beyond that; the whole label is in the bar's tooltip.
  const float em = ImGui::GetFontSize();
  const float slot_w = (w - kLeftMarginEm * em - legend_width(names)) / float(std::max<size_t>(c.bars.size(), 1));
  bool stagger = false;
  for (const auto& b : c.bars) stagger = stagger || ImGui::CalcTextSize(b.label.c_str()).x >= slot_w;
  const int label_rows = stagger ? 2 : 1;
  const Frame f = reserve(v.id.c_str(), w, height, legend_width(names), label_rows);
  double top = 0;  // the tallest stack, or with grouped bars the tallest segment
  for (const auto& b : c.bars) {
    double sum = 0;
    for (double x : b.segments)
      if (std::isfinite(x)) sum = c.grouped ? std::max(sum, x) : sum + std::max(0.0, x);
    top = std::max(top, sum);
  }
  // Room above the tallest bar for the legend (legend(): 1.1 em an entry and 0.4 em of box) and, grouped, a value.
  const float reserved = (1.1f * float(names.size()) + 0.4f) * em + (c.grouped ? 1.2f * em : 0.0f);
  const auto ys = views::axis_scale(0, views::bar_axis_top(top, f.max.y - f.min.y, reserved), f.max.y, f.min.y, false);
  axes(f, {0, 1, f.min.x, f.max.x, false}, ys, {c.x_label, ""}, c.y, false, false, label_rows);
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const float slot = (f.max.x - f.min.x) / float(std::max<size_t>(c.bars.size(), 1)), bw = slot * 0.7f;
  const float sw = c.grouped ? bw / float(std::max<size_t>(c.stacks.size(), 1)) : bw;  // grouped: side by side
  const ImVec2 mouse = ImGui::GetMousePos();
  std::string tip;
  std::vector<std::string> values;
  std::vector<views::LabelRequest> value_at;
  for (size_t i = 0; i < c.bars.size(); ++i) {
    const auto& b = c.bars[i];
    const float x = f.min.x + float(i) * slot + (slot - bw) / 2;
    double base = 0;
    for (size_t k = 0; k < b.segments.size(); ++k) {
      if (!std::isfinite(b.segments[k])) continue;  // a value that does not exist: no bar
      const double s = std::max(0.0, b.segments[k]);
      const float sx = c.grouped ? x + float(k) * sw : x;
      const ImVec2 a(sx, float(ys.at(base + s))), z(sx + sw, float(ys.at(base)));
      dl->AddRectFilled(a, z, palette(k));
      if (mouse.x >= a.x && mouse.x <= z.x && mouse.y >= a.y && mouse.y <= z.y)
        tip = fmt::format("{}\n{}: {} {}", b.label, c.stacks[k], views::tick_label(b.segments[k]), c.y.unit);
      if (c.grouped) {  // its value over it, placed once every bar is known (views::place_bar_values)
        values.push_back(views::tick_label(b.segments[k]));
        const ImVec2 ts = ImGui::CalcTextSize(values.back().c_str());
        value_at.push_back({sx + sw / 2, a.y, ts.x, ts.y});
      } else {
        base += s;
      }
    }
    if (b.marked) dl->AddRect(ImVec2(x - 1, float(ys.at(base)) - 1), ImVec2(x + bw + 1, f.max.y + 1), kInk, 0, 0, 2.5f);
    const std::string label = fit_text(b.label, stagger ? 2 * slot - em / 2 : slot);
    const float lw = ImGui::CalcTextSize(label.c_str()).x, row = stagger ? float(i % 2) * em : 0.0f;
    dl->AddText(ImVec2(x + bw / 2 - lw / 2, f.max.y + 2 + row), kInk, label.c_str());
  }
  // Values that would overlap a neighbour's go above it, or are left to the bar's tooltip.
  const auto places = views::place_bar_values(value_at, {f.min.x, f.min.y, f.max.x, f.max.y}, 1);
  for (size_t i = 0; i < places.size(); ++i)
    if (places[i].shown)
      dl->AddText(ImVec2(float(places[i].x), float(places[i].y - value_at[i].h / 2)), kInk, values[i].c_str());
  std::vector<std::pair<std::string, ImU32>> entries;
  for (size_t k = 0; k < c.stacks.size(); ++k) entries.emplace_back(c.stacks[k], palette(k));
  if (!c.mark_meaning.empty()) entries.emplace_back("outlined: " + c.mark_meaning, kInk);
  legend(f, entries);
  if (hovered(f) && !tip.empty()) ImGui::SetTooltip("%s", tip.c_str());
}

void table(const views::View& v, const views::Table& t) {
  if (t.columns.empty()) return;
  if (!ImGui::BeginTable(v.id.c_str(), int(t.columns.size()), ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg)) return;
  for (const auto& c : t.columns) ImGui::TableSetupColumn(c.title.c_str());
  ImGui::TableHeadersRow();
  for (const auto& row : t.rows) {
    ImGui::TableNextRow();
    for (const auto& cell : row) {
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(cell.text.c_str());
    }
  }
  ImGui::EndTable();
}

}  // namespace

void HoverLink::next_frame() {
  row = next_row, col = next_col, active = next_active;
  next_active = false;
}

void plot(const views::View& v, HoverLink& link, float height) {
  const float w = std::max(ImGui::GetContentRegionAvail().x, 200.0f);
  ImGui::TextUnformatted(v.title.c_str());
  if (ImGui::IsItemHovered() && !v.note.empty()) ImGui::SetTooltip("%s", v.note.c_str());
  std::visit(
      [&](const auto& body) {
        using T = std::decay_t<decltype(body)>;
        if constexpr (std::is_same_v<T, views::Heatmap>) heatmap(v, body, link, w, height);
        else if constexpr (std::is_same_v<T, views::LineChart>) lines(v, body, w, height);
        else if constexpr (std::is_same_v<T, views::BarChart>) bars(v, body, w, height);
        else table(v, body);
      },
      v.body);
  ImGui::Spacing();
}

}  // namespace attnlab::gui
