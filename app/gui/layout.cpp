#include "app/gui/layout.h"

#include <algorithm>

namespace attnlab::gui {

std::vector<PanelCell> grid_layout(const std::vector<GridPanel>& panels, float x, float y, float w, float h) {
  int cells = 0;
  for (const GridPanel& p : panels)
    if (p.shown) cells += std::max(1, p.span);
  if (cells == 0) return {};
  const int rows = cells <= 4 ? 1 : 2;
  const int cols = (cells + rows - 1) / rows;
  // The widest panel must fit a row.
  int widest = 1;
  for (const GridPanel& p : panels)
    if (p.shown) widest = std::max(widest, p.span);
  const int columns = std::max(cols, widest);
  const float cw = w / float(columns), ch = h / float(rows);
  std::vector<PanelCell> out;
  int row = 0, col = 0;
  for (const GridPanel& p : panels) {
    if (!p.shown) continue;
    const int span = std::min(std::max(1, p.span), columns);
    if (col + span > columns) ++row, col = 0;
    out.push_back({p.name, x + float(col) * cw, y + float(row) * ch, float(span) * cw, ch});
    col += span;
  }
  // Fewer rows used than planned (wide panels wrapped early or late): stretch them to the full height.
  const int used = row + 1;
  if (used != rows)
    for (PanelCell& c : out) c.y = y + (c.y - y) / ch * (h / float(used)), c.h = h / float(used);
  return out;
}

std::vector<PanelCell> focus_layout(const std::vector<GridPanel>& panels, const std::string& focus, float x, float y,
                                    float w, float h, float strip) {
  if (std::none_of(panels.begin(), panels.end(), [&](const GridPanel& p) { return p.name == focus; }))
    return grid_layout(panels, x, y, w, h);
  std::vector<const GridPanel*> rest;
  for (const GridPanel& p : panels)
    if (p.shown && p.name != focus) rest.push_back(&p);
  const float band = rest.empty() ? 0.0f : std::min(strip, h / 2);
  std::vector<PanelCell> out{{focus, x, y, w, h - band, false}};
  for (size_t i = 0; i < rest.size(); ++i) {
    const float cw = w / float(rest.size());
    out.push_back({rest[i]->name, x + float(i) * cw, y + h - band, cw, band, true});
  }
  return out;
}

}  // namespace attnlab::gui
