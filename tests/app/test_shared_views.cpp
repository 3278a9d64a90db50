// Every view once: views that several variants share (the int_flash family's GPU-quantized scales) are
// drawn once, naming every variant that shares them, and no two views of a report hold identical data;
// the results table prints rates in the unit that fits and fills every cell, or says why not.
#include "app/report/csv.h"
#include "app/report/report.h"
#include "app/views/chart.h"
#include "app/views/shared_views.h"
#include "tests/catch.h"
#include "tests/support/kernel_results.h"
#include "tests/support/sample_results.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

namespace attnlab::views {
namespace ATTNLAB_FILE_LOCAL {

namespace fs = std::filesystem;

std::vector<const View*> in_panel(const std::vector<View>& all, const std::string& panel) {
  std::vector<const View*> out;
  for (const auto& v : all)
    if (v.panel == panel) out.push_back(&v);
  return out;
}

TEST_CASE("shared views: the int_flash family's identical GPU scales are drawn once, naming every variant",
          "[views][shared]") {
  const std::vector<View> all = chart_views(test::kernel_results());
  const std::vector<const View*> scales = in_panel(all, "Block scales");
  // Q and K: the four int_flash-family variants share one view each; V: the two full-INT8 ones.
  REQUIRE(scales.size() == 3);
  const std::vector<std::string> family = {"int_flash", "int_flash_mma_sync", "int_half", "int_half_mma_sync"};
  CHECK(scales[0]->id == "scales.q.int_flash.kernel");
  CHECK(scales[0]->variants == family);
  CHECK(scales[0]->title == "int_flash, int_flash_mma_sync, int_half, int_half_mma_sync: Q scales (kernel)");
  CHECK(scales[1]->variants == family);
  CHECK(scales[1]->title == "int_flash, int_flash_mma_sync, int_half, int_half_mma_sync: K scales (kernel)");
  CHECK(scales[2]->variants == std::vector<std::string>{"int_flash", "int_flash_mma_sync"});
  CHECK(scales[2]->title == "int_flash, int_flash_mma_sync: V scales (kernel)");
  for (const View* v : scales) CHECK(v->note.find("identical data") != std::string::npos);
}

TEST_CASE("shared views: data differing in one value stay apart; a variant's reference and kernel views merge "
          "under both topics",
          "[views][shared]") {
  Results r = test::kernel_results();
  r.variants[3].kernel->probes["scales.q"].values[5] += 1;  // int_half's Q scales differ in one block
  std::vector<View> all = chart_views(r);
  std::vector<std::vector<std::string>> q;
  for (const View* v : in_panel(all, "Block scales"))
    if (v->title.find("Q scales") != std::string::npos) q.push_back(v->variants);
  CHECK(q == std::vector<std::vector<std::string>>{{"int_flash", "int_flash_mma_sync", "int_half_mma_sync"}, {"int_half"}});

  r = test::kernel_results();
  r.variants.resize(2);  // flash2, int_flash
  r.variants[1].reference = ReferenceResult{};
  r.variants[1].reference->probes["scales.v"] = r.variants[1].kernel->probes["scales.v"];
  all = chart_views(r);
  const auto v = std::find_if(all.begin(), all.end(), [](const View& x) { return x.title.find("V scales") != std::string::npos; });
  REQUIRE(v != all.end());
  CHECK(v->title == "int_flash: V scales (reference); int_flash: V scales (kernel)");
  CHECK(v->variants == std::vector<std::string>{"int_flash"});
  // Views of the whole run are never merged, whatever their data.
  std::vector<View> whole = {{"a", "p", "A", "", BarChart{}}, {"b", "p", "B", "", BarChart{}}};
  CHECK(merge_shared(whole).size() == 2);
}

std::string read(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

TEST_CASE("report: no two views hold identical data, each shared view names its variants", "[views][shared][report]") {
  const fs::path dir = fs::path(ATTNLAB_TEST_TMP) / "shared_views" / "report";
  fs::remove_all(dir.parent_path());
  fs::create_directories(dir.parent_path());
  const Results r = test::kernel_results();
  report::write_report(r, dir);
  // Every view's CSV (views/<id>.csv): identical data would give identical files.
  std::map<std::string, std::string> by_content;
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir / "views")) {
    ++files;
    const std::string text = read(e.path());
    const auto same = by_content.find(text);
    INFO(e.path().filename().string() << " repeats " << (same == by_content.end() ? "" : same->second));
    CHECK(same == by_content.end());
    by_content.emplace(text, e.path().filename().string());
  }
  CHECK(files == chart_views(r).size());
  // The page: the three block-scale sections, each naming its variants; none drawn per variant.
  const std::string html = read(dir / "index.html");
  CHECK(html.find("<h3>int_flash, int_flash_mma_sync, int_half, int_half_mma_sync: Q scales (kernel)</h3>") !=
        std::string::npos);
  CHECK(html.find("<h3>int_half: Q scales (kernel)</h3>") == std::string::npos);
  size_t scale_sections = 0;
  for (size_t at = 0; (at = html.find("<section class=\"view\" id=\"scales.", at)) != std::string::npos; ++at)
    ++scale_sections;
  CHECK(scale_sections == 3);
  fs::remove_all(dir.parent_path());
}

TEST_CASE("results table: rates in the unit that fits, every cell filled, a dash, or empty under the legend",
          "[views][table]") {
  Results r = test::kernel_results();
  r.variants.push_back(test::small_results().variants[0]);  // turbo: reference, kernel, model
  r.variants.back().reference->gflops = 2.5;
  const Table t = results_table(r);
  size_t rate = t.columns.size(), kv = t.columns.size();
  std::vector<size_t> times;
  for (size_t c = 0; c < t.columns.size(); ++c) {
    if (t.columns[c].title == "rate") rate = c;
    if (t.columns[c].title == "KV cache") kv = c;
    if (t.columns[c].key.rfind("time_", 0) == 0) times.push_back(c);
  }
  REQUIRE(rate < t.columns.size());
  REQUIRE(kv < t.columns.size());
  REQUIRE(times.size() == 3);  // this CPU's, the GPU's, the model's
  for (const auto& row : t.rows) {
    INFO(row[0].text << " " << row[1].text);
    const bool model = row[1].text.rfind("model", 0) == 0;
    // Empty only where the legend says why: a prediction's errors, the cache's size outside the reference row, and
    // the time columns of the other machines; exactly one time column filled.
    for (size_t c = 0; c < row.size(); ++c) {
      const bool no_errors = model || !r.environment.ground_truth;  // kernel_results is a timing run: no truth
      const bool may_be_empty = (no_errors && c >= 2 && c <= 5) || (c == kv && row[1].text != "reference") ||
                                std::find(times.begin(), times.end(), c) != times.end();
      INFO("column " << t.columns[c].key);
      if (!may_be_empty) CHECK_FALSE(row[c].text.empty());
      if (std::isnan(row[c].value) && row[c].text.rfind(kNoNumber, 0) == 0)
        CHECK((row[c].text == kNoNumber || (row[c].text.find(" (") != std::string::npos && row[c].text.back() == ')')));
    }
    CHECK(std::count_if(times.begin(), times.end(), [&](size_t c) { return !row[c].text.empty(); }) == 1);
    if (row[0].text == "turbo") continue;  // the small sample: its rates are checked below
    if (row[1].text == "kernel") {
      CHECK(row[rate].text.size() > 8);
      CHECK(row[rate].text.substr(row[rate].text.size() - 8) == " TFLOP/s");
      CHECK(std::stod(row[rate].text) < 1000);  // 461.2 TFLOP/s, not 461179.8
    }
    if (model) {
      CHECK(row[2].text.empty());
      CHECK(row[rate].text.find("TFLOP/s") != std::string::npos);  // predicted rate: FLOPs over predicted time
    }
  }
  CHECK(t.legend.find("model rows have no output, so no errors") != std::string::npos);
  CHECK(t.legend.find("no errors: a timing-only run computes no FP64 truth") != std::string::npos);
  CHECK(t.legend.find("KV cache: counted by the reference") != std::string::npos);
  const auto row = [&](const std::string& variant, const std::string& backend) {
    return *std::find_if(t.rows.begin(), t.rows.end(),
                         [&](const auto& x) { return x[0].text == variant && x[1].text == backend; });
  };
  CHECK(row("turbo", "kernel")[kv].text.empty());
  CHECK(row("turbo", "reference")[rate].text == "2.5 GFLOP/s");
  CHECK(row("turbo", "reference")[rate].value == 2.5e9);
  CHECK(row("turbo", "kernel")[rate].text == kNoNumber);  // the sample's kernel recorded no rate (0): not "0 FLOP/s"
  // The CSV keeps the number in its base unit and leaves a dash's field empty.
  const std::string csv = report::to_csv(t);
  CHECK(csv.find("flop_per_s") != std::string::npos);
  CHECK(csv.find(kNoNumber) == std::string::npos);
}

}  // namespace
}  // namespace attnlab::views
