#include "app/gui/app_state.h"

#include "app/report/results_file.h"
#include "core/error.h"

#include <fmt/format.h>

#include <cstdio>

namespace attnlab::gui {

AppState::AppState() : experiment(parse_experiment({{"variants", {{{"id", "flash2"}}}}})) {}

bool AppState::load(const std::string& path) {
  std::snprintf(path_buffer, sizeof(path_buffer), "%s", path.c_str());  // shown for fixing, loaded or not
  try {
    Experiment e = load_experiment(path);
    experiment = std::move(e);
    config_path = path;
    error.clear();
    lesson_base.reset();
    enlarged.clear();
    if (experiment.lesson) {  // a lesson opens at its first step
      lesson_base = experiment;
      lesson_step = 0;
      experiment = step_experiment(*lesson_base, 0);
      enlarged = lesson_base->lesson->steps[0].panel;
    }
    return true;
  } catch (const std::exception& ex) {  // InputError names the file and the field
    error = ex.what();
    return false;
  }
}

bool AppState::load_results(const std::string& path) {
  try {
    Results r = report::read_results(path, "--results");
    // Views first: they read the sidecar arrays they draw, and a missing or damaged one fails here,
    // naming its file, with what was shown kept.
    std::vector<views::View> built = views::chart_views(r, 128, channel_head);
    views::Table built_table = views::results_table(r);
    try {
      experiment = parse_experiment(r.config);  // its data file may not exist here: then the controls stay
      config_path.clear();
    } catch (const std::exception&) {
    }
    results = std::move(r);
    lesson_base.reset();
    enlarged.clear();
    results_from = report::results_file_of(path).string();
    views = std::move(built);
    table = std::move(built_table);
    trace_step = 0;
    device = views::gpu_line(results->environment);
    error.clear();
    return true;
  } catch (const std::exception& ex) {  // InputError names the option, the file and the field
    error = ex.what();
    return false;
  }
}

bool AppState::go_to_step(int k) {
  if (k < 0 || k >= lesson_steps()) {
    error = fmt::format("lesson: there is no step {} (it has {})", k + 1, lesson_steps());
    return false;
  }
  lesson_step = k;
  experiment = step_experiment(*lesson_base, size_t(k));  // checked when the lesson loaded
  enlarged = lesson_base->lesson->steps[size_t(k)].panel;
  trace_step = 0;
  if (worker.busy()) {  // the run under way is for another step: its results would mislead
    worker.cancel();
    rerun_ = true;
    return true;
  }
  run();
  return true;
}

void AppState::run() {
  if (worker.busy()) return;
  error.clear();
  worker.start(experiment);
}

void AppState::poll() {
  std::optional<Worker::Outcome> done = worker.take();
  if (!done) return;
  if (rerun_) {  // a lesson step was left while its run went on: run the step now shown instead
    rerun_ = false;
    run();
    return;
  }
  if (!done->results) {
    error = done->error;
    return;
  }
  results = std::move(done->results);
  results_from.clear();
  rebuild_views();
  table = views::results_table(*results);
  trace_step = 0;
  device = views::gpu_line(results->environment);
}

void AppState::rebuild_views() {
  if (!results) return;
  try {
    views = views::chart_views(*results, 128, channel_head);
  } catch (const std::exception& ex) {  // a sidecar array gone since the results were opened
    error = ex.what();
  }
}

}  // namespace attnlab::gui
