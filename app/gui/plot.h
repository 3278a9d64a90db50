// attnlab gui: one chart view (app/views/chart.h) drawn with ImGui — heatmap with colour bar, stacked
// bars, lines with axes, ticks and legend, tables — with hover tooltips. Hovering a heatmap cell links
// it: every heatmap outlines the same (batch·head, column) in the next frame.
#pragma once

#include "app/views/chart.h"

#include <string>

namespace attnlab::gui {

struct HoverLink {
  std::string row;  // "b0 h3" of the cell hovered last frame
  int64_t col = -1;  // its first source column
  bool active = false;
  std::string next_row;  // written while drawing this frame
  int64_t next_col = -1;
  bool next_active = false;
  void next_frame();  // call once per frame, before drawing
};

// Draws `v` filling the available width, `height` pixels tall (tables take their own height).
void plot(const views::View& v, HoverLink& link, float height);

}  // namespace attnlab::gui
