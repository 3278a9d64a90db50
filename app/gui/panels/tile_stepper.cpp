// attnlab gui: the tile stepper — draws views::stepper_view: the traced row block Qᵢ of one variant
// walking its KV loop (App. D): tiles on chip, running max and sum, the tiles' scales, bytes so far, and
// the cost model's count for one tile beside them. Space steps; Play steps twice a second; choosing
// another head or row block re-runs (the trace is recorded during the run).
#include "app/gui/panels.h"

#include "app/views/axis.h"
#include "app/views/stepper.h"

#include <fmt/format.h>
#include <imgui.h>

#include <algorithm>

namespace attnlab::gui {

namespace {

void choose_slice(AppState& s) {
  Experiment& e = s.experiment;
  int head = int(e.probe.head), batch = int(e.probe.batch);
  bool last = e.probe.row_block == ProbeRequest::kLastRowBlock;
  // Any index a variant may have: B_r can be as small as 1 (turbo); a variant with fewer, larger row
  // blocks traces its last (core/probes.h traced_row_block), which the stepper's heading then names.
  const int blocks = int(std::max<int64_t>(1, e.problem.q_len));
  int row_block = last ? blocks - 1 : int(std::min<int64_t>(e.probe.row_block, blocks - 1));
  const float w = ImGui::GetFontSize() * 4;
  ImGui::SetNextItemWidth(w);
  bool changed = ImGui::DragInt("head", &head, 0.1f, 0, int(e.problem.q_heads) - 1, "%d", ImGuiSliderFlags_AlwaysClamp);
  ImGui::SameLine();
  ImGui::SetNextItemWidth(w);
  changed |= ImGui::DragInt("batch", &batch, 0.1f, 0, int(e.problem.batch) - 1, "%d", ImGuiSliderFlags_AlwaysClamp);
  ImGui::SameLine();
  ImGui::SetNextItemWidth(w);
  changed |= ImGui::Checkbox("last row block", &last);
  if (!last) {
    ImGui::SameLine();
    ImGui::SetNextItemWidth(w);
    changed |= ImGui::DragInt("row block", &row_block, 0.1f, 0, blocks - 1, "%d", ImGuiSliderFlags_AlwaysClamp);
  }
  if (changed) e.probe = {batch, head, last ? ProbeRequest::kLastRowBlock : int64_t(row_block)};
  ImGui::SameLine();
  if (ImGui::SmallButton("trace") && !s.worker.busy()) s.run();
}

}  // namespace

void draw_tile_stepper(AppState& s) {
  static int chosen = 0;  // the variant traced
  const std::vector<std::string> traced = s.results ? views::traced_variants(*s.results) : std::vector<std::string>{};
  if (traced.empty()) return ImGui::TextWrapped("%s", s.results ? "no variant of this run records a trace" : "no results yet");
  chosen = std::clamp(chosen, 0, int(traced.size()) - 1);
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 9);
  if (ImGui::BeginCombo("variant", traced[size_t(chosen)].c_str())) {
    for (size_t i = 0; i < traced.size(); ++i)
      if (ImGui::Selectable(traced[i].c_str(), int(i) == chosen)) chosen = int(i), s.trace_step = 0;
    ImGui::EndCombo();
  }
  choose_slice(s);
  const std::optional<views::StepperView> view = views::stepper_view(*s.results, traced[size_t(chosen)], s.trace_step);
  if (!view) return ImGui::TextUnformatted("the traced row block sees no key");
  const views::StepperView& v = *view;

  // Stepping: the slider, Play, and the space bar (unless a text field has the keyboard).
  const ImGuiIO& io = ImGui::GetIO();
  if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Space)) && !io.WantTextInput) s.trace_step = (v.step + 1) % v.steps;
  if (s.playing && (s.play_clock -= io.DeltaTime) <= 0) s.trace_step = (v.step + 1) % v.steps, s.play_clock = 0.5;
  if (ImGui::Button(s.playing ? "Pause" : "Play")) s.playing = !s.playing, s.play_clock = 0.5;
  ImGui::SameLine();
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 10);
  ImGui::SliderInt("step (space)", &s.trace_step, 0, v.steps - 1, "%d", ImGuiSliderFlags_AlwaysClamp);

  // The KV tiles of this row block: loaded before (grey), on chip now (orange), not yet (outline).
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const float em = ImGui::GetFontSize(), box = em * 1.4f;
  const ImVec2 at = ImGui::GetCursorScreenPos();
  ImGui::Dummy(ImVec2(float(v.steps) * (box + 3) + 4 * em, box + 4));
  dl->AddText(ImVec2(at.x, at.y + box * 0.2f), IM_COL32(30, 30, 30, 255), "K/V:");
  for (int i = 0; i < v.steps; ++i) {
    const ImVec2 a(at.x + 3 * em + float(i) * (box + 3), at.y), z(a.x + box, a.y + box);
    if (i < v.step) dl->AddRectFilled(a, z, IM_COL32(180, 180, 180, 255));
    else if (i == v.step) dl->AddRectFilled(a, z, IM_COL32(230, 159, 0, 255));
    dl->AddRect(a, z, IM_COL32(60, 60, 60, 255));
  }
  ImGui::TextWrapped("Q block %lld (rows %lld–%lld of batch %lld, head %lld), B_r = %lld, B_c = %lld; KV tile %lld on chip "
                     "with Q_i",
                     (long long)v.row_block, (long long)v.first_row, (long long)(v.first_row + v.rows - 1),
                     (long long)v.batch, (long long)v.head, (long long)v.block_r, (long long)v.block_c,
                     (long long)v.kv_tile);
  if (ImGui::BeginTable("stepper", 4, ImGuiTableFlags_Borders)) {
    for (const char* c : {"row", "running max m", "running sum ℓ", "m grew this step"}) ImGui::TableSetupColumn(c);
    ImGui::TableHeadersRow();
    for (const auto& r : v.rows_shown) {
      ImGui::TableNextRow();
      ImGui::TableNextColumn(), ImGui::Text("%lld", (long long)r.row);
      ImGui::TableNextColumn(), ImGui::TextUnformatted(views::tick_label(r.m).c_str());
      ImGui::TableNextColumn(), ImGui::TextUnformatted(views::tick_label(r.l).c_str());
      ImGui::TableNextColumn(), ImGui::TextUnformatted(r.m_changed ? "yes: ℓ and O rescaled" : "no");
    }
    ImGui::EndTable();
  }
  std::string scales;
  for (const auto& sc : v.scales)
    scales += (scales.empty() ? "" : " · ") + sc.name + " " + views::tick_label(sc.lo) +
              (sc.per_token ? "…" + views::tick_label(sc.hi) + " (per token)" : "");
  if (!scales.empty()) ImGui::TextWrapped("scales on chip: %s", scales.c_str());
  ImGui::Text("bytes loaded by this CTA so far: %s", views::tick_label(v.bytes_so_far).c_str());
  if (!v.model_tile.empty() && ImGui::BeginTable("accounting", 3, ImGuiTableFlags_Borders | ImGuiTableFlags_SizingFixedFit)) {
    ImGui::TableSetupColumn("");
    ImGui::TableSetupColumn(fmt::format("reference, this step (B_c = {})", v.block_c).c_str());
    ImGui::TableSetupColumn(fmt::format("model, one tile (B_c = {})", v.model_block_c).c_str());
    ImGui::TableHeadersRow();
    for (const auto& r : v.model_tile) {
      ImGui::TableNextRow();
      ImGui::TableNextColumn(), ImGui::TextUnformatted(r.what.c_str());
      ImGui::TableNextColumn();
      if (r.what == "K/V bytes")
        ImGui::TextUnformatted((views::tick_label(v.bytes_this_step) + (v.step == 0 ? " (with Q_i)" : "")).c_str());
      ImGui::TableNextColumn(), ImGui::TextUnformatted(views::tick_label(r.value).c_str());
    }
    ImGui::EndTable();
    ImGui::TextWrapped("model (%s): tiles from the %s; bound by %s", v.model_gpu.c_str(), v.model_tiles_from.c_str(),
                       v.model_bound.c_str());
  }
}

}  // namespace attnlab::gui
