// attnlab gui: the lesson text of a config from configs/lessons/ — what to look at, which paper figure.
#include "app/gui/panels.h"

#include <imgui.h>

namespace attnlab::gui {

void draw_lesson_panel(AppState& s) {
  const nlohmann::json& l = s.experiment.lesson;
  if (!s.experiment.title.empty()) ImGui::TextWrapped("%s", s.experiment.title.c_str());
  ImGui::Separator();
  if (l.is_object()) {
    ImGui::TextWrapped("%s", l.value("text", "").c_str());
    if (l.contains("figure")) ImGui::TextWrapped("Paper: %s", l["figure"].get<std::string>().c_str());
    if (l.contains("panel")) ImGui::TextWrapped("Look at: %s", l["panel"].get<std::string>().c_str());
  } else if (!s.experiment.description.empty()) {
    ImGui::TextWrapped("%s", s.experiment.description.c_str());
  }
}

}  // namespace attnlab::gui
