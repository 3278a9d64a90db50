// attnlab gui: what the window shows and edits — the experiment the controls change, the last Results
// and the views built from them, the last error, the background run, the linked hover, the tile stepper.
#pragma once

#include "app/gui/plot.h"
#include "app/gui/worker.h"
#include "app/views/chart.h"
#include "app/views/table.h"
#include "core/config.h"

#include <optional>
#include <string>
#include <vector>

namespace attnlab::gui {

struct AppState {
  AppState();             // starts from a valid experiment (flash2, every default), so the controls always
                          // have values to show, even when the first config fails to load
  Experiment experiment;  // what the controls edit; runs start from a copy
  std::string config_path;
  std::optional<Results> results;  // the last finished run (kept when a later run or load fails)
  std::string results_from;        // the file the results were read from; "" when this window ran them
  std::vector<views::View> views;  // chart_views(*results)
  views::Table table;              // results_table(*results)
  std::string error;               // the last error, one line (status line); "" when none
  std::string device;              // the GPU, or why there is none
  Worker worker;
  HoverLink link;
  int channel_head = 0;   // Channel outliers: the batch · KV heads + KV head whose ranges are drawn
  int trace_step = 0;     // tile stepper: the KV-tile step shown
  bool playing = false;   // tile stepper: advancing by itself
  double play_clock = 0;  // seconds until the next step while playing
  char path_buffer[1024] = {};
  // A lesson (core/lesson.h): the config as loaded, whose step `lesson_step` (0-based) the experiment is.
  std::optional<Experiment> lesson_base;
  int lesson_step = 0;
  // The panel drawn over most of the grid, the others collapsed to a strip: a lesson step's panel, or
  // one the user enlarged (double-click its title); "" for the plain grid (Esc).
  std::string enlarged;

  // Loads and validates a config; on error keeps the current experiment and results and sets `error`.
  bool load(const std::string& path);
  // Shows saved results (a results.json or its folder: attnlab run --save, a report folder) computed
  // elsewhere; the experiment panel takes their config where it parses here. On error keeps what was
  // shown and sets `error`.
  bool load_results(const std::string& path);
  // Lessons: the experiment becomes step k's (core/lesson.h step_experiment), its panel is enlarged and it
  // runs — a run still going for the step left behind is cancelled first. False, with `error`, for a k
  // out of range.
  bool go_to_step(int k);
  int lesson_steps() const { return lesson_base ? int(lesson_base->lesson->steps.size()) : 0; }
  void run();   // starts a background run of `experiment` (no-op while one runs)
  void poll();  // takes a finished run's Results or error
  void rebuild_views();  // after a view option (channel_head) changed

 private:
  bool rerun_ = false;  // go_to_step cancelled a run: start the shown step's once it has stopped
};

}  // namespace attnlab::gui
