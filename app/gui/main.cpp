// attnlab-gui: the workbench window. Loads a config (or a lesson), runs it on a background thread, and
// shows every panel at once: the experiment controls and lesson on the left, the status line on top,
// the results table and the chart panels in a grid.
//
//   attnlab-gui [--config F | --lesson NAME [--step K]] [--screenshot FILE] [--size WxH] [--ui-scale S]
//
// A lesson opens at step 1 (or K): the step's panel enlarged, the others collapsed to a strip; Next/Back
// (→/←) in the Lesson panel. Any panel enlarges on a double-click on its title; Esc returns to the grid.
// --screenshot runs the experiment, renders one frame with all panels, writes it as a PNG, prints the
// status line (what ran, the last error), the lesson step and each panel's place on stdout and exits 0 —
// a bad config included: the error is in the picture, not an exit code.
#include "app/gui/app_state.h"
#include "app/gui/layout.h"
#include "app/gui/panels.h"
#include "app/gui/screenshot.h"
#include "app/cli/commands.h"
#include "app/report/output_path.h"
#include "app/report/results_file.h"
#include "app/views/stepper.h"
#include "app/views/table.h"
#include "core/error.h"

#include <CLI/CLI.hpp>
#include <GLFW/glfw3.h>
#include <fmt/format.h>
#include <imgui.h>
#include <imgui_impl_glfw.h>
#include <imgui_impl_opengl3.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <regex>
#include <vector>

namespace {

namespace fs = std::filesystem;
using namespace attnlab;

// The glyphs the labels use beyond Latin: Greek, sub/superscripts, ℓ, arrows, maths, ●.
const ImWchar kGlyphs[] = {0x0020, 0x00FF, 0x0370, 0x03FF, 0x2000, 0x206F, 0x2070, 0x209F, 0x2100, 0x214F,
                           0x2190, 0x21FF, 0x2200, 0x22FF, 0x25A0, 0x25FF, 0};

void load_font(float scale) {
  ImGuiIO& io = ImGui::GetIO();
  const char* dejavu = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";  // fonts-dejavu-core
  if (fs::exists(dejavu) && io.Fonts->AddFontFromFileTTF(dejavu, 15.0f * scale, nullptr, kGlyphs)) return;
  ImFontConfig c;
  c.SizePixels = 13.0f * scale;
  io.Fonts->AddFontDefault(&c);
}

// Windows placed every frame: a fixed layout (no docking in ImGui 1.86) that fits any window size.
void place(const char* name, float x, float y, float w, float h) {
  ImGui::SetNextWindowPos(ImVec2(x, y), ImGuiCond_Always);
  ImGui::SetNextWindowSize(ImVec2(std::max(w, 40.0f), std::max(h, 40.0f)), ImGuiCond_Always);
  ImGui::Begin(name, nullptr,
               ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoResize | ImGuiWindowFlags_NoCollapse | ImGuiWindowFlags_HorizontalScrollbar);
}

// A double-click on the current window's title bar enlarges it, or, enlarged already, returns to the grid.
void enlarge_on_double_click(gui::AppState& s, const std::string& name) {
  const ImVec2 at = ImGui::GetWindowPos(), mouse = ImGui::GetIO().MousePos;
  const bool on_title = mouse.x >= at.x && mouse.x < at.x + ImGui::GetWindowWidth() && mouse.y >= at.y &&
                        mouse.y < at.y + ImGui::GetFrameHeight();
  if (on_title && ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left)) s.enlarged = s.enlarged == name ? "" : name;
}

// Draws every window; returns where the grid's panels went (printed with --screenshot, for tests).
std::vector<gui::PanelCell> draw_all(gui::AppState& s, float W, float H) {
  const float left = std::clamp(W * 0.24f, 180.0f, 420.0f);
  const float status = gui::status_line_height(s, W - left, H * 0.4f);
  const bool lesson = s.lesson_steps() > 0;
  place("Experiment", 0, 0, left, lesson ? H * 0.55f : H);
  gui::draw_experiment_panel(s);
  ImGui::End();
  if (lesson) {
    place("Lesson", 0, H * 0.55f, left, H * 0.45f);
    gui::draw_lesson_panel(s);
    ImGui::End();
  }
  place("Status", left, 0, W - left, status);
  gui::draw_status_line(s);
  ImGui::End();
  if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape)) && !ImGui::GetIO().WantTextInput) s.enlarged.clear();
  // The grid (gui/layout.h), in core/lesson.h's panel order: before the first run every panel, after it
  // only those with something to show for it — or one panel enlarged over the rest.
  std::vector<gui::GridPanel> grid;
  for (const std::string& name : kPanels) {
    const bool shown = !s.results || name == "Results" ||
                       (name == "Tile stepper" ? !views::traced_variants(*s.results).empty()
                                               : std::any_of(s.views.begin(), s.views.end(), [&](const views::View& v) { return v.panel == name; }));
    grid.push_back({name, name == "Results" ? 2 : 1, shown});
  }
  const std::vector<gui::PanelCell> cells = gui::focus_layout(grid, s.enlarged, left, status, W - left, H - status, ImGui::GetFrameHeight());
  for (const gui::PanelCell& c : cells) {
    ImGui::SetNextWindowCollapsed(c.collapsed, ImGuiCond_Always);
    place(c.name.c_str(), c.x, c.y, c.w, c.h);
    if (c.collapsed) ImGui::PushStyleVar(ImGuiStyleVar_Alpha, 0.6f);  // dimmed: not the one to look at now
    enlarge_on_double_click(s, c.name);
    if (c.collapsed) ImGui::PopStyleVar();
    else if (c.name == "Results") gui::draw_results_table(s);
    else if (c.name == "Tile stepper") gui::draw_tile_stepper(s);
    else gui::draw_chart_panel(s, c.name.c_str());
    ImGui::End();
  }
  return cells;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"attnlab-gui: the quantized-attention workbench"};
  std::string config, lesson, results, screenshot, size = "1600x1000";
  float ui_scale = 1.0f;
  int step = 0;
  app.add_option("--config", config, "experiment config (JSON); default: configs/default.json");
  app.add_option("--lesson", lesson, "open configs/lessons/NAME.json");
  app.add_option("--step", step, "open the lesson at step K (1-based)");
  app.add_option("--results", results, "show saved results (a results.json or its folder) instead of running");
  app.add_option("--screenshot", screenshot, "run, render one frame with all panels to this PNG, exit");
  app.add_option("--size", size, "window size WxH")->check([](const std::string& v) {
    return std::regex_match(v, std::regex(R"(\d{2,5}x\d{2,5})")) ? "" : "expected WxH, e.g. 1600x1000";
  });
  app.add_option("--ui-scale", ui_scale, "scale of fonts and widgets")->check(CLI::Range(0.5, 4.0));
  CLI11_PARSE(app, argc, argv);
  const int W = std::stoi(size.substr(0, size.find('x'))), H = std::stoi(size.substr(size.find('x') + 1));
  if (config.empty())
    config = lesson.empty() ? cli::configs_dir() + "/default.json" : cli::configs_dir() + "/lessons/" + lesson + ".json";
  const bool stepped = app.count("--step") > 0;
  if (stepped) {  // before a window opens: the lesson must load and have step K
    try {
      const Experiment e = load_experiment(config);
      const size_t n = e.lesson ? e.lesson->steps.size() : 0;
      if (n == 0) throw InputError(fmt::format("--step: {} has no lesson", echo_path(config)));
      if (step < 1 || size_t(step) > n)
        throw InputError(fmt::format("--step: {} is out of range: {} has steps 1 to {}", step, echo_path(config), n));
    } catch (const InputError& e) {
      const std::string what = e.what();
      std::fprintf(stderr, "attnlab-gui: error: %s%s\n", what.rfind("--step", 0) == 0 ? "" : "--step: ", one_line(what).c_str());
      return 2;
    }
  }
  if (!screenshot.empty()) {  // before any work: the path may be written (app/report/output_path.h)
    try {
      std::vector<fs::path> inputs{config};
      if (!results.empty()) inputs.push_back(report::results_file_of(results));
      report::check_output_file(screenshot, {"--screenshot", inputs, false}, report::OutputKind::screenshot_png);
    } catch (const InputError& e) {
      std::fprintf(stderr, "attnlab-gui: error: %s\n", one_line(e.what()).c_str());
      return 2;
    }
  }

  if (!glfwInit()) {
    std::fprintf(stderr, "attnlab-gui: no display (GLFW could not initialise); use `attnlab report` instead\n");
    return 1;
  }
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 0);
  glfwWindowHint(GLFW_RESIZABLE, screenshot.empty() ? GLFW_TRUE : GLFW_FALSE);
  GLFWwindow* window = glfwCreateWindow(W, H, "attnlab", nullptr, nullptr);
  if (!window) {
    std::fprintf(stderr, "attnlab-gui: could not open an OpenGL 3 window\n");
    glfwTerminate();
    return 1;
  }
  glfwMakeContextCurrent(window);
  glfwSwapInterval(1);
  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  ImGui::GetIO().IniFilename = nullptr;  // the layout is fixed; nothing to remember
  ImGui::StyleColorsLight();
  ImGui::GetStyle().ScaleAllSizes(ui_scale);
  load_font(ui_scale);
  ImGui_ImplGlfw_InitForOpenGL(window, true);
  ImGui_ImplOpenGL3_Init("#version 130");

  gui::AppState state;
  if (!results.empty()) state.load_results(results);  // a bad file shows its error; the window stays up
  else if (state.load(config)) stepped ? void(state.go_to_step(step - 1)) : state.run();  // a bad config likewise

  const auto started = std::chrono::steady_clock::now();
  int settle = -1;  // screenshot: frames still to draw after the run finished
  int status = 0;
  while (!glfwWindowShouldClose(window)) {
    if (screenshot.empty()) glfwWaitEventsTimeout(state.worker.busy() || state.playing ? 0.05 : 0.5);
    else glfwPollEvents();
    state.poll();
    state.link.next_frame();
    ImGui_ImplOpenGL3_NewFrame();
    ImGui_ImplGlfw_NewFrame();
    ImGui::NewFrame();
    int fw = 0, fh = 0;
    glfwGetFramebufferSize(window, &fw, &fh);
    const std::vector<gui::PanelCell> cells = draw_all(state, float(fw), float(fh));
    ImGui::Render();
    glViewport(0, 0, fw, fh);
    glClearColor(0.94f, 0.94f, 0.94f, 1);
    glClear(GL_COLOR_BUFFER_BIT);
    ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
    if (!screenshot.empty()) {
      const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      if (settle < 0 && (!state.worker.busy() || waited > 300)) settle = 3;  // let the layout settle
      if (settle == 0) {
        const std::string why = gui::write_screenshot(screenshot, fw, fh);
        if (!why.empty()) std::fprintf(stderr, "attnlab-gui: %s\n", why.c_str()), status = 1;
        // The status line's GPU: the one that ran, or why the kernels did not (views::gpu_line).
        const std::string from = !state.results                ? ""
                                 : state.results_from.empty() ? "; GPU: " + state.device
                                                              : " from " + state.results_from + ", computed on " + state.device;
        const std::string not_run = state.results ? views::not_run_line(state.results->environment) : "";
        std::printf("status: %s%s%s%s\n", state.results ? "results shown" : "no results", from.c_str(),
                    not_run.empty() ? "" : ("; not run: " + not_run).c_str(),
                    state.error.empty() ? "" : ("; error: " + state.error).c_str());
        if (state.lesson_steps() > 0) {
          const LessonStep& shown = state.lesson_base->lesson->steps[size_t(state.lesson_step)];
          std::printf("lesson: step %d of %d, panel %s%s\n", state.lesson_step + 1, state.lesson_steps(), shown.panel.c_str(),
                      shown.set.empty() ? "" : (", set " + describe_change(shown)).c_str());
        }
        for (const gui::PanelCell& c : cells)  // where each panel went: the tests read the layout from here
          std::printf("panel: %s | %.0f %.0f %.0f %.0f | %s\n", c.name.c_str(), c.x, c.y, c.w, c.h,
                      c.collapsed ? "collapsed" : c.name == state.enlarged ? "enlarged" : "shown");
        break;
      }
      if (settle > 0) --settle;
    }
    glfwSwapBuffers(window);
  }
  state.worker.cancel();
  ImGui_ImplOpenGL3_Shutdown();
  ImGui_ImplGlfw_Shutdown();
  ImGui::DestroyContext();
  glfwDestroyWindow(window);
  glfwTerminate();
  return status;
}
