// attnlab gui: one panel of charts — every view (app/views/chart.h) whose panel is `panel`, drawn in
// order; heatmaps link their hovered (head, block) to each other.
#include "app/gui/panels.h"

#include <imgui.h>

#include <algorithm>
#include <string>

namespace attnlab::gui {

void draw_chart_panel(AppState& s, const char* panel) {
  if (std::string(panel) == "Channel outliers" && s.results) {  // the one panel with a view option
    const int heads = int(s.results->problem.value("batch", 1) * s.results->problem.value("kv_heads", 1));
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 6);
    if (ImGui::SliderInt("batch · KV head", &s.channel_head, 0, std::max(0, heads - 1), "%d", ImGuiSliderFlags_AlwaysClamp))
      s.rebuild_views();
  }
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
