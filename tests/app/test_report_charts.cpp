// The report's charts: SVG elements per view kind, and a self-contained index.html with a chart in every
// view's section and a CSV per view (test_report_browser.cpp renders it in headless Chromium).
#include "app/report/html.h"
#include "app/report/report.h"
#include "app/report/svg.h"
#include "app/views/chart.h"
#include "tests/catch.h"
#include "tests/support/sample_results.h"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

namespace attnlab::report {
namespace ATTNLAB_FILE_LOCAL {

namespace fs = std::filesystem;

int64_t count(const std::string& s, const std::string& what) {
  int64_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

std::string read(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

TEST_CASE("render_svg: a heatmap cell per value with its numbers, a colour bar, escaped labels", "[report]") {
  views::Heatmap h;
  h.rows = 2, h.cols = 3, h.values = {1, 2, 3, 4, 5, 6}, h.row_names = {"b0 <h0>", "b0 h1"};
  h.x = {"block", ""}, h.value_label = "scale";
  const std::string svg = render_svg({"t", "Block scales", "a & b", "", h});
  CHECK(svg.rfind("<svg", 0) == 0);
  CHECK(count(svg, "<title>") == 6);        // one tooltip per cell
  CHECK(count(svg, "width=\"14\"") == 40);  // the colour bar's steps
  CHECK(svg.find("b0 &lt;h0&gt;") != std::string::npos);
  CHECK(svg.find("<h0>") == std::string::npos);
  CHECK(svg.find("aria-label=\"a &amp; b\"") != std::string::npos);
}

TEST_CASE("render_svg: one polyline per line series, circles for points, a legend entry each", "[report]") {
  views::LineChart c;
  c.x = {"x", ""}, c.y = {"y", "ms"};
  c.series = {{"one", {0, 1, 2}, {1, 2, 3}}, {"two", {0, 1, 2}, {3, 2, 1}}, {"pts", {1, 2}, {2, 2}, true}};
  const std::string svg = render_svg({"t", "p", "title", "", c});
  CHECK(count(svg, "<polyline") == 2);
  CHECK(count(svg, "<circle") == 2);
  CHECK(svg.find(">two</text>") != std::string::npos);
  CHECK(svg.find("y (ms)") != std::string::npos);  // axis title with unit
  views::LineChart log = c;
  log.x.log = log.y.log = true;
  log.series = {{"s", {0, 10, 1000}, {0, 5, 50}}};  // x = 0 cannot sit on a log axis: dropped
  const std::string log_svg = render_svg({"t", "p", "title", "", log});
  const size_t at = log_svg.find("points=\"");
  REQUIRE(at != std::string::npos);
  CHECK(count(log_svg.substr(at, log_svg.find('"', at + 8) - at), ",") == 2);  // two points in the polyline
}

TEST_CASE("render_svg: stacked bars, marked bars outlined, and nothing for a table", "[report]") {
  views::BarChart b;
  b.y = {"bytes", "bytes"}, b.stacks = {"q", "k"}, b.mark_meaning = "2-bit";
  b.bars = {{"a", {1, 2}, false}, {"b", {3, 4}, true}};
  const std::string svg = render_svg({"t", "p", "title", "", b});
  CHECK(count(svg, "<title>") == 4);  // one per segment
  CHECK(count(svg, "stroke-width=\"2\"") == 2);
  CHECK(svg.find("2-bit") != std::string::npos);
  CHECK(render_svg({"t", "p", "title", "", views::Table{}}).empty());
}

TEST_CASE("render_svg: long bar labels stay inside the chart, shortened only where they cannot fit", "[report]") {
  // The labels are rotated −35° (svg.cpp): a label of n characters reaches about n·6.4·cos 35° px to the
  // left of its anchor and n·6.4·sin 35° px below it. Each must end inside the chart, above the axis title.
  views::BarChart b;
  b.y = {"time", "ms"}, b.stacks = {"predicted", "measured"}, b.grouped = true;
  for (int i = 0; i < 6; ++i) b.bars.push_back({fmt::format("turbo_2bit MHA #{}: model +12.3%", i), {1, 2}});
  b.bars.push_back({std::string(200, 'x'), {1, 1}});  // longer than half the chart allows: shortened
  const int w = 760, h = 340;
  const std::string svg = render_svg({"t", "p", "title", "", b}, w, h);
  const std::regex label(R"re(class="bar-label" transform="translate\(([0-9.]+) ([0-9.]+)\) rotate\(-35\)" text-anchor="end">([^<]*)</text>)re");
  int labels = 0;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), label); it != std::sregex_iterator(); ++it, ++labels) {
    const double x = std::stod((*it)[1]), y = std::stod((*it)[2]);
    const std::string text = (*it)[3];
    size_t chars = 0;
    for (unsigned char ch : text) chars += (ch & 0xC0) != 0x80;
    const double run = 6.4 * double(chars);
    CHECK(x - run * std::cos(35 * M_PI / 180) >= 0);
    CHECK(y + run * std::sin(35 * M_PI / 180) <= h - 18);  // the x-axis title's line is at h − 8
    if (labels < 6) CHECK(text.find("model +12.3%") != std::string::npos);  // these fit whole
  }
  CHECK(labels == 7);  // one label per bar
  CHECK(svg.find(">" + std::string(200, 'x') + "</text>") == std::string::npos);  // (whole in its tooltips)
  CHECK(svg.find("xxx…</text>") != std::string::npos);
}

TEST_CASE("render_svg: point labels that would collide are moved apart", "[report]") {
  // A roofline's model and measured points of one variant: same intensity, rates 10% apart.
  views::LineChart c;
  c.x = {"intensity", "FLOP/byte"}, c.y = {"rate", "TFLOP/s"};
  c.series = {{"predicted", {14, 19, 27}, {21, 24, 21}, true, {"turbo 4-bit", "turbo mix", "kivi 2-bit"}},
              {"measured", {14, 19, 27}, {19, 13, 19}, true, {"turbo 4-bit", "turbo mix", "kivi 2-bit"}}};
  const std::string svg = render_svg({"t", "p", "title", "", c});
  const std::regex label(R"re(class="point-label" x="([0-9.]+)" y="([0-9.]+)" fill="[^"]*">([^<]*)</text>)re");
  std::vector<std::array<double, 4>> boxes;  // estimated as svg.cpp estimates: 6.4 px per character, 13 px lines
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), label); it != std::sregex_iterator(); ++it) {
    const double x = std::stod((*it)[1]), base = std::stod((*it)[2]), w = 6.4 * double((*it)[3].length());
    const double top = base - 13.0 / 3 - 6.5;
    boxes.push_back({x, top, x + w, top + 13});
  }
  CHECK(boxes.size() == 6);  // room for every label here
  for (size_t i = 0; i < boxes.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      CHECK_FALSE((boxes[i][0] < boxes[j][2] && boxes[j][0] < boxes[i][2] && boxes[i][1] < boxes[j][3] &&
                   boxes[j][1] < boxes[i][3]));
}

TEST_CASE("render_svg: grouped bars side by side from zero, each with its value; none for a NaN", "[report]") {
  views::BarChart b;
  b.y = {"speedup", "×"}, b.stacks = {"predicted", "measured"}, b.grouped = true;
  b.bars = {{"a", {2, 3}, false}, {"b", {4, NAN}, false}};
  const std::string svg = render_svg({"t", "p", "title", "", b});
  CHECK(count(svg, "<title>") == 3);  // b's NaN: no bar
  CHECK(svg.find("<title>b · measured") == std::string::npos);
  const std::regex rect(R"re(<rect x="([0-9.]+)" y="([0-9.]+)" width="([0-9.]+)" height="([0-9.]+)" fill="[^"]+"><title>a · (\w+): )re");
  std::vector<std::smatch> bars;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), rect); it != std::sregex_iterator(); ++it) bars.push_back(*it);
  REQUIRE(bars.size() == 2);
  auto num = [](const std::ssub_match& m) { return std::stod(m.str()); };
  // Side by side: the second starts where the first ends, both the same width, both ending on the axis.
  CHECK(num(bars[1][1]) == Approx(num(bars[0][1]) + num(bars[0][3])).margin(0.11));
  CHECK(num(bars[1][3]) == Approx(num(bars[0][3])).margin(0.11));
  CHECK(num(bars[0][2]) + num(bars[0][4]) == Approx(num(bars[1][2]) + num(bars[1][4])).margin(0.11));
  CHECK(num(bars[1][4]) == Approx(1.5 * num(bars[0][4])).epsilon(0.01));  // 3 against 2, from zero
  CHECK(svg.find(">3</text>") != std::string::npos);  // each value written above its bar
}

TEST_CASE("report: self-contained index.html, a chart in every view, a CSV per view", "[report]") {
  const Results r = test::small_results();
  const fs::path dir = fs::path(ATTNLAB_TEST_TMP) / "report_charts";
  fs::remove_all(dir);
  write_report(r, dir);
  const std::string html = read(dir / "index.html");
  // No external resource: no scripts, stylesheets, images, frames or fonts fetched from anywhere.
  CHECK_FALSE(std::regex_search(html, std::regex(R"(<script|<link|<img|<iframe|@import|url\(|src=)", std::regex::icase)));
  CHECK_FALSE(std::regex_search(html, std::regex(R"(href="(https?:|//))", std::regex::icase)));
  const std::vector<views::View> all = views::chart_views(r);
  REQUIRE(all.size() >= 10);
  for (const auto& v : all) {
    INFO(v.id);
    const size_t at = html.find(fmt::format("<section class=\"view\" id=\"{}\">", view_file_stem(v.id)));
    REQUIRE(at != std::string::npos);
    const std::string section = html.substr(at, html.find("</section>", at) - at);
    const bool table = std::holds_alternative<views::Table>(v.body);
    CHECK(section.find(table ? "<table>" : "<svg") != std::string::npos);
    CHECK(fs::file_size(dir / "views" / (view_file_stem(v.id) + ".csv")) > 0);
  }
}

}  // namespace
}  // namespace attnlab::report
