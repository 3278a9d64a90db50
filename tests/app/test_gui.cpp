// attnlab-gui under Xvfb with Mesa's software OpenGL (scripts/install-deps.sh installs both): the
// --screenshot path runs the experiment, draws every panel once and writes a PNG of the requested size
// that is not blank; a tiny window does not crash it; a bad config is shown as an error in the window
// (the status line it prints says so) instead of ending the program.
#include "app/report/png_text.h"
#include "tests/catch.h"
#include "tests/support/run_program.h"

#include <fmt/format.h>
#include <stb/stb_image.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace attnlab {
namespace ATTNLAB_FILE_LOCAL {

namespace fs = std::filesystem;

struct Shot {
  int exit_code = -1;
  std::string output;  // stdout and stderr
  int w = 0, h = 0;
  double variance = 0;  // of the luminance
};

Shot screenshot(const std::vector<std::string>& args, const std::string& size, const std::string& name) {
  const fs::path dir = fs::path(ATTNLAB_TEST_TMP) / "gui";
  fs::create_directories(dir);
  const fs::path png = dir / (name + ".png"), log = dir / (name + ".log");
  fs::remove(png);
  std::vector<std::string> argv = {"xvfb-run", "-a", "-s", "-screen 0 1920x1200x24", ATTNLAB_GUI_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.insert(argv.end(), {"--size", size, "--screenshot", png.string()});
  const test::ProgramRun run = test::run_program(argv, log, 600);
  Shot s;
  s.exit_code = run.exit_code;
  s.output = run.output;
  int channels = 0;
  if (unsigned char* p = stbi_load(png.string().c_str(), &s.w, &s.h, &channels, 1)) {
    double sum = 0, sum2 = 0;
    for (int i = 0; i < s.w * s.h; ++i) sum += p[i], sum2 += double(p[i]) * p[i];
    const double n = double(s.w) * s.h, mean = sum / n;
    s.variance = sum2 / n - mean * mean;
    stbi_image_free(p);
  }
  return s;
}

TEST_CASE("attnlab-gui --screenshot: every panel drawn, the requested size, not blank", "[gui]") {
  const Shot s = screenshot({"--lesson", "progressive-quantization"}, "1280x800", "lesson");
  INFO(s.output);
  CHECK(s.exit_code == 0);
  CHECK(s.w == 1280);
  CHECK(s.h == 800);
  CHECK(s.variance > 200);  // a blank frame is one colour; panels, text and heatmaps give thousands
  CHECK(s.output.find("status: results shown") != std::string::npos);
}

TEST_CASE("attnlab-gui --results: an H100's saved results shown where no GPU is, saying where they came from", "[gui]") {
  const Shot s = screenshot({"--results", "tests/data/h100-fig6-decode"}, "1280x800", "results");
  INFO(s.output);
  CHECK(s.exit_code == 0);
  CHECK(s.variance > 200);
  CHECK(s.output.find("status: results shown from tests/data/h100-fig6-decode/results.json, computed on NVIDIA H100 80GB HBM3") !=
        std::string::npos);
  const Shot bad = screenshot({"--results", "tests/data/no-such-results"}, "640x400", "results-missing");
  INFO(bad.output);
  CHECK(bad.exit_code == 0);  // the window stays up with the error in its status line
  CHECK(bad.output.find("status: no results; error: ") != std::string::npos);
}

TEST_CASE("attnlab-gui: a tiny window does not crash", "[gui]") {
  const Shot s = screenshot({"--lesson", "online-softmax"}, "160x120", "tiny");
  INFO(s.output);
  CHECK(s.exit_code == 0);
  CHECK(s.w == 160);
  CHECK(s.h == 120);
}

TEST_CASE("attnlab-gui: a bad config is an error in the window, not an exit", "[gui]") {
  const fs::path bad = fs::path(ATTNLAB_TEST_TMP) / "gui" / "bad.json";
  fs::create_directories(bad.parent_path());
  std::ofstream(bad) << R"({"problem": {"batch": 0}, "variants": [{"id": "flash2"}]})";
  const Shot s = screenshot({"--config", bad.string()}, "900x600", "bad");
  INFO(s.output);
  CHECK(s.exit_code == 0);
  CHECK(s.w == 900);
  CHECK(s.variance > 100);
  CHECK(s.output.find("error: ") != std::string::npos);
  CHECK(s.output.find("problem.batch") != std::string::npos);  // the field, named
}

// --screenshot is an output path like any other (app/report/output_path.h): the config, a folder or a
// link is refused before a window opens (no display needed), exit code 2, one line, nothing written.
TEST_CASE("attnlab-gui --screenshot: the output rule, checked before anything runs", "[gui]") {
  const fs::path dir = fs::path(ATTNLAB_TEST_TMP) / "gui" / "refused";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "c.json") << R"({"problem": {"batch": 0}})";
  fs::create_symlink(dir / "c.json", dir / "link.png");
  for (const fs::path& shot : {dir / "c.json", dir, dir / "link.png", dir / "missing" / "s.png"}) {
    const test::ProgramRun run =
        test::run_program({ATTNLAB_GUI_BINARY, "--config", (dir / "c.json").string(), "--screenshot", shot.string()},
                          dir.parent_path() / "refused.log", 60);
    INFO(shot << ": " << run.output);
    CHECK(run.exit_code == 2);
    CHECK(run.output.rfind("attnlab-gui: error: --screenshot: ", 0) == 0);
    CHECK(std::count(run.output.begin(), run.output.end(), '\n') == 1);
  }
  CHECK(std::distance(fs::directory_iterator(dir), fs::directory_iterator()) == 2);  // c.json, link.png
}

// A file already at --screenshot is replaced only when it is a PNG attnlab wrote (its tEXt "Software" chunk
// names attnlab, app/report/png_text.h): someone's notes or picture are refused before a window opens, their
// bytes unchanged; a screenshot attnlab took before is replaced by a new file.
TEST_CASE("attnlab-gui --screenshot: someone else's file is refused, attnlab's own PNG replaced", "[gui]") {
  const fs::path dir = fs::path(ATTNLAB_TEST_TMP) / "gui" / "replace";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const auto read = [](const fs::path& p) {
    std::ifstream f(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
  };
  const std::string picture = std::string("\x89PNG\r\n\x1a\n", 8) + "someone's picture";
  for (const auto& [name, bytes] : {std::pair<std::string, std::string>{"notes.png", "my notes\n"}, {"picture.png", picture}}) {
    std::ofstream(dir / name, std::ios::binary) << bytes;
    const test::ProgramRun run = test::run_program(
        {ATTNLAB_GUI_BINARY, "--lesson", "online-softmax", "--screenshot", (dir / name).string()}, dir / "refused.log", 60);
    INFO(name << ": " << run.output);
    CHECK(run.exit_code == 2);
    CHECK(run.output.rfind("attnlab-gui: error: --screenshot: ", 0) == 0);
    CHECK(run.output.find("exists and is not a PNG attnlab wrote") != std::string::npos);
    CHECK(std::count(run.output.begin(), run.output.end(), '\n') == 1);
    CHECK(read(dir / name) == bytes);
  }
  const fs::path png = dir / "shot.png";
  ino_t inode = 0;
  for (int shot = 0; shot < 2; ++shot) {
    const test::ProgramRun run = test::run_program({"xvfb-run", "-a", "-s", "-screen 0 1920x1200x24", ATTNLAB_GUI_BINARY,
                                                    "--lesson", "online-softmax", "--size", "320x200", "--screenshot",
                                                    png.string()},
                                                   dir / "shot.log", 600);
    INFO("screenshot " << shot + 1 << ": " << run.output);
    REQUIRE(run.exit_code == 0);
    CHECK(report::has_attnlab_software(read(png)));
    int w = 0, h = 0, channels = 0;  // the text chunk leaves the picture readable
    unsigned char* p = stbi_load(png.string().c_str(), &w, &h, &channels, 3);
    CHECK(p != nullptr);
    stbi_image_free(p);
    CHECK(w == 320);
    struct stat st {};
    REQUIRE(stat(png.c_str(), &st) == 0);
    if (shot == 1) CHECK(st.st_ino != inode);  // a new file renamed over the first
    inode = st.st_ino;
  }
}

// What did not run is said in the status line, not only in a table: naive has no kernel anywhere, and on a
// machine without a GPU no kernel runs at all — either way the line names the kernel backend and the reason.
TEST_CASE("attnlab-gui: the status line says which backends did not run, and why", "[gui]") {
  const fs::path config = fs::path(ATTNLAB_TEST_TMP) / "gui" / "not-run.json";
  fs::create_directories(config.parent_path());
  std::ofstream(config) << R"({"problem": {"batch": 1, "q_heads": 2, "kv_heads": 2, "q_len": 64, "kv_len": 64, "head_dim": 64},
                               "variants": [{"id": "naive"}, {"id": "flash2"}], "backends": ["reference", "kernel"]})";
  const Shot s = screenshot({"--config", config.string()}, "1280x800", "not-run");
  INFO(s.output);
  REQUIRE(s.exit_code == 0);
  CHECK(s.output.find("status: results shown") != std::string::npos);
  CHECK(s.output.find("; not run: kernel") != std::string::npos);
}

// An error longer than the status line is wide wraps onto more lines instead of running off the window's
// edge: the red error text spans more than one line's height. At 640 px the status window is 460 px wide
// (main.cpp: the left column is 180 px), about 60 characters; the unknown variant id alone is 70.
TEST_CASE("attnlab-gui: a long error wraps in the status line", "[gui]") {
  const fs::path bad = fs::path(ATTNLAB_TEST_TMP) / "gui" / "long-error.json";
  fs::create_directories(bad.parent_path());
  std::ofstream(bad) << R"({"variants": [{"id": "an_unknown_variant_with_a_name_long_enough_to_need_more_than_one_line"}]})";
  const Shot s = screenshot({"--config", bad.string()}, "640x480", "long-error");
  INFO(s.output);
  REQUIRE(s.exit_code == 0);
  CHECK(s.output.find("an_unknown_variant") != std::string::npos);
  const fs::path png = fs::path(ATTNLAB_TEST_TMP) / "gui" / "long-error.png";
  int w = 0, h = 0, channels = 0;
  unsigned char* p = stbi_load(png.string().c_str(), &w, &h, &channels, 3);
  REQUIRE(p != nullptr);
  int top = h, bottom = -1;  // rows holding the error's red (0.75, 0.1, 0.1) text, right of the left column
  for (int y = 0; y < h / 2; ++y)
    for (int x = 180; x < w; ++x) {
      const unsigned char* px = p + 3 * (size_t(y) * w + x);
      if (px[0] > 140 && px[1] < 90 && px[2] < 90) top = std::min(top, y), bottom = std::max(bottom, y);
    }
  stbi_image_free(p);
  INFO(fmt::format("red text from row {} to row {}", top, bottom));
  REQUIRE(bottom >= 0);
  CHECK(bottom - top > 22);  // one line of the 15 px font spans at most 15 rows
}


// A lesson step: the screenshot's layout lines ("panel: NAME | x y w h | state") show the step's panel
// enlarged over more than half the window and every other panel collapsed; the step's change ran.
TEST_CASE("attnlab-gui --lesson --step: the step's panel enlarged, the others collapsed, its change run", "[gui]") {
  const Shot s = screenshot({"--lesson", "sas", "--step", "4"}, "1280x800", "lesson-step");
  INFO(s.output);
  REQUIRE(s.exit_code == 0);
  CHECK(s.variance > 200);
  CHECK(s.output.find("status: results shown") != std::string::npos);
  CHECK(s.output.find("lesson: step 4 of 6, panel SAS, set turbo.n_r = -3") != std::string::npos);
  int enlarged = 0, collapsed = 0;
  std::istringstream lines(s.output);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("panel: ", 0) != 0) continue;
    const std::string name = line.substr(7, line.find(" | ") - 7);
    float x = 0, y = 0, w = 0, h = 0;
    std::sscanf(line.c_str() + line.find(" | ") + 3, "%f %f %f %f", &x, &y, &w, &h);
    if (line.find("| enlarged") != std::string::npos) {
      ++enlarged;
      CHECK(name == "SAS");
      CHECK(w * h > 0.5f * 1280 * 800);
    } else {
      CHECK(line.find("| collapsed") != std::string::npos);
      CHECK(h < 40);  // a title bar
      ++collapsed;
    }
  }
  CHECK(enlarged == 1);
  CHECK(collapsed >= 3);  // the results table and the other panels SAS's run fills
}

// --step is checked before a window opens: a step the lesson does not have, or a config without a lesson,
// is one line on stderr and exit code 2.
TEST_CASE("attnlab-gui --step: out of range or without a lesson, refused", "[gui]") {
  const fs::path log = fs::path(ATTNLAB_TEST_TMP) / "gui" / "step.log";
  fs::create_directories(log.parent_path());
  for (const auto& args : std::vector<std::vector<std::string>>{{"--lesson", "sas", "--step", "7"},
                                                                 {"--lesson", "sas", "--step", "0"},
                                                                 {"--config", "configs/default.json", "--step", "1"}}) {
    std::vector<std::string> argv{ATTNLAB_GUI_BINARY};
    argv.insert(argv.end(), args.begin(), args.end());
    const test::ProgramRun run = test::run_program(argv, log, 60);
    INFO(run.output);
    CHECK(run.exit_code == 2);
    CHECK(run.output.rfind("attnlab-gui: error: --step: ", 0) == 0);
    CHECK(std::count(run.output.begin(), run.output.end(), '\n') == 1);
  }
}

}  // namespace
}  // namespace attnlab
