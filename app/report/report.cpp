#include "app/report/report.h"

#include "app/report/atomic_dir.h"
#include "app/report/csv.h"
#include "app/report/html.h"
#include "app/views/chart.h"
#include "app/views/table.h"
#include "core/error.h"

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

fs::path write_report(const Results& r, const fs::path& dir) {
  StagedDir staged(dir);
  write(staged.path() / "index.html", render_html(r));
  write(staged.path() / "results.json", to_json(r).dump(1) + "\n");
  write(staged.path() / "results.csv", to_csv(views::results_table(r)));
  fs::create_directory(staged.path() / "views");
  for (const auto& v : views::chart_views(r))
    write(staged.path() / "views" / (view_file_stem(v.id) + ".csv"), to_csv(views::view_as_table(v)));
  staged.commit();
  return fs::absolute(dir).lexically_normal() / "index.html";
}

}  // namespace attnlab::report
