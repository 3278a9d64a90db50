// attnlab gui: the panels, one draw function each (app/gui/panels/<name>.cpp). Each draws into the
// current ImGui window; main.cpp places the windows.
#pragma once

#include "app/gui/app_state.h"

namespace attnlab::gui {

void draw_experiment_panel(AppState& s);  // problem, data, backends, GPU model, variants, run/cancel
void draw_status_line(AppState& s);       // backends that ran and did not (why), device, progress, last error
// The height the status window needs at `width` to show what did not run and the whole error (wrapped), at
// most max_height.
float status_line_height(const AppState& s, float width, float max_height);
void draw_results_table(AppState& s);     // variants × metrics × backends, sortable
// Every view of one panel ("Block scales", "Channel outliers", "Head priority", "SAS", "HBM traffic").
void draw_chart_panel(AppState& s, const char* panel);
void draw_tile_stepper(AppState& s);      // step/play through the KV loop of the traced row block
void draw_lesson_panel(AppState& s);      // the lesson's explanation, when the config has one

}  // namespace attnlab::gui
