// attnlab gui: the results table (views::results_table: variants × backends × metrics), sortable by any
// column — numbers by value, text by text — with its legend line under it.
#include "app/gui/panels.h"

#include <imgui.h>

#include <algorithm>
#include <cmath>

namespace attnlab::gui {

void draw_results_table(AppState& s) {
  const views::Table& t = s.table;
  if (t.columns.empty()) return ImGui::TextUnformatted("no results yet");
  const ImGuiTableFlags flags = ImGuiTableFlags_Sortable | ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg |
                                ImGuiTableFlags_ScrollX | ImGuiTableFlags_ScrollY | ImGuiTableFlags_Resizable;
  // The legend (what the empty cells mean, which machine each time column is from) stays under the table: the
  // table scrolls in what is left above it.
  const float wrap = ImGui::GetContentRegionAvail().x;
  const float legend_h = t.legend.empty() ? 0.0f
                                          : ImGui::CalcTextSize(t.legend.c_str(), nullptr, false, wrap).y +
                                                ImGui::GetStyle().ItemSpacing.y;
  if (!ImGui::BeginTable("results", int(t.columns.size()), flags, ImVec2(0, -legend_h))) return;
  for (const auto& c : t.columns)
    ImGui::TableSetupColumn((c.unit.empty() ? c.title : c.title + " (" + c.unit + ")").c_str());
  ImGui::TableSetupScrollFreeze(1, 1);
  ImGui::TableHeadersRow();
  std::vector<size_t> order(t.rows.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  if (const ImGuiTableSortSpecs* specs = ImGui::TableGetSortSpecs(); specs && specs->SpecsCount > 0) {
    const int col = specs->Specs[0].ColumnIndex;
    const bool up = specs->Specs[0].SortDirection == ImGuiSortDirection_Ascending;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      const views::Cell &x = t.rows[a][size_t(col)], &y = t.rows[b][size_t(col)];
      const bool numbers = !std::isnan(x.value) && !std::isnan(y.value);
      const bool less = numbers ? x.value < y.value : x.text < y.text;
      const bool more = numbers ? y.value < x.value : y.text < x.text;
      return up ? less : more;
    });
  }
  for (size_t i : order) {
    ImGui::TableNextRow();
    for (const auto& cell : t.rows[i]) {
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(cell.text.c_str());
    }
  }
  ImGui::EndTable();
  if (!t.legend.empty()) ImGui::TextWrapped("%s", t.legend.c_str());
}

}  // namespace attnlab::gui
