// The GUI's state without a window: a run on the background thread delivers Results and views; a bad
// config, an unreadable data file or a cancel leaves the previous results in place with a readable error.
#include "app/gui/app_state.h"
#include "app/gui/layout.h"
#include "tests/catch.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>
#include <variant>

namespace attnlab::gui {
namespace ATTNLAB_FILE_LOCAL {

namespace fs = std::filesystem;

// Polls until the run has ended (at most a minute).
void finish(AppState& s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  while (s.worker.busy() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  REQUIRE_FALSE(s.worker.busy());
  s.poll();
}

TEST_CASE("gui state: a run delivers Results, views and the results table", "[gui-state]") {
  AppState s;
  REQUIRE(s.load("configs/lessons/head-priority.json"));
  s.run();
  finish(s);
  REQUIRE(s.results.has_value());
  CHECK(s.error.empty());
  CHECK_FALSE(s.views.empty());
  CHECK(s.table.rows.size() == 1);  // turbo × reference
  // The status line's GPU (views::gpu_line): the machine's GPU where there is one, else "none" — the
  // lesson does not ask for the kernels, so there is no reason to give.
  CHECK(s.device == (s.results->environment.gpu ? *s.results->environment.gpu : std::string("none")));
  s.channel_head = 5;
  s.rebuild_views();
  const auto it = std::find_if(s.views.begin(), s.views.end(), [](const views::View& v) { return v.id == "channels"; });
  REQUIRE(it != s.views.end());
  CHECK(it->title.find("KV head 5") != std::string::npos);
}

TEST_CASE("gui state: a bad config or data file keeps the previous results and says why", "[gui-state]") {
  AppState s;
  REQUIRE(s.load("configs/lessons/online-softmax.json"));
  s.run();
  finish(s);
  REQUIRE(s.results.has_value());
  const double before = s.results->variants.at(0).reference->time_ms;

  const fs::path dir = fs::path(ATTNLAB_TEST_TMP) / "gui_state";
  fs::create_directories(dir);
  std::ofstream(dir / "bad.json") << R"({"variants": [{"id": "flash2", "params": {"block_c": 7}}]})";
  CHECK_FALSE(s.load((dir / "bad.json").string()));
  CHECK(s.error.find("variants[0].params.block_c") != std::string::npos);  // the field, named
  CHECK(s.experiment.variants.size() == 2);                    // the loaded experiment is untouched
  REQUIRE(s.results.has_value());
  CHECK(s.results->variants.at(0).reference->time_ms == before);

  fs::create_directories(dir / "broken");
  std::ofstream(dir / "broken" / "q.npy") << "not a numpy file";
  s.experiment.data.file = (dir / "broken").string();  // as if the file changed on disk after loading
  s.run();
  finish(s);
  CHECK_FALSE(s.error.empty());
  REQUIRE(s.results.has_value());
  CHECK(s.results->variants.at(0).reference->time_ms == before);
}

TEST_CASE("gui state: Cancel stops a run and keeps what was shown", "[gui-state]") {
  AppState s;
  REQUIRE(s.load("configs/lessons/sas.json"));
  s.experiment.problem.q_len = s.experiment.problem.kv_len = 4096;  // long enough to cancel mid-way
  s.run();
  s.worker.cancel();
  finish(s);
  CHECK(s.error == "cancelled");
  CHECK_FALSE(s.results.has_value());
}

TEST_CASE("gui state: saved kernel results load with their measured views; a bad file keeps what was shown", "[gui-state]") {
  AppState s;
  REQUIRE(s.load_results("tests/data/h100-fig6-decode"));
  REQUIRE(s.results);
  CHECK(s.results_from == "tests/data/h100-fig6-decode/results.json");
  CHECK(s.device == "NVIDIA H100 80GB HBM3");
  CHECK(s.results->variants.size() == 4);
  for (const auto& v : s.results->variants) CHECK(v.kernel.has_value());
  const auto roofline = std::find_if(s.views.begin(), s.views.end(), [](const views::View& v) { return v.id == "roofline"; });
  REQUIRE(roofline != s.views.end());
  const auto& chart = std::get<views::LineChart>(roofline->body);
  const auto measured = std::find_if(chart.series.begin(), chart.series.end(),
                                     [](const views::Series& x) { return x.name == "measured (kernel)"; });
  REQUIRE(measured != chart.series.end());
  CHECK(measured->x.size() == 4);  // one measured point per variant
  CHECK(std::any_of(s.views.begin(), s.views.end(), [](const views::View& v) { return v.id == "model_vs_measured"; }));
  CHECK(s.experiment.problem.kv_len == 32768);  // the experiment panel took the saved config

  CHECK_FALSE(s.load_results("tests/data/no-such-results"));
  CHECK(s.error.find("no-such-results") != std::string::npos);
  CHECK(s.results_from == "tests/data/h100-fig6-decode/results.json");  // still showing the last good results
}

TEST_CASE("gui layout: panels with nothing to show take no space; the rest fill the grid", "[gui-state]") {
  auto inside = [](const gui::PanelCell& c) { return c.x >= 100 && c.y >= 50 && c.x + c.w <= 900.001f && c.y + c.h <= 650.001f; };
  auto overlap = [](const gui::PanelCell& a, const gui::PanelCell& b) {
    return a.x < b.x + b.w - 1e-3f && b.x < a.x + a.w - 1e-3f && a.y < b.y + b.h - 1e-3f && b.y < a.y + a.h - 1e-3f;
  };
  std::vector<gui::GridPanel> all{{"Results", 2, true}, {"A", 1, true}, {"B", 1, true}, {"C", 1, true},
                                  {"D", 1, true},       {"E", 1, true}, {"Stepper", 1, true}};
  const auto full = gui::grid_layout(all, 100, 50, 800, 600);  // 8 cells: 2 rows of 4
  REQUIRE(full.size() == 7);
  CHECK(full[0].w == Approx(400));  // the results table spans two of four columns
  CHECK(full[1].w == Approx(200));
  CHECK(full[6].h == Approx(300));
  double area = 0;
  for (size_t i = 0; i < full.size(); ++i) {
    CHECK(inside(full[i]));
    area += double(full[i].w) * full[i].h;
    for (size_t j = 0; j < i; ++j) CHECK_FALSE(overlap(full[i], full[j]));
  }
  CHECK(area == Approx(800.0 * 600.0));  // no hole

  // The online-softmax lesson: only the results and the tile stepper have something to show.
  for (size_t i = 1; i <= 5; ++i) all[i].shown = false;
  const auto lesson = gui::grid_layout(all, 100, 50, 800, 600);
  REQUIRE(lesson.size() == 2);
  CHECK(lesson[0].name == "Results");
  CHECK(lesson[1].name == "Stepper");
  CHECK(lesson[1].h == Approx(600));  // one row: the stepper gets the full height
  CHECK(lesson[1].w == Approx(800.0 / 3));
  CHECK_FALSE(overlap(lesson[0], lesson[1]));

  for (auto& p : all) p.shown = false;
  CHECK(gui::grid_layout(all, 100, 50, 800, 600).empty());
}

}  // namespace
}  // namespace attnlab::gui
