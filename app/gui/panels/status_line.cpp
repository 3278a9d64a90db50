// attnlab gui: the status line — which backends ran and on what, the run's progress, the last error.
#include "app/gui/panels.h"

#include <fmt/format.h>
#include <imgui.h>

namespace attnlab::gui {

void draw_status_line(AppState& s) {
  if (s.worker.busy()) {
    ImGui::ProgressBar(float(s.worker.progress()), ImVec2(ImGui::GetFontSize() * 14, 0), s.worker.stage().c_str());
    ImGui::SameLine();
  }
  if (s.results) {
    const auto& env = s.results->environment;
    std::string ran;
    for (const auto& b : env.ran) ran += (ran.empty() ? "" : ", ") + b;
    ImGui::Text("ran: %s · GPU: %s · %d threads", ran.c_str(), s.device.c_str(), env.threads);
  } else if (!s.worker.busy()) {
    ImGui::TextUnformatted("no results yet: press Run");
  }
  if (!s.error.empty()) {
    ImGui::SameLine();
    ImGui::TextColored(ImVec4(0.75f, 0.1f, 0.1f, 1), "error: %s", s.error.c_str());
  }
}

}  // namespace attnlab::gui
