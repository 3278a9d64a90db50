// Times measured elsewhere as baselines (report.baselines; core/results.h ExternalTiming, sim/baselines.h): a config
// names attnlab.measurements/1 files of other implementations (PyTorch SDPA's cuDNN backend, …), their rows on the
// run's problem become rows of their own — never this run's — and report.speedup_over may name one, its bars drawn
// only on the GPU it was measured on. The Fig. 6 decode preset carries the H200's SDPA times of 2026-12-05.
#include "app/cli/backends.h"
#include "app/report/html.h"
#include "app/views/bench.h"
#include "app/views/chart.h"
#include "app/views/table.h"
#include "core/config.h"
#include "core/error.h"
#include "core/runner.h"
#include "sim/baselines.h"
#include "tests/catch.h"
#include "tests/support/sample_results.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

namespace attnlab::views {
namespace ATTNLAB_FILE_LOCAL {

namespace fs = std::filesystem;
using nlohmann::json;

// A measurements file in the test's scratch folder: rows of (implementation, kv_len, ms) at the sample shape.
fs::path measurements_file(const std::string& name, const std::string& gpu, const json& rows) {
  const fs::path dir = fs::path(ATTNLAB_TEST_TMP) / "baselines";
  fs::create_directories(dir);
  const fs::path path = dir / name;
  std::ofstream(path) << json{{"schema", "attnlab.measurements/1"}, {"gpu", gpu}, {"measurements", rows}}.dump();
  return path;
}

json row(const std::string& implementation, int kv_len, double ms) {
  json r = {{"variant", "flash2"},
            {"problem", {{"batch", 2}, {"q_heads", 8}, {"kv_heads", 2}, {"q_len", 1}, {"kv_len", kv_len},
                         {"head_dim", 64}, {"phase", "decode"}}},
            {"median_ms", ms}};
  if (!implementation.empty()) r["implementation"] = implementation;
  return r;
}

Experiment decode_experiment(const std::vector<fs::path>& files, const std::string& speedup_over = "") {
  json report = {{"baselines", json::array()}};
  for (const auto& f : files) report["baselines"].push_back(f.filename().string());  // relative to the config
  if (!speedup_over.empty()) report["speedup_over"] = speedup_over;
  const json config = {{"problem", {{"batch", 2}, {"q_heads", 8}, {"kv_heads", 2}, {"q_len", 1}, {"kv_len", 256},
                                    {"head_dim", 64}, {"phase", "decode"}}},
                       {"variants", json::array({{{"id", "flash2"}}})},
                       {"backends", {"model"}},
                       {"gpu_model", "h200"},
                       {"report", report}};
  return parse_experiment(config, files.empty() ? "." : files.front().parent_path().string());
}

TEST_CASE("report.baselines: the rows on the run's problem, one per implementation, with their file's GPU",
          "[views][sim][config]") {
  const fs::path a = measurements_file("a.json", "h200",
                                       json::array({row("sdpa_cudnn", 256, 0.02), row("sdpa_cudnn", 512, 0.03),
                                                    row("", 256, 0.5),  // attnlab's own: not a baseline
                                                    row("sdpa_flash", 256, 0.025),
                                                    row("sdpa_cudnn", 256, 0.9)}));  // a second run
  const fs::path b = measurements_file("b.json", "h100-sxm5", json::array({row("fa3_bf16", 256, 0.04)}));
  const Experiment e = decode_experiment({a, b});
  REQUIRE(e.baselines.size() == 2);
  CHECK(e.baselines[0] == a.lexically_normal().string());  // resolved against the config's folder
  const std::vector<ExternalTiming> got = sim::external_timings(e);
  REQUIRE(got.size() == 3);
  CHECK(got[0].implementation == "sdpa_cudnn");
  CHECK(got[0].median_ms == 0.02);  // the first row met, N 256 (not N 512, not the later run)
  CHECK(got[0].gpu == "h200");
  CHECK(got[0].variant == "flash2");
  CHECK(got[1].implementation == "sdpa_flash");
  CHECK(got[2].implementation == "fa3_bf16");
  CHECK(got[2].gpu == "h100-sxm5");

  // The runner reads them before anything runs; results.json keeps them.
  const Results r = cli::make_runner().run(e);
  REQUIRE(r.external.size() == 3);
  const Results back = results_from_json(to_json(r));
  REQUIRE(back.external.size() == 3);
  CHECK(back.external[1].median_ms == 0.025);
  CHECK(back.external[2].file == b.lexically_normal().string());
}

TEST_CASE("report.baselines: a bad file or a speedup_over nothing names is refused before the run, naming the field",
          "[views][sim][config][bad-input]") {
  const fs::path a = measurements_file("c.json", "h200", json::array({row("sdpa_cudnn", 256, 0.02)}));
  const fs::path broken = measurements_file("broken.json", "h200", json::array());  // no rows: invalid
  const auto message = [](const Experiment& e) {
    try {
      cli::make_runner().run(e);
    } catch (const InputError& err) {
      return std::string(err.what());
    }
    return std::string();
  };
  CHECK(message(decode_experiment({a, broken})).rfind("report.baselines[1]: ", 0) == 0);
  CHECK(message(decode_experiment({a}, "sdpa_cudnn")).empty());  // an implementation measured on this problem
  CHECK(message(decode_experiment({a}, "flash2")).empty());      // a listed variant
  CHECK(message(decode_experiment({a}, "fa3_bf16")).rfind("report.speedup_over: 'fa3_bf16' is neither", 0) == 0);
  // Without baselines, speedup_over must name a listed variant when the config is read.
  json config = {{"variants", json::array({{{"id", "flash2"}}})}, {"report", {{"speedup_over", "sdpa_cudnn"}}}};
  CHECK_THROWS_AS(parse_experiment(config), InputError);
  config["report"] = {{"baselines", "not an array"}};
  try {
    parse_experiment(config);
    FAIL("a baselines value that is not an array was accepted");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("report.baselines") != std::string::npos);
  }
}

Results with_external(const std::string& gpu, double ms) {
  Results r = test::small_results();  // turbo: reference, kernel 0.002 ms, model 0.001 ms for the h100-sxm5
  r.environment.gpu = "NVIDIA H100 80GB HBM3";
  r.external = {{"sdpa_cudnn", "flash2", ms, gpu, "peers.json"}};
  r.config["report"] = {{"speedup_over", "sdpa_cudnn"}};
  return r;
}

// In the results table an external time stands in a column of its own, titled with the GPU it ran on, on a row of
// its own whose error cells are empty — never in this run's GPU column.
TEST_CASE("results_table: baselines as rows of their own, in their own machine's column", "[views]") {
  const Table t = results_table(with_external("h200", 0.004));
  const auto& last = t.rows.back();
  CHECK(last[0].text == "sdpa_cudnn");
  CHECK(last[1].text == "external");
  size_t column = 0;
  for (size_t c = 0; c < t.columns.size(); ++c)
    if (t.columns[c].key == "time_external_ms") column = c;
  REQUIRE(column > 0);
  CHECK(t.columns[column].title == "measured on h200");
  CHECK(last[column].value == 0.004);
  for (size_t c = 2; c <= 5; ++c) CHECK(last[c].text.empty());
  for (const auto& x : t.rows)
    if (x[1].text != "external") CHECK(x[column].text.empty());
  CHECK(t.legend.find("measured on h200: other implementations' times from peers.json, not this run") != std::string::npos);
}

// speedup_over naming a baseline: the kernels' bars over its time where it was measured on their GPU, the model's
// where it was measured on the GPU the model predicts for; otherwise no bars of that kind, and the note says why.
TEST_CASE("speedup over a baseline measured elsewhere: bars only on the GPU it was measured on", "[views]") {
  const auto speedup = [](const Results& r) -> std::optional<View> {
    for (auto& v : chart_views(r))
      if (v.id == "speedup") return v;
    return std::nullopt;
  };
  const auto on_h100 = speedup(with_external("h100-sxm5", 0.004));  // the kernel's GPU and the model's spec
  REQUIRE(on_h100);
  const auto& c = std::get<BarChart>(on_h100->body);
  REQUIRE(c.stacks.size() == 2);
  CHECK(c.bars[0].segments[0] == Approx(4.0));  // predicted: 0.004 / 0.001
  CHECK(c.bars[0].segments[1] == Approx(2.0));  // measured: 0.004 / 0.002
  CHECK(on_h100->note.find("over sdpa_cudnn measured on the h100-sxm5 (peers.json)") != std::string::npos);

  const auto elsewhere = speedup(with_external("h200", 0.004));
  REQUIRE_FALSE(elsewhere);  // neither kind of bar can be drawn: no view
  Results model_h200 = with_external("h200", 0.004);
  model_h200.variants[0].model->gpu = "h200";
  const auto predicted = speedup(model_h200);
  REQUIRE(predicted);
  CHECK(std::get<BarChart>(predicted->body).stacks == std::vector<std::string>{"predicted (model)"});
  CHECK(predicted->note.find("No measured (kernel) bars: sdpa_cudnn was measured on the h200, the kernels ran on "
                             "NVIDIA H100 80GB HBM3") != std::string::npos);
}

TEST_CASE("bench_table: baselines on each shape as rows, and the fastest on this GPU over each kernel", "[views]") {
  Results r = with_external("h100-sxm5", 0.003);
  r.external.push_back({"sdpa_flash", "flash2", 0.005, "h100-sxm5", "peers.json"});
  const Table t = bench_table({r});
  REQUIRE(t.rows.size() == 3);  // turbo's kernel, then the two baselines
  CHECK(t.columns.back().key == "best_baseline_ratio");
  CHECK(t.rows[0].back().value == Approx(1.5));  // 0.003 / 0.002
  CHECK(t.rows[1][0].text == "sdpa_cudnn (h100-sxm5)");
  CHECK(t.rows[1][2].value == 0.003);
  CHECK(t.rows[2][0].text == "sdpa_flash (h100-sxm5)");
  const Table other = bench_table({with_external("h200", 0.003)});
  CHECK(other.rows[0].back().text == "— (baselines from another GPU)");
}

// The preset: Fig. 6's decode with the H200's SDPA times beside it (kernels/bench/h200-fig6-decode-sdpa-2026-12-05.json,
// converted from peer_bench.py's rows by kernels/bench/peers_to_measurements.py).
TEST_CASE("the Fig. 6 decode preset reads its SDPA baselines at every length it sweeps", "[views][config]") {
  Experiment e = load_experiment(std::string(ATTNLAB_SOURCE_DIR) + "/configs/papers/turbo-fig6-decode.json");
  e.backends = {"model"};
  for (const int64_t n : {4096, 32768}) {
    set_value(e, "problem.kv_len", n, "test");
    const std::vector<ExternalTiming> got = sim::external_timings(e);
    REQUIRE(got.size() == 2);
    CHECK(got[0].implementation == "sdpa_cudnn");
    CHECK(got[0].gpu == "h200");
    CHECK(got[1].implementation == "sdpa_flash");
  }
  const std::string html = report::render_html(cli::make_runner().run(e));
  CHECK(html.find("<td class=\"text\">sdpa_cudnn</td><td class=\"text\">external</td>") != std::string::npos);
}

}  // namespace
}  // namespace attnlab::views
