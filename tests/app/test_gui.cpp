// attnlab-gui under Xvfb with Mesa's software OpenGL (scripts/install-deps.sh installs both): the
// --screenshot path runs the experiment, draws every panel once and writes a PNG of the requested size
// that is not blank; a tiny window does not crash it; a bad config is shown as an error in the window
// (the status line it prints says so) instead of ending the program.
#include "tests/catch.h"

#include <fmt/format.h>
#include <stb/stb_image.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace attnlab {
namespace {

namespace fs = std::filesystem;

struct Shot {
  int exit_code = -1;
  std::string output;  // stdout and stderr
  int w = 0, h = 0;
  double variance = 0;  // of the luminance
};

Shot screenshot(const std::string& args, const std::string& size, const std::string& name) {
  const fs::path dir = fs::path(ATTNLAB_TEST_TMP) / "gui";
  fs::create_directories(dir);
  const fs::path png = dir / (name + ".png"), log = dir / (name + ".log");
  fs::remove(png);
  const std::string cmd = fmt::format("xvfb-run -a -s '-screen 0 1920x1200x24' '{}' {} --size {} --screenshot '{}' > '{}' 2>&1",
                                      ATTNLAB_GUI_BINARY, args, size, png.string(), log.string());
  Shot s;
  const int raw = std::system(cmd.c_str());
  s.exit_code = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  std::ifstream f(log);
  std::stringstream ss;
  ss << f.rdbuf();
  s.output = ss.str();
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
  const Shot s = screenshot("--lesson progressive-quantization", "1280x800", "lesson");
  INFO(s.output);
  CHECK(s.exit_code == 0);
  CHECK(s.w == 1280);
  CHECK(s.h == 800);
  CHECK(s.variance > 200);  // a blank frame is one colour; panels, text and heatmaps give thousands
  CHECK(s.output.find("status: results shown") != std::string::npos);
}

TEST_CASE("attnlab-gui: a tiny window does not crash", "[gui]") {
  const Shot s = screenshot("--lesson online-softmax", "160x120", "tiny");
  INFO(s.output);
  CHECK(s.exit_code == 0);
  CHECK(s.w == 160);
  CHECK(s.h == 120);
}

TEST_CASE("attnlab-gui: a bad config is an error in the window, not an exit", "[gui]") {
  const fs::path bad = fs::path(ATTNLAB_TEST_TMP) / "gui" / "bad.json";
  fs::create_directories(bad.parent_path());
  std::ofstream(bad) << R"({"problem": {"batch": 0}, "variants": [{"id": "flash2"}]})";
  const Shot s = screenshot(fmt::format("--config '{}'", bad.string()), "900x600", "bad");
  INFO(s.output);
  CHECK(s.exit_code == 0);
  CHECK(s.w == 900);
  CHECK(s.variance > 100);
  CHECK(s.output.find("error: ") != std::string::npos);
  CHECK(s.output.find("problem.batch") != std::string::npos);  // the field, named
}

}  // namespace
}  // namespace attnlab
