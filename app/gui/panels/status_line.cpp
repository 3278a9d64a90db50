// attnlab gui: the status line — which backends ran and on what, the run's progress, the last error.
// The error wraps at the window's width (it names a field and a rule, often longer than one line) and the
// window grows to show it whole (status_line_height).
#include "app/gui/panels.h"
#include "app/views/data_views.h"

#include <fmt/format.h>
#include <imgui.h>

#include <algorithm>

namespace attnlab::gui {

namespace {

std::string error_text(const AppState& s) { return "error: " + s.error; }

}  // namespace

float status_line_height(const AppState& s, float width, float max_height) {
  const float one_line = ImGui::GetFontSize() * 3.4f;  // the title bar and one line (a progress bar fits)
  if (s.error.empty()) return std::min(one_line, max_height);
  // The title bar, the padding, the first line (as high as a progress bar), the error wrapped as
  // draw_status_line wraps it.
  const ImGuiStyle& style = ImGui::GetStyle();
  const float wrap = std::max(width - 2 * style.WindowPadding.x, 1.0f);
  const float h = 2 * ImGui::GetFrameHeight() + 2 * style.WindowPadding.y + style.ItemSpacing.y +
                  ImGui::CalcTextSize(error_text(s).c_str(), nullptr, false, wrap).y;
  return std::min(std::max(h, one_line), max_height);
}

void draw_status_line(AppState& s) {
  if (s.worker.busy()) {
    ImGui::ProgressBar(float(s.worker.progress()), ImVec2(ImGui::GetFontSize() * 14, 0), s.worker.stage().c_str());
    ImGui::SameLine();
  }
  if (s.results) {
    const auto& env = s.results->environment;
    const std::string ran = views::ran_line(env);
    if (s.results_from.empty()) {
      ImGui::Text("ran: %s · GPU: %s · %d threads · %s", ran.c_str(), s.device.c_str(), env.threads,
                  views::data_line(*s.results, false).c_str());
    } else {  // computed elsewhere: say where, and on what
      ImGui::Text("results from %s · computed by %s on %s (%s, %d threads, attnlab %s)", s.results_from.c_str(),
                  ran.c_str(), s.device.c_str(), env.cpu.c_str(), env.threads, env.version.c_str());
    }
  } else if (!s.worker.busy()) {
    ImGui::TextUnformatted("no results yet: press Run");
  }
  if (!s.error.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(0.75f, 0.1f, 0.1f, 1));
    ImGui::PushTextWrapPos(0.0f);  // wrap at the window's right edge
    ImGui::TextUnformatted(error_text(s).c_str());
    ImGui::PopTextWrapPos();
    ImGui::PopStyleColor();
  }
}

}  // namespace attnlab::gui
