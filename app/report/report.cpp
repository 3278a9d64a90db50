#include "app/report/report.h"

#include "app/report/atomic_dir.h"
#include "app/report/child_process.h"
#include "app/report/csv.h"
#include "app/report/html.h"
#include "app/report/results_file.h"
#include "app/views/chart.h"
#include "app/views/table.h"
#include "core/error.h"

#include <fmt/format.h>

#include <cctype>
#include <fstream>

namespace attnlab::report {

namespace fs = std::filesystem;

namespace {

// Printing a small page takes a few seconds; a Chromium that hangs (a broken profile, a missing display
// library) is stopped after this, and the report fails with nothing written.
constexpr std::chrono::seconds kChromiumTimeout{120};

void write(const fs::path& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  f.close();
  if (!f) fail_input(path.string(), "write failed");
}

std::string last_line(const fs::path& log) {
  std::ifstream f(log);
  std::string line, last;
  while (std::getline(f, line))
    if (!line.empty()) last = line;
  return last;
}

// index.html → report.pdf inside the staging folder. Chromium gets a fresh profile there (removed
// afterwards), so neither the user's profile nor a running browser is touched.
void print_pdf(const fs::path& chromium, const fs::path& folder) {
  const fs::path html = folder / "index.html", pdf = folder / "report.pdf", log = folder / "chromium.log",
                 profile = folder / ".chromium-profile";
  const ChildResult c = run_child({chromium.string(), "--headless", "--no-sandbox", "--disable-gpu",
                                   "--disable-background-networking", "--no-first-run", "--no-pdf-header-footer",
                                   "--user-data-dir=" + profile.string(), "--print-to-pdf=" + pdf.string(),
                                   file_url(html)},
                                  kChromiumTimeout, log);
  std::error_code ec;
  fs::remove_all(profile, ec);
  if (!c.started) fail_input("--pdf", fmt::format("cannot start '{}': {}", echo_path(chromium.string()), c.error));
  if (c.timed_out)
    fail_input("--pdf", fmt::format("headless Chromium did not finish in {} s and was stopped", kChromiumTimeout.count()));
  if (c.exit_code != 0 || !fs::is_regular_file(pdf, ec) || fs::file_size(pdf, ec) == 0)
    fail_input("--pdf", fmt::format("headless Chromium could not print index.html (exit code {}): {}", c.exit_code,
                                    echo(last_line(log))));
  fs::remove(log, ec);
}

}  // namespace

std::string file_url(const fs::path& absolute) {
  std::string url = "file://";
  for (const unsigned char c : absolute.string()) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' || c == '/') url += char(c);
    else url += fmt::format("%{:02X}", c);
  }
  return url;
}

fs::path pdf_printer() {
  const fs::path chromium = find_program("chromium");
  if (chromium.empty())
    fail_input("--pdf", "needs headless Chromium (Debian package chromium), which is not on the PATH");
  return chromium;
}

fs::path write_results_folder(const Results& r, const fs::path& dir, const OutputRule& rule) {
  StagedDir staged(dir, rule);
  write_results_into(r, staged.path());
  staged.commit();
  return staged.target() / "results.json";
}

fs::path write_report(const Results& r, const fs::path& dir, const ReportRequest& how) {
  const fs::path chromium = how.pdf ? pdf_printer() : fs::path();
  StagedDir staged(dir, OutputRule{how.where, how.inputs, true});
  write(staged.path() / "index.html", render_html(r, how.tour));
  write_results_into(r, staged.path());
  write(staged.path() / "results.csv", to_csv(views::results_table(r)));
  fs::create_directory(staged.path() / "views");
  for (const auto& v : views::chart_views(r, kPageHeatmapCols))  // the page's views
    write(staged.path() / "views" / (view_file_stem(v.id) + ".csv"), to_csv(views::view_as_table(v)));
  if (how.pdf) print_pdf(chromium, staged.path());  // the page as a browser prints it; no network, no GPU
  staged.commit();
  return staged.target() / "index.html";
}

}  // namespace attnlab::report
