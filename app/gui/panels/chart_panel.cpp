// attnlab gui: one panel of charts — every view (app/views/chart.h) whose panel is `panel`, drawn in
// order; heatmaps link their hovered (head, block) to each other.
#include "app/gui/panels.h"

#include <imgui.h>

namespace attnlab::gui {

void draw_chart_panel(AppState& s, const char* panel) {
  const float height = std::max(ImGui::GetFontSize() * 12, ImGui::GetContentRegionAvail().y * 0.8f);
  bool any = false;
  for (const auto& v : s.views)
    if (v.panel == panel) {
      plot(v, s.link, height);
      any = true;
    }
  if (!any)
    ImGui::TextWrapped("%s", s.results ? "none of this run's variants records what this panel shows"
                                       : "no results yet");
}

}  // namespace attnlab::gui
