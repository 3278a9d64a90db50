// A lesson in the GUI's state, without a window: it opens at step 1 with that step's panel enlarged;
// stepping applies the step's change (and only that step's) and re-runs, cancelling a run left behind;
// focus_layout gives the enlarged panel most of the grid and collapses the others to a strip.
#include "app/gui/app_state.h"
#include "app/gui/layout.h"
#include "tests/catch.h"

#include <algorithm>
#include <chrono>
#include <thread>

namespace attnlab::gui {
namespace ATTNLAB_FILE_LOCAL {

// Polls until no run is under way and the last one's outcome was taken (a cancelled step's outcome starts
// the shown step's run), at most a minute.
void finish(AppState& s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  while (std::chrono::steady_clock::now() < deadline) {
    if (!s.worker.busy()) {
      s.poll();
      if (!s.worker.busy()) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  REQUIRE_FALSE(s.worker.busy());
}

int64_t n_r_of(const Results& r) { return r.variants.at(0).params.at("n_r").get<int64_t>(); }

TEST_CASE("gui lesson: Next and Back apply each step's change, re-run and enlarge the step's panel", "[gui-state]") {
  AppState s;
  REQUIRE(s.load("configs/lessons/sas.json"));
  CHECK(s.lesson_steps() == 6);
  CHECK(s.lesson_step == 0);
  CHECK(s.enlarged == "SAS");  // step 1 looks at the SAS panel
  s.run();
  finish(s);
  CHECK(n_r_of(*s.results) == -6);

  REQUIRE(s.go_to_step(3));  // step 4: n_r = −3, the SAS panel
  finish(s);
  CHECK(s.experiment.variants[0].params.integer("n_r") == -3);
  CHECK(n_r_of(*s.results) == -3);
  CHECK(s.enlarged == "SAS");

  REQUIRE(s.go_to_step(2));  // Back: step 3 changes nothing, so the config's n_r returns
  finish(s);
  CHECK(n_r_of(*s.results) == -6);
  CHECK(s.enlarged == "Results");

  // Stepping while a run is under way: that run is cancelled and the step now shown is the one that runs.
  s.results.reset();
  s.experiment.problem.q_len = s.experiment.problem.kv_len = 4096;  // long enough to still be running
  s.run();
  REQUIRE(s.go_to_step(5));  // n_r = −10, at the lesson's own size
  finish(s);
  REQUIRE(s.results);
  CHECK(s.error.empty());
  CHECK(n_r_of(*s.results) == -10);
  CHECK(s.results->problem.value("kv_len", 0) == 512);

  CHECK_FALSE(s.go_to_step(6));
  CHECK(s.error.find("no step 7") != std::string::npos);
  CHECK(s.lesson_step == 5);

  REQUIRE(s.load("configs/default.json"));  // not a lesson: no steps, nothing enlarged
  CHECK(s.lesson_steps() == 0);
  CHECK(s.enlarged.empty());
}

TEST_CASE("gui layout: the enlarged panel takes most of the grid, the others a strip of title bars", "[gui-state]") {
  const std::vector<GridPanel> panels{{"Results", 2, true}, {"A", 1, true}, {"B", 1, false}, {"Stepper", 1, true}};
  const auto cells = focus_layout(panels, "B", 100, 50, 800, 600, 20);  // B has nothing to show: still enlarged
  REQUIRE(cells.size() == 4);  // B, then the shown ones in order: Results, A, Stepper
  CHECK(cells[0].name == "B");
  CHECK_FALSE(cells[0].collapsed);
  CHECK(cells[0].w * cells[0].h > 0.9 * 800 * 600);
  for (size_t i = 1; i < cells.size(); ++i) {
    CHECK(cells[i].collapsed);
    CHECK(cells[i].h == Approx(20));
    CHECK(cells[i].y == Approx(50 + 600 - 20));
  }
  CHECK(cells[1].name == "Results");
  CHECK(cells[2].name == "A");
  CHECK(cells[3].name == "Stepper");
  // No such panel: the plain grid.
  const auto grid = focus_layout(panels, "", 100, 50, 800, 600, 20);
  CHECK(grid.size() == 3);
  CHECK(std::none_of(grid.begin(), grid.end(), [](const PanelCell& c) { return c.collapsed; }));
}

}  // namespace
}  // namespace attnlab::gui
