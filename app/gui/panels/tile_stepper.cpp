// attnlab gui: the tile stepper — the traced row block Qᵢ of one variant walking its KV loop (App. D):
// which tiles are on chip, the running max m and sum ℓ of three of its rows, the bytes loaded so far, and
// the cost model's tiling beside them. Space steps; Play steps twice a second.
#include "app/gui/panels.h"

#include "app/views/axis.h"

#include <fmt/format.h>
#include <imgui.h>

#include <algorithm>

namespace attnlab::gui {

namespace {

const ProbeArray* probe(const VariantResult& v, const char* name) {
  if (!v.reference) return nullptr;
  const auto it = v.reference->probes.find(name);
  return it == v.reference->probes.end() ? nullptr : &it->second;
}

}  // namespace

void draw_tile_stepper(AppState& s) {
  static int chosen = 0;  // the variant traced
  std::vector<const VariantResult*> traced;
  if (s.results)
    for (const auto& v : s.results->variants)
      if (probe(v, "trace.m") && probe(v, "trace.l") && probe(v, "trace.hbm_bytes")) traced.push_back(&v);
  if (traced.empty()) return ImGui::TextWrapped("%s", s.results ? "no variant of this run records a trace" : "no results yet");
  chosen = std::clamp(chosen, 0, int(traced.size()) - 1);
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 9);
  if (ImGui::BeginCombo("variant", traced[size_t(chosen)]->label.c_str())) {
    for (size_t i = 0; i < traced.size(); ++i)
      if (ImGui::Selectable(traced[i]->label.c_str(), int(i) == chosen)) chosen = int(i), s.trace_step = 0;
    ImGui::EndCombo();
  }
  // The traced slice is recorded during a run: choosing another head or row block runs again.
  {
    Experiment& e = s.experiment;
    int head = int(e.probe.head), batch = int(e.probe.batch), row_block = int(e.probe.row_block);
    const int blocks = std::max(1, int((e.problem.q_len + 15) / 16));  // the finest B_r any variant may use
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 4);
    bool changed = ImGui::DragInt("head", &head, 0.1f, 0, int(e.problem.q_heads) - 1, "%d", ImGuiSliderFlags_AlwaysClamp);
    ImGui::SameLine();
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 4);
    changed |= ImGui::DragInt("batch", &batch, 0.1f, 0, int(e.problem.batch) - 1, "%d", ImGuiSliderFlags_AlwaysClamp);
    ImGui::SameLine();
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 4);
    changed |= ImGui::DragInt("row block", &row_block, 0.1f, 0, blocks - 1, "%d", ImGuiSliderFlags_AlwaysClamp);
    if (changed) e.probe = {batch, head, row_block};
    ImGui::SameLine();
    if (ImGui::SmallButton("trace") && !s.worker.busy()) s.run();
  }
  const VariantResult& v = *traced[size_t(chosen)];
  const ProbeArray &m = *probe(v, "trace.m"), &l = *probe(v, "trace.l"), &bytes = *probe(v, "trace.hbm_bytes");
  const int steps = int(m.shape.at(0)), rows = int(m.shape.at(1));
  if (steps == 0) return ImGui::TextUnformatted("the traced row block sees no key");

  // Stepping: the slider, Play, and the space bar (unless a text field has the keyboard).
  const ImGuiIO& io = ImGui::GetIO();
  if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Space)) && !io.WantTextInput) s.trace_step = (s.trace_step + 1) % steps;
  if (s.playing && (s.play_clock -= io.DeltaTime) <= 0) s.trace_step = (s.trace_step + 1) % steps, s.play_clock = 0.5;
  ImGui::SameLine();
  if (ImGui::Button(s.playing ? "Pause" : "Play")) s.playing = !s.playing, s.play_clock = 0.5;
  ImGui::SameLine();
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 10);
  ImGui::SliderInt("step (space)", &s.trace_step, 0, steps - 1, "%d", ImGuiSliderFlags_AlwaysClamp);
  const int j = std::clamp(s.trace_step, 0, steps - 1);

  // The KV tiles of this row block: loaded before (grey), on chip now (orange), not yet (outline).
  const ProbeArray* block = probe(v, "trace.block");
  const ProbeArray* tile_ids = probe(v, "trace.kv_tile");
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const float em = ImGui::GetFontSize(), box = em * 1.4f;
  const ImVec2 at = ImGui::GetCursorScreenPos();
  ImGui::Dummy(ImVec2(float(steps) * (box + 3) + 4 * em, box + 4));
  dl->AddText(ImVec2(at.x, at.y + box * 0.2f), IM_COL32(30, 30, 30, 255), "K/V:");
  for (int i = 0; i < steps; ++i) {
    const ImVec2 a(at.x + 3 * em + float(i) * (box + 3), at.y), z(a.x + box, a.y + box);
    if (i < j) dl->AddRectFilled(a, z, IM_COL32(180, 180, 180, 255));
    else if (i == j) dl->AddRectFilled(a, z, IM_COL32(230, 159, 0, 255));
    dl->AddRect(a, z, IM_COL32(60, 60, 60, 255));
  }
  if (block && block->values.size() >= 7)
    ImGui::Text("Q block %d (rows %d–%d of head %d), B_r = %d, B_c = %d; KV tile %d on chip with Q_i",
                int(block->values[2]), int(block->values[3]), int(block->values[3] + block->values[4] - 1),
                int(block->values[1]), int(block->values[5]), int(block->values[6]),
                tile_ids ? int(tile_ids->values[size_t(j)]) : j);

  if (ImGui::BeginTable("stepper", 4, ImGuiTableFlags_Borders)) {
    ImGui::TableSetupColumn("row");
    ImGui::TableSetupColumn("running max m");
    ImGui::TableSetupColumn("running sum ℓ");
    ImGui::TableSetupColumn("m changed this step");
    ImGui::TableHeadersRow();
    for (int r : {0, rows / 2, rows - 1}) {
      const double mj = m.values[size_t(j * rows + r)], lj = l.values[size_t(j * rows + r)];
      const bool changed = j > 0 && m.values[size_t((j - 1) * rows + r)] != mj;
      ImGui::TableNextRow();
      ImGui::TableNextColumn(), ImGui::Text("%d", r);
      ImGui::TableNextColumn(), ImGui::TextUnformatted(views::tick_label(mj).c_str());
      ImGui::TableNextColumn(), ImGui::TextUnformatted(views::tick_label(lj).c_str());
      ImGui::TableNextColumn(), ImGui::TextUnformatted(changed ? "yes: ℓ and O rescaled" : "no");
    }
    ImGui::EndTable();
  }
  // The scales of the tiles on chip now: Q_i's and K_j's/V_j's, from the scale probes (one per block, or
  // one per token: then the range over the tile's tokens).
  if (block && block->values.size() >= 7) {
    const int64_t b = int64_t(block->values[0]), h = int64_t(block->values[1]), i = int64_t(block->values[2]);
    const int64_t br = int64_t(block->values[5]), bc = int64_t(block->values[6]);
    const int64_t kv_j = tile_ids ? int64_t(tile_ids->values[size_t(j)]) : j;
    const int64_t q_heads = s.results->problem.value("q_heads", int64_t(1)), kv_heads = s.results->problem.value("kv_heads", int64_t(1));
    const int64_t q_len = s.results->problem.value("q_len", int64_t(1)), kv_len = s.results->problem.value("kv_len", int64_t(1));
    auto describe = [&](const char* name, int64_t head, int64_t heads, int64_t index, int64_t span, int64_t len) -> std::string {
      const ProbeArray* a = probe(v, name);
      if (!a || a->shape.size() != 3) return "";
      const int64_t n = a->shape[2];
      const double* row = a->values.data() + (b * heads + head) * n;
      if (n == len) {  // per token: the range over this tile's tokens
        const int64_t lo = index * span, hi = std::min(len, lo + span);
        if (lo >= hi) return "";
        const auto [mn, mx] = std::minmax_element(row + lo, row + hi);
        return fmt::format("{} {}…{} (per token)", name, views::tick_label(*mn), views::tick_label(*mx));
      }
      return index < n ? fmt::format("{} {}", name, views::tick_label(row[index])) : "";
    };
    const int64_t kvh = h / std::max<int64_t>(1, q_heads / kv_heads);
    std::string scales;
    for (const std::string& part : {describe("scales.q", h, q_heads, i, br, q_len), describe("scales.k", kvh, kv_heads, kv_j, bc, kv_len),
                                    describe("scales.v", kvh, kv_heads, kv_j, bc, kv_len)})
      if (!part.empty()) scales += (scales.empty() ? "" : " · ") + part;
    if (!scales.empty()) ImGui::TextWrapped("scales on chip: %s", scales.c_str());
  }
  ImGui::Text("bytes loaded by this CTA so far: %s", views::tick_label(bytes.values[size_t(std::min(j, int(bytes.values.size()) - 1))]).c_str());
  // This step's bytes (the reference's trace: Q_i with the first tile) beside the model's count for one
  // full KV tile of one CTA (its tile shape can differ: the model follows the kernel's traits).
  const double now = bytes.values[size_t(std::min(j, int(bytes.values.size()) - 1))];
  const double step_bytes = j == 0 ? now : now - bytes.values[size_t(j - 1)];
  if (v.model && v.model->details.contains("per_tile") &&
      ImGui::BeginTable("accounting", 3, ImGuiTableFlags_Borders | ImGuiTableFlags_SizingFixedFit)) {
    const nlohmann::json& d = v.model->details;
    const nlohmann::json& t = d["per_tile"];
    double model_bytes = 0;
    for (const auto& [_, b] : t["bytes"].items()) model_bytes += b.get<double>();
    ImGui::TableSetupColumn("");
    ImGui::TableSetupColumn(block && block->values.size() >= 7
                                ? fmt::format("reference (B_c = {})", int(block->values[6])).c_str()
                                : "reference");
    ImGui::TableSetupColumn(fmt::format("model, per tile (B_c = {})", d.value("block_c", 0)).c_str());
    ImGui::TableHeadersRow();
    auto row = [](const char* what, const std::string& ref, const std::string& model) {
      ImGui::TableNextRow();
      ImGui::TableNextColumn(), ImGui::TextUnformatted(what);
      ImGui::TableNextColumn(), ImGui::TextUnformatted(ref.c_str());
      ImGui::TableNextColumn(), ImGui::TextUnformatted(model.c_str());
    };
    row("K/V bytes this step", views::tick_label(step_bytes) + (j == 0 ? " (with Q_i)" : ""), views::tick_label(model_bytes));
    if (j == 0) row("Q_i bytes", "", views::tick_label(t.value("q_block_bytes", 0.0)));
    for (const auto& [unit, n] : t["ops"].items()) row(unit.c_str(), "", views::tick_label(n.get<double>()));
    ImGui::EndTable();
    ImGui::TextWrapped("model (%s): %s; bound by %s", v.model->gpu.c_str(), d.value("tiles_from", std::string("?")).c_str(),
                       v.model->bound.c_str());
  }
}

}  // namespace attnlab::gui
