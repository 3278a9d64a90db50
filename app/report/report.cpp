#include "app/report/report.h"

#include "app/report/atomic_dir.h"
#include "app/report/csv.h"
#include "app/report/html.h"
#include "app/views/chart.h"
#include "app/views/table.h"
#include "core/error.h"

#include <fmt/format.h>

#include <cstdlib>
#include <fstream>

namespace attnlab::report {

namespace fs = std::filesystem;

namespace {

void write(const fs::path& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  f.close();
  if (!f) fail_input(path.string(), "write failed");
}

}  // namespace

fs::path write_report(const Results& r, const fs::path& dir, bool pdf) {
  if (pdf && std::system("command -v chromium > /dev/null 2>&1") != 0)
    fail_input("--pdf", "needs headless Chromium (Debian package chromium), which is not on the PATH");
  StagedDir staged(dir);
  write(staged.path() / "index.html", render_html(r));
  write(staged.path() / "results.json", to_json(r).dump(1) + "\n");
  write(staged.path() / "results.csv", to_csv(views::results_table(r)));
  fs::create_directory(staged.path() / "views");
  for (const auto& v : views::chart_views(r))
    write(staged.path() / "views" / (view_file_stem(v.id) + ".csv"), to_csv(views::view_as_table(v)));
  if (pdf) {  // the page as a browser prints it; no network, no GPU
    const fs::path html = fs::absolute(staged.path() / "index.html"), out = staged.path() / "report.pdf";
    const std::string cmd = fmt::format(
        "chromium --headless --no-sandbox --disable-gpu --disable-background-networking --no-pdf-header-footer "
        "--print-to-pdf='{}' 'file://{}' > '{}' 2>&1",
        out.string(), html.string(), (staged.path() / "chromium.log").string());
    if (std::system(cmd.c_str()) != 0 || !fs::exists(out) || fs::file_size(out) == 0)
      fail_input("--pdf", "headless Chromium could not print index.html");
    fs::remove(staged.path() / "chromium.log");
  }
  staged.commit();
  return fs::absolute(dir).lexically_normal() / "index.html";
}

}  // namespace attnlab::report
