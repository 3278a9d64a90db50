// attnlab tests: saved results that travel (DESIGN.md, "Results travel"; results.json schema /2). A run the
// size of configs/bench-gpu.json at B 4, H 16, N 16384 (tests/support/big_results.h, built directly)
// saves a results.json of at most 2 MB with its large arrays in .npy sidecars; read back, the arrays are
// the originals element for element (== on doubles, no tolerance: the sidecars hold float32 only where
// every value is a float32), they are read only when asked for, and the views, the results table and the
// report page rendered from them equal those rendered from the Results in memory. Old (/1) files are
// read; any other schema, and a missing or damaged sidecar, is one InputError naming the file.
#include "app/gui/app_state.h"
#include "app/report/csv.h"
#include "app/report/html.h"
#include "app/report/report.h"
#include "app/report/results_file.h"
#include "app/views/chart.h"
#include "app/views/table.h"
#include "core/error.h"
#include "core/results_sidecars.h"
#include "tests/catch.h"
#include "tests/support/big_results.h"
#include "tests/support/sample_results.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;

namespace attnlab {
namespace ATTNLAB_FILE_LOCAL {

// The bound DESIGN.md states for results.json, and the one for index.html (report.cpp's heatmaps are
// binned to kPageHeatmapCols columns; no per-token array reaches the page).
constexpr uintmax_t kResultsJsonBound = 2u << 20;
constexpr uintmax_t kIndexHtmlBound = 3u << 20;  // measured: 2.06 MB (three 64 × 64 heatmaps, one 64 × 128)

fs::path scratch(const std::string& name) {
  const fs::path dir = fs::path(ATTNLAB_TEST_TMP) / "saved_results" / name;
  fs::remove_all(dir);
  fs::create_directories(dir.parent_path());
  return dir;
}

const report::OutputRule kRule{"test", {}, true};

uintmax_t folder_bytes(const fs::path& dir) {
  uintmax_t n = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) n += e.file_size();
  return n;
}

// Calls f(variant label, backend, probe name, probe of a, probe of b) for every probe of a, requiring b
// to have the same probes.
template <class F>
void each_probe(const Results& a, const Results& b, F f) {
  REQUIRE(a.variants.size() == b.variants.size());
  for (size_t i = 0; i < a.variants.size(); ++i) {
    const VariantResult &va = a.variants[i], &vb = b.variants[i];
    for (const auto& [backend, pa, pb] :
         {std::tuple{"reference", va.reference ? &va.reference->probes : nullptr, vb.reference ? &vb.reference->probes : nullptr},
          std::tuple{"kernel", va.kernel ? &va.kernel->probes : nullptr, vb.kernel ? &vb.kernel->probes : nullptr}}) {
      REQUIRE((pa == nullptr) == (pb == nullptr));
      if (!pa) continue;
      REQUIRE(pa->size() == pb->size());
      for (const auto& [name, p] : *pa) f(va.label, backend, name, p, pb->at(name));
    }
  }
}

std::vector<std::string> rendered(const std::vector<views::View>& vs) {
  std::vector<std::string> out;
  for (const auto& v : vs) out.push_back(v.id + "\n" + v.title + "\n" + v.note + "\n" + report::to_csv(views::view_as_table(v)));
  return out;
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// A small Results with arrays past kInlineProbeMax: the sample's, plus a logsumexp of 2 × 300 rows and
// a trace of 300 steps × 3 rows (drawn by the tile stepper's views).
Results with_one_sidecar() {
  Results r = test::small_results();
  std::vector<double> lse(600), m(900), bytes(300);
  for (size_t i = 0; i < lse.size(); ++i) lse[i] = 1.0 / double(i + 3);
  for (size_t i = 0; i < m.size(); ++i) m[i] = double(i / 3) * 0.5;
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = double(100 * (i + 1));
  auto& probes = r.variants[0].reference->probes;
  probes["lse"] = {{1, 2, 300}, lse, {}, "logit", "logsumexp"};
  probes["trace.m"] = {{300, 3}, m, {}, "logit", "running max"};
  probes["trace.l"] = {{300, 3}, m, {}, "", "running sum"};
  probes["trace.hbm_bytes"] = {{300}, bytes, {}, "bytes", "bytes so far"};
  return r;
}


TEST_CASE("saved results: B4 H16 N16384 keeps results.json under 2 MB, arrays in sidecars, read back exactly and lazily",
          "[results][report]") {
  const Results live = test::big_results();
  const fs::path dir = scratch("big");
  report::write_results_folder(live, dir, kRule);

  const uintmax_t json_bytes = fs::file_size(dir / "results.json");
  INFO("results.json: " << json_bytes << " bytes; arrays/: " << folder_bytes(dir / "arrays") << " bytes");
  CHECK(json_bytes <= kResultsJsonBound);
  const nlohmann::json j = nlohmann::json::parse(std::ifstream(dir / "results.json"));
  CHECK(j["schema"] == "attnlab.results/2");
  const nlohmann::json& scales = j["variants"][2]["kernel"]["probes"]["scales.q"];  // int_flash
  CHECK(scales["npy"] == "arrays/int_flash.kernel.scales.q.npy");
  CHECK(scales["dtype"] == "<f4");
  CHECK(scales["shape"] == nlohmann::json({4, 16, 16384}));
  CHECK(j["variants"][2]["kernel"]["probes"]["lse"]["dtype"] == "<f8");
  CHECK(j["variants"][2]["kernel"]["probes"]["scales.v"].contains("values"));  // 64 values stay inline
  CHECK(fs::file_size(dir / "arrays/int_flash.kernel.scales.q.npy") == 128 + 4u * 16 * 16384 * 4);

  const Results saved = report::read_results(dir, "test");
  size_t sidecars = 0;
  each_probe(live, saved, [&](const std::string& variant, const char* backend, const std::string& name,
                              const ProbeArray& a, const ProbeArray& b) {
    INFO(variant << " " << backend << " " << name);
    const bool big = a.values.size() > kInlineProbeMax;
    CHECK(b.values.loaded() == !big);  // reading results.json read no sidecar
    CHECK(b.values.sidecar_file().empty() == !big);
    sidecars += big;
    CHECK(b.shape == a.shape);
    CHECK(b.labels == a.labels);
    CHECK(b.unit == a.unit);
    CHECK(b.values.get() == a.values.get());  // element for element, exactly
  });
  CHECK(sidecars == size_t(std::distance(fs::directory_iterator(dir / "arrays"), fs::directory_iterator())));
  CHECK(sidecars == 4 * 2 + 6 + 4 + 1 + 2);  // S_Q, S_K ×4; lse ×6 kernels; channels ×4; the reference's lse; trace m, ℓ
}

TEST_CASE("saved results: views, results table and report page from sidecars equal the live ones", "[results][report]") {
  const Results live = test::big_results();
  const fs::path dir = scratch("views");
  report::write_results_folder(live, dir, kRule);
  const Results saved = report::read_results(dir, "test");

  CHECK(rendered(views::chart_views(saved)) == rendered(views::chart_views(live)));
  // Only what a view asked for was read: no view draws a logsumexp.
  CHECK(saved.variants[2].kernel->probes.at("scales.q").values.loaded());
  CHECK_FALSE(saved.variants[2].kernel->probes.at("lse").values.loaded());
  CHECK(report::to_csv(views::results_table(saved)) == report::to_csv(views::results_table(live)));
  CHECK(report::render_html(saved) == report::render_html(live));

  const fs::path page = scratch("report");
  report::write_report(saved, page);
  const uintmax_t html_bytes = fs::file_size(page / "index.html");
  INFO("index.html: " << html_bytes << " bytes");
  CHECK(html_bytes <= kIndexHtmlBound);
  CHECK(fs::file_size(page / "results.json") <= kResultsJsonBound);
  CHECK(fs::exists(page / "arrays/flash2.reference.trace.m.npy"));  // a report folder travels too
}

TEST_CASE("saved results: schema /1 is read, any other schema refused naming the file and the schemas", "[results][report]") {
  const fs::path h100 = fs::path(ATTNLAB_SOURCE_DIR) / "tests/data/h100-fig6-decode";
  const Results old = report::read_results(h100, "--results");
  CHECK(old.environment.gpu == "NVIDIA H100 80GB HBM3");
  CHECK_FALSE(views::chart_views(old).empty());

  const fs::path dir = scratch("schema");
  fs::create_directories(dir);
  nlohmann::json j = to_json(test::small_results());
  j["schema"] = "attnlab.results/9";
  std::ofstream(dir / "results.json") << j.dump();
  const std::string why = message_of([&] { report::read_results(dir, "--results"); });
  INFO(why);
  CHECK(why.find((dir / "results.json").string()) != std::string::npos);
  CHECK(why.find("\"attnlab.results/9\" is not supported") != std::string::npos);
  CHECK(why.find("attnlab.results/2") != std::string::npos);
  CHECK(why.find("attnlab.results/1") != std::string::npos);
  j.erase("schema");
  std::ofstream(dir / "results.json") << j.dump();
  CHECK(message_of([&] { report::read_results(dir, "--results"); }).find("schema missing is not supported") != std::string::npos);
}

TEST_CASE("saved results: a missing, truncated or escaping sidecar is one InputError naming it, on first access",
          "[results][report]") {
  const Results live = with_one_sidecar();
  const fs::path dir = scratch("damaged");
  report::write_results_folder(live, dir, kRule);
  const fs::path npy = dir / "arrays/turbo.reference.lse.npy";
  REQUIRE(fs::exists(npy));
  CHECK(report::read_results(dir, "test").variants[0].reference->probes.at("lse").values.get() ==
        live.variants[0].reference->probes.at("lse").values.get());

  const uintmax_t size = fs::file_size(npy);
  fs::resize_file(npy, size - 8);
  const Results cut = report::read_results(dir, "test");  // results.json alone reads fine
  const std::string why = message_of([&] { cut.variants[0].reference->probes.at("lse").values.size(); });
  INFO(why);
  CHECK(why.find(npy.string()) != std::string::npos);
  CHECK(why.find("truncated") != std::string::npos);
  CHECK(why.find("probe lse of turbo, reference") != std::string::npos);
  CHECK(why.find('\n') == std::string::npos);
  CHECK(message_of([&] { cut.variants[0].reference->probes.at("lse").values.size(); }) == why);  // says it again

  fs::remove(npy);
  const Results gone = report::read_results(dir, "test");
  CHECK(message_of([&] { report::write_report(gone, scratch("never")); }).find("not found") != std::string::npos);
  CHECK_FALSE(fs::exists(dir.parent_path() / "never"));  // nothing half-written

  nlohmann::json j = nlohmann::json::parse(std::ifstream(dir / "results.json"));
  j["variants"][0]["reference"]["probes"]["lse"]["npy"] = "../elsewhere.npy";
  std::ofstream(dir / "results.json") << j.dump();
  CHECK(message_of([&] { report::read_results(dir, "test"); }).find("must be a path inside the results folder") !=
        std::string::npos);
}

TEST_CASE("saved results: run --json FILE puts the sidecars in FILE.arrays beside it", "[results][report]") {
  const Results live = with_one_sidecar();
  const fs::path dir = scratch("single");
  fs::create_directories(dir);
  report::write_results_file(live, dir / "run.json", report::OutputRule{"--json", {}});
  CHECK(fs::exists(dir / "run.json.arrays/turbo.reference.lse.npy"));
  CHECK(fs::exists(dir / "run.json.arrays" / report::kOutputMarker));
  const Results back = report::read_results(dir / "run.json", "--results");
  CHECK(back.variants[0].reference->probes.at("lse").values.get() == live.variants[0].reference->probes.at("lse").values.get());
  report::write_results_file(live, dir / "run.json", report::OutputRule{"--json", {}});  // replaced, not refused
  CHECK(fs::exists(dir / "run.json.arrays/turbo.reference.lse.npy"));
}

TEST_CASE("gui state: saved results with a missing sidecar keep what was shown and name the file", "[gui-state]") {
  const fs::path dir = scratch("gui");
  report::write_results_folder(with_one_sidecar(), dir, kRule);
  gui::AppState s;
  REQUIRE(s.load_results(dir.string()));  // every array there: shown
  REQUIRE(s.load_results("tests/data/h100-fig6-decode"));
  fs::remove(dir / "arrays/turbo.reference.lse.npy");
  fs::resize_file(dir / "arrays/turbo.reference.trace.m.npy", 100);  // a view draws this one
  CHECK_FALSE(s.load_results(dir.string()));
  INFO(s.error);
  CHECK(s.error.find((dir / "arrays/turbo.reference.trace.m.npy").string()) != std::string::npos);
  CHECK(s.error.find("truncated") != std::string::npos);
  CHECK(s.results_from == "tests/data/h100-fig6-decode/results.json");  // still showing the last good results
  CHECK(s.results->environment.gpu == "NVIDIA H100 80GB HBM3");
}

}  // namespace
}  // namespace attnlab
