// attnlab gui: the status line — which backends ran and on what, which did not and why, the run's progress, the
// last error.
// The error wraps at the window's width (it names a field and a rule, often longer than one line) and the
// window grows to show it whole (status_line_height).
#include "app/gui/panels.h"
#include "app/views/data_views.h"

#include <fmt/format.h>
#include <imgui.h>

#include <algorithm>
#include <string>
#include <vector>

namespace attnlab::gui {

namespace {

std::string error_text(const AppState& s) { return "error: " + s.error; }

// What the run was asked for and did not do (a backend, or one variant on a backend), with the reasons:
// said in the status line, before any number is read. "" when everything asked for ran.
std::string not_run_text(const AppState& s) {
  if (!s.results) return "";
  const std::string line = views::not_run_line(s.results->environment);
  return line.empty() ? "" : "not run: " + line;
}

// The lines below the first one, wrapped as draw_status_line wraps them: what did not run, the last error.
std::vector<std::string> wrapped_lines(const AppState& s) {
  std::vector<std::string> lines;
  if (std::string n = not_run_text(s); !n.empty()) lines.push_back(std::move(n));
  if (!s.error.empty()) lines.push_back(error_text(s));
  return lines;
}

}  // namespace

float status_line_height(const AppState& s, float width, float max_height) {
  const float one_line = ImGui::GetFontSize() * 3.4f;  // the title bar and one line (a progress bar fits)
  const std::vector<std::string> lines = wrapped_lines(s);
  if (lines.empty()) return std::min(one_line, max_height);
  // The title bar, the padding, the first line (as high as a progress bar), the other lines wrapped as
  // draw_status_line wraps them.
  const ImGuiStyle& style = ImGui::GetStyle();
  const float wrap = std::max(width - 2 * style.WindowPadding.x, 1.0f);
  float h = 2 * ImGui::GetFrameHeight() + 2 * style.WindowPadding.y;
  for (const auto& line : lines) h += style.ItemSpacing.y + ImGui::CalcTextSize(line.c_str(), nullptr, false, wrap).y;
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
  if (const std::string not_run = not_run_text(s); !not_run.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(0.6f, 0.35f, 0.0f, 1));
    ImGui::PushTextWrapPos(0.0f);
    ImGui::TextUnformatted(not_run.c_str());
    ImGui::PopTextWrapPos();
    ImGui::PopStyleColor();
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
