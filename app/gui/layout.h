// attnlab gui: where the panels of the main grid go — a pure function of which panels have something to
// show, so that it is tested without a window. Panels with nothing to show for the current run take no
// space: a lesson on the online softmax gets the results and the tile stepper at full size, not four
// "nothing recorded" panels over half the window.
#pragma once

#include <string>
#include <vector>

namespace attnlab::gui {

struct PanelCell {
  std::string name;
  float x = 0, y = 0, w = 0, h = 0;
  bool collapsed = false;  // drawn as its title bar only (focus_layout's strip)
};

struct GridPanel {
  std::string name;
  int span = 1;       // cells it takes in its row (the results table: 2)
  bool shown = true;  // false: nothing to show, no cell
};

// The shown panels in order, row by row, in the rectangle (x, y, w, h): one row while their cells number
// at most 4, else two, columns = ⌈cells / rows⌉; a panel never spans past its row's end (it moves down).
std::vector<PanelCell> grid_layout(const std::vector<GridPanel>& panels, float x, float y, float w, float h);

// One panel enlarged: `focus` takes the whole rectangle but a strip of height `strip` at its bottom, where
// the other shown panels sit side by side, collapsed to their title bars (a click brings one back). The
// focused panel is placed even when it has nothing to show — a lesson step points at it, and its empty
// state says why. A focus that names no panel gives grid_layout's cells.
std::vector<PanelCell> focus_layout(const std::vector<GridPanel>& panels, const std::string& focus, float x, float y,
                                    float w, float h, float strip);

}  // namespace attnlab::gui
