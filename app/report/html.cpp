#include "app/report/html.h"

#include "app/report/svg.h"
#include "app/report/tour.h"
#include "app/views/chart.h"
#include "app/views/data_views.h"
#include "app/views/table.h"

#include <fmt/format.h>

#include <cctype>

namespace attnlab::report {

namespace {

constexpr const char* kStyle = R"(
body { font-family: "DejaVu Sans", sans-serif; margin: 2em auto; max-width: 70em; color: #222; }
h1 { font-size: 1.6em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; margin: 0.5em 0; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: right; }
th { background: #f2f2f2; } td.text { text-align: left; }
pre { background: #f7f7f7; padding: 0.8em; overflow-x: auto; }
.note { color: #666; }
section.step { margin: 1em 0 2.5em; } section.step h3 { font-size: 1.1em; } div.view h4 { font-size: 1em; margin-bottom: 0.2em; }
section.view { margin: 1.2em 0 2em; } section.view h3 { font-size: 1.05em; margin-bottom: 0.2em; }
svg { max-width: 100%; height: auto; }
)";

}  // namespace

std::string table_element(const views::Table& t) {
  std::string out = "<table>\n<tr>";
  for (const auto& c : t.columns)
    out += fmt::format("<th>{}{}</th>", escape_html(c.title), c.unit.empty() ? "" : " (" + escape_html(c.unit) + ")");
  out += "</tr>\n";
  for (const auto& row : t.rows) {
    out += "<tr>";
    for (const auto& cell : row)
      out += fmt::format("<td{}>{}</td>", cell.value == cell.value ? "" : " class=\"text\"", escape_html(cell.text));
    out += "</tr>\n";
  }
  if (t.rows.empty()) out += fmt::format("<tr><td class=\"text\" colspan=\"{}\">none</td></tr>\n", t.columns.size());
  out += "</table>\n";
  if (!t.legend.empty()) out += fmt::format("<p class=\"note legend\">{}</p>\n", escape_html(t.legend));
  return out;
}

namespace {

std::string table_html(const views::Table& t) { return fmt::format("<h2>{}</h2>\n", escape_html(t.title)) + table_element(t); }

// The chart views, grouped under their GUI panel's name, each with its note and a link to its CSV.
std::string views_html(const std::vector<views::View>& all) {
  std::string out, panel;
  for (const auto& v : all) {
    if (v.panel != panel) out += fmt::format("<h2>{}</h2>\n", escape_html(panel = v.panel));
    out += fmt::format("<section class=\"view\" id=\"{}\">\n<h3>{}</h3>\n<p class=\"note\">{} "
                       "<a href=\"views/{}.csv\">CSV</a></p>\n",
                       escape_html(view_file_stem(v.id)), escape_html(v.title), escape_html(v.note), view_file_stem(v.id));
    if (const auto* t = std::get_if<views::Table>(&v.body)) {
      out += table_element(*t);  // the section's <h3> is its title
    } else {
      out += render_svg(v);
    }
    out += "</section>\n";
  }
  return out;
}

}  // namespace

std::string view_file_stem(const std::string& id) {
  std::string s;
  for (char c : id) s += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_') ? c : '_';
  return s;
}

std::string escape_html(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string render_html(const Results& r, const std::vector<const Results*>& tour) {
  const std::string title = r.config.value("title", "attnlab report");
  const auto& p = r.problem;
  std::string out = fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><style>{}</style></head>\n"
      "<body>\n<h1>{}</h1>\n",
      escape_html(title), kStyle, escape_html(title));
  if (r.config.contains("description"))
    out += fmt::format("<p>{}</p>\n", escape_html(r.config["description"].get<std::string>()));
  out += fmt::format(
      "<p>B={} · H<sub>q</sub>={} · H<sub>kv</sub>={} · N<sub>q</sub>={} · N<sub>kv</sub>={} · d={} · {} · {}</p>\n",
      p.value("batch", 0), p.value("q_heads", 0), p.value("kv_heads", 0), p.value("q_len", 0), p.value("kv_len", 0),
      p.value("head_dim", 0), p.value("causal", false) ? "causal" : "not causal", escape_html(p.value("phase", "")));
  // What ran comes first: a backend that did not run, and why, is read before any number — the line, then the
  // table of every backend asked for (the variants it ran for, each one it did not run for and why).
  const std::string ran = views::ran_line(r.environment);
  out += fmt::format("<p class=\"ran\">Ran: {} · GPU: {}", escape_html(ran.empty() ? "nothing" : ran),
                     escape_html(views::gpu_line(r.environment)));
  if (const std::string not_run = views::not_run_line(r.environment); !not_run.empty())
    out += fmt::format(" · <strong>not run</strong>: {}", escape_html(not_run));
  out += "</p>\n";
  // And which data: a number on synthetic data is read as such (the generator and every parameter it ran with).
  if (const std::string data = views::data_line(r); !data.empty())
    out += fmt::format("<p class=\"data\">{}</p>\n", escape_html(data));
  out += "<section class=\"what-ran\">\n" + table_element(views::what_ran_table(r)) + "</section>\n";
  if (r.config.contains("lesson") && !tour.empty()) out += tour_html(parse_lesson(r.config["lesson"], "lesson"), tour);
  out += table_html(views::results_table(r));
  out += views_html(views::chart_views(r, kPageHeatmapCols));
  out += table_html(views::params_table(r));
  const auto& env = r.environment;
  out += fmt::format("<h2>Environment</h2>\n<table>\n<tr><th>CPU</th><td class=\"text\">{}</td></tr>\n"
                     "<tr><th>GPU</th><td class=\"text\">{}</td></tr>\n<tr><th>threads</th><td>{}</td></tr>\n"
                     "<tr><th>attnlab</th><td class=\"text\">{}</td></tr>\n</table>\n",
                     escape_html(env.cpu), escape_html(env.gpu.value_or("none")), env.threads,
                     escape_html(env.version));
  out += fmt::format("<h2>Configuration</h2>\n<pre>{}</pre>\n", escape_html(r.config.dump(2)));
  out += "<p class=\"note\">results.json holds every number and probe; results.csv the results table.</p>\n";
  return out + "</body></html>\n";
}

}  // namespace attnlab::report
