// The report as a browser sees it: headless Chromium (installed by scripts/install-deps.sh) renders
// index.html to a non-blank image, and prints it to report.pdf for --pdf.
#include "app/report/report.h"
#include "tests/catch.h"
#include "tests/support/run_program.h"
#include "tests/support/sample_results.h"

#include <fmt/format.h>
#include <stb/stb_image.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace attnlab::report {
namespace ATTNLAB_FILE_LOCAL {

namespace fs = std::filesystem;

std::string read(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The page as a browser draws it: headless Chromium (installed by scripts/install-deps.sh) screenshots
// index.html; the image must have the window's size and not be blank (its luminance varies).
TEST_CASE("report: headless Chromium renders index.html to a non-blank image", "[report][browser]") {
  const Results r = test::small_results();
  const fs::path dir = fs::path(ATTNLAB_TEST_TMP) / "report_browser";
  fs::remove_all(dir);
  write_report(r, dir);
  const fs::path png = dir / "shot.png";
  const test::ProgramRun run = test::run_program(
      {"chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--hide-scrollbars",
       "--window-size=1000,1400", "--screenshot=" + png.string(), file_url(fs::absolute(dir / "index.html"))},
      dir / "chromium.log", 300);
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  int w = 0, h = 0, channels = 0;
  unsigned char* pixels = stbi_load(png.string().c_str(), &w, &h, &channels, 1);
  REQUIRE(pixels != nullptr);
  CHECK(w == 1000);
  CHECK(h == 1400);
  double sum = 0, sum2 = 0;
  for (int i = 0; i < w * h; ++i) sum += pixels[i], sum2 += double(pixels[i]) * pixels[i];
  stbi_image_free(pixels);
  const double mean = sum / (w * h), variance = sum2 / (w * h) - mean * mean;
  INFO(fmt::format("luminance mean {:.1f}, variance {:.1f}", mean, variance));
  CHECK(variance > 100);  // a blank page is one colour: variance 0; text, tables and charts give thousands
}

TEST_CASE("report --pdf: headless Chromium prints index.html to report.pdf", "[report][browser]") {
  const fs::path dir = fs::path(ATTNLAB_TEST_TMP) / "report_pdf";
  fs::remove_all(dir);
  write_report(test::small_results(), dir, ReportRequest{true, "report folder", {}});
  const std::string pdf = read(dir / "report.pdf");
  CHECK(pdf.rfind("%PDF-", 0) == 0);
  CHECK(pdf.size() > 10000);
  CHECK_FALSE(fs::exists(dir / "chromium.log"));
  CHECK_FALSE(fs::exists(dir / ".chromium-profile"));
}

// Chromium is started from an argument vector: a folder name full of shell syntax is only a name, and
// the file:// URL carries it percent-encoded.
TEST_CASE("report --pdf: a folder named with shell syntax is printed, nothing is run", "[report][browser]") {
  const fs::path base = fs::path(ATTNLAB_TEST_TMP) / "report_pdf_odd";
  fs::remove_all(base);
  fs::create_directories(base);
  const fs::path dir = base / "r';touch INJECTED;' $(touch INJECTED2) #?%";
  write_report(test::small_results(), dir, ReportRequest{true, "report folder", {}});
  CHECK(read(dir / "report.pdf").rfind("%PDF-", 0) == 0);
  for (const auto& e : fs::directory_iterator(base)) CHECK(e.path() == dir);  // nothing else appeared
  CHECK_FALSE(fs::exists("INJECTED"));
  CHECK_FALSE(fs::exists("INJECTED2"));
}

}  // namespace
}  // namespace attnlab::report
