#include "app/report/tour.h"

#include "app/report/html.h"
#include "app/report/svg.h"
#include "app/views/chart.h"
#include "app/views/table.h"

#include <fmt/format.h>

namespace attnlab::report {

namespace {

// The panel as the step's run fills it: the results table, or the panel's chart views.
std::string panel_html(const std::string& panel, const Results& run) {
  if (panel == "Results") return table_element(views::results_table(run));
  std::string out;
  for (const views::View& v : views::chart_views(run, kPageHeatmapCols)) {  // binned as the page's other views
    if (v.panel != panel) continue;
    out += fmt::format("<div class=\"view\">\n<h4>{}</h4>\n<p class=\"note\">{}</p>\n", escape_html(v.title), escape_html(v.note));
    const auto* t = std::get_if<views::Table>(&v.body);
    out += (t ? table_element(*t) : render_svg(v)) + "</div>\n";
  }
  return out.empty() ? "<p class=\"note\">This step's run records nothing this panel shows.</p>\n" : out;
}

}  // namespace

std::string tour_html(const Lesson& lesson, const std::vector<const Results*>& runs) {
  std::string out = "<h2>The lesson, step by step</h2>\n";
  if (!lesson.figure.empty()) out += fmt::format("<p class=\"note\">Following {}.</p>\n", escape_html(lesson.figure));
  const size_t n = lesson.steps.size();
  for (size_t k = 0; k < n && k < runs.size(); ++k) {
    const LessonStep& s = lesson.steps[k];
    out += fmt::format("<section class=\"step\" id=\"step-{}\">\n<h3>Step {} of {}: {}</h3>\n<p>{}</p>\n", k + 1, k + 1, n,
                       escape_html(s.panel), escape_html(s.text));
    if (!s.figure.empty()) out += fmt::format("<p class=\"note\">Paper: {}</p>\n", escape_html(s.figure));
    if (!s.set.empty()) out += fmt::format("<p class=\"note\">This step runs with {}.</p>\n", escape_html(describe_change(s)));
    // A panel of a run an earlier step already showed is not drawn again (a reader would see one chart
    // twice): the step points back to it.
    size_t first = k;
    for (size_t j = 0; j < k; ++j)
      if (runs[j] == runs[k] && lesson.steps[j].panel == s.panel) {
        first = j;
        break;
      }
    if (first == k) out += panel_html(s.panel, *runs[k]);
    else out += fmt::format("<p class=\"note\">The same run and panel as <a href=\"#step-{0}\">step {0}</a>, above.</p>\n", first + 1);
    out += "</section>\n";
  }
  return out;
}

}  // namespace attnlab::report
