// attnlab gui: the lesson panel — a guided tour (core/lesson.h): "step k of n", the step's text, the paper
// figure it follows, what it changed; Back / Next (← / →) move between steps, each re-running the
// experiment with the step's change and enlarging the step's panel.
#include "app/gui/panels.h"

#include <imgui.h>

namespace attnlab::gui {

void draw_lesson_panel(AppState& s) {
  if (!s.experiment.title.empty()) ImGui::TextWrapped("%s", s.experiment.title.c_str());
  const int n = s.lesson_steps();
  if (n == 0) return;
  const int k = s.lesson_step;
  const LessonStep& step = s.lesson_base->lesson->steps[size_t(k)];
  const bool keys = !ImGui::GetIO().WantTextInput;  // arrows edit a text field that has the keyboard
  ImGui::BeginDisabled(k == 0);
  if (ImGui::Button("< Back") || (keys && k > 0 && ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_LeftArrow))))
    s.go_to_step(k - 1);
  ImGui::EndDisabled();
  ImGui::SameLine();
  ImGui::Text("step %d of %d", k + 1, n);
  ImGui::SameLine();
  ImGui::BeginDisabled(k + 1 == n);
  if (ImGui::Button("Next >") || (keys && k + 1 < n && ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_RightArrow))))
    s.go_to_step(k + 1);
  ImGui::EndDisabled();
  ImGui::Separator();
  ImGui::TextWrapped("%s", step.text.c_str());
  ImGui::Spacing();
  if (!step.figure.empty()) ImGui::TextWrapped("Paper: %s", step.figure.c_str());
  ImGui::TextWrapped("Look at: %s%s", step.panel.c_str(), s.enlarged == step.panel ? "" : " (double-click its title)");
  if (!step.set.empty()) ImGui::TextWrapped("This step runs with %s", describe_change(step).c_str());
}

}  // namespace attnlab::gui
