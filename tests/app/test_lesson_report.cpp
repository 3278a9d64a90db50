// The report of a lesson: the tour comes first, every step's text in order, each followed by the view of
// its panel drawn from that step's run (an SVG chart or a table) before the next step begins.
#include "app/report/html.h"
#include "app/cli/backends.h"
#include "core/config.h"
#include "tests/catch.h"

#include <fmt/format.h>

#include <deque>
#include <string>

namespace attnlab {
namespace ATTNLAB_FILE_LOCAL {

TEST_CASE("lesson report: every step's text in order, each with the view of its panel for its run", "[report]") {
  const Experiment e = load_experiment("configs/lessons/sas.json");
  std::deque<Results> runs;
  std::vector<const Results*> tour;
  for (size_t k = 0; k < e.lesson->steps.size(); ++k) {
    runs.push_back(cli::make_runner().run(step_experiment(e, k), {}));
    tour.push_back(&runs.back());
  }
  const Results base = cli::make_runner().run(e, {});
  const std::string html = report::render_html(base, tour);
  size_t at = 0;
  for (size_t k = 0; k < e.lesson->steps.size(); ++k) {
    const LessonStep& s = e.lesson->steps[k];
    INFO("step " << k + 1 << ": " << s.panel);
    const size_t heading = html.find(fmt::format("<h3>Step {} of {}: {}</h3>", k + 1, e.lesson->steps.size(), s.panel), at);
    REQUIRE(heading != std::string::npos);  // in order: searched from the previous step on
    const size_t text = html.find(report::escape_html(s.text), heading);
    REQUIRE(text != std::string::npos);
    const size_t end = html.find("</section>", text);
    const std::string body = html.substr(text, end - text);
    CHECK((body.find("<svg") != std::string::npos || body.find("<table>") != std::string::npos));  // its view
    CHECK(body.find("records nothing this panel shows") == std::string::npos);
    if (!s.set.empty()) CHECK(body.find("This step runs with " + report::escape_html(describe_change(s))) != std::string::npos);
    at = end;
  }
  // Each step's view is drawn from its own run: step 4 (n_r = −3) zeroes more scores than step 1 (−6),
  // so their SAS sections differ.
  const auto section = [&](int k) {
    const size_t from = html.find(fmt::format("id=\"step-{}\"", k));
    return html.substr(from, html.find("</section>", from) - from);
  };
  CHECK(section(4).substr(section(4).find("<svg")) != section(1).substr(section(1).find("<svg")));
  // Steps 1 and 2 both look at the SAS panel; given one run (as the report passes steps that change nothing),
  // step 2 points back to step 1 instead of drawing the same chart again.
  std::vector<const Results*> shared = tour;
  shared[1] = shared[0];
  const std::string once = report::render_html(base, shared);
  const size_t from = once.find("id=\"step-2\"");
  const std::string step2 = once.substr(from, once.find("</section>", from) - from);
  CHECK(step2.find("<svg") == std::string::npos);
  CHECK(step2.find("The same run and panel as <a href=\"#step-1\">step 1</a>") != std::string::npos);
  // Without the steps' runs (a report of saved results) there is no tour.
  CHECK(report::render_html(base).find("The lesson, step by step") == std::string::npos);
}

}  // namespace
}  // namespace attnlab
