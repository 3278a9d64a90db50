// Table views built from Results: the bench view shows each kernel timing beside the model's prediction;
// a number that is not there (no ground truth, no model, not finite) is shown as "—" in every view, the
// CSV and the report, never as "nan" or "inf".
#include "app/report/csv.h"
#include "app/report/html.h"
#include "app/views/axis.h"
#include "app/views/bench.h"
#include "app/views/chart.h"
#include "app/views/table.h"
#include "core/config.h"
#include "core/error.h"
#include "core/gpu_names.h"
#include "core/probes.h"
#include "tests/catch.h"
#include "tests/support/sample_results.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>
#include <regex>

namespace attnlab::views {
namespace ATTNLAB_FILE_LOCAL {

TEST_CASE("bench_table: one row per kernel timing, model over measured", "[views]") {
  Problem p;
  p.batch = 4, p.q_heads = 16, p.kv_heads = 16, p.q_len = 4096, p.kv_len = 4096, p.head_dim = 128, p.causal = true;
  Results r;
  r.problem = to_json(p);
  VariantResult with;
  with.id = with.label = "flash2";
  with.kernel = KernelResult{};
  with.kernel->median_ms = 2.0, with.kernel->tops = 137.5;
  with.model = ModelResult{};
  with.model->time_ms = 1.5, with.model->gpu = "h100-sxm5";
  r.environment.gpu = "NVIDIA H100 80GB HBM3";
  VariantResult without;
  without.id = without.label = "turbo";  // reference only: no row
  r.variants = {with, without};
  const Table t = bench_table({r, r});
  REQUIRE(t.rows.size() == 2);
  const auto& row = t.rows[0];
  CHECK(row[0].text == "flash2");
  CHECK(row[1].text == "B4 H16/16 N4096/4096 d128 causal");
  CHECK(row[2].value == 2.0);
  CHECK(row[8].value == 0.75);
  CHECK(std::isnan(row[9].value));  // no serving loop ran: a dash
  CHECK(row[9].text == kNoNumber);
  // A prediction for another GPU than the one measured: no ratio, and the cell says for which GPU it was.
  Results other = r;
  other.environment.gpu = "NVIDIA H200";
  const auto across = bench_table({other}).rows[0];
  CHECK(std::isnan(across[8].value));
  CHECK(across[8].text == "— (model for h100-sxm5)");
  CHECK(across[7].value == 1.5);  // the prediction itself is still shown
  with.model.reset();
  const auto no_model = bench_table({Results{r.config, r.problem, r.environment, {with}, {}}}).rows[0];
  CHECK(std::isnan(no_model[8].value));
  CHECK(no_model[7].text == kNoNumber);  // no model ran: a dash, not "nan"
  CHECK(no_model[8].text == kNoNumber);
  // A kernel that ran the serving loop: step / attend from its decode.steps probe.
  with.kernel->probes["decode.steps"] = labelled({"steps", "step_ms", "attend_ms", "step_over_attend"},
                                                 {256, 2.2, 2.0, 1.1}, "", "");
  const Table s = bench_table({Results{r.config, r.problem, r.environment, {with}, {}}});
  CHECK(s.rows[0][9].value == 1.1);
  CHECK(s.rows[0][9].text == "1.100");
}

TEST_CASE("bench_table: the SM clock of each row's timed runs, where it was read", "[views]") {
  Problem p;
  p.batch = 4, p.q_heads = 16, p.kv_heads = 16, p.q_len = 8192, p.kv_len = 8192, p.head_dim = 128;
  VariantResult clocked, unclocked;
  clocked.id = clocked.label = "flash2";
  clocked.kernel = KernelResult{};
  clocked.kernel->median_ms = 3.85;
  clocked.kernel->sm_clock = KernelResult::Clock{1590, 1755, 1980, 30};
  unclocked = clocked;
  unclocked.label = "flash2_heads";
  unclocked.kernel->sm_clock.reset();
  Results r;
  r.problem = to_json(p);
  r.variants = {clocked, unclocked};
  const Table t = bench_table({r});
  REQUIRE(t.columns.size() == 11);  // the ten, then the clock
  CHECK(t.columns[10].key == "sm_clock_mhz");
  CHECK(t.rows[0][10].text == "1755 (1590–1980)");
  CHECK(t.rows[0][10].value == 1755);
  CHECK(t.rows[1][10].text == kNoNumber);  // a row timed without the clock: a dash
  r.variants = {unclocked};  // no row has a clock: no columns for it
  CHECK(bench_table({r}).columns.size() == 10);
}

TEST_CASE("number_cell and tick_label: a value that is not finite is shown as a dash", "[views]") {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  CHECK(number_cell(1.5, "{:.2f}").text == "1.50");
  CHECK(number_cell(1.5, "{:.2f}").value == 1.5);
  for (const double x : {nan, -nan, inf, -inf}) {
    CHECK(number_cell(x, "{:.3e}").text == kNoNumber);
    CHECK(std::isnan(number_cell(x, "{:.3e}").value));
    CHECK(tick_label(x) == kNoNumber);
  }
  CHECK(tick_label(0.25) == "0.25");
}

// A timing-only reference row (no ground truth: every metric NaN) and a row whose time overflowed, beside
// a finite row that must still show its numbers.
Results results_with_missing_numbers() {
  Results r = test::small_results();
  VariantResult blank = r.variants.at(0);
  blank.id = "flash2", blank.label = "no-truth";
  blank.reference->metrics = no_metrics();
  blank.reference->time_ms = std::numeric_limits<double>::infinity();
  blank.reference->gflops = -std::numeric_limits<double>::quiet_NaN();
  blank.model.reset(), blank.kernel.reset();
  r.variants.at(0).reference->metrics = {1e-3, 2e-3, 0.999, 4e-3};
  r.variants.at(0).reference->time_ms = 2, r.variants.at(0).reference->gflops = 1;
  r.variants.push_back(blank);
  return r;
}

TEST_CASE("results_table, with_time_ratio, CSV and report: no metric printed as nan or inf", "[views][report]") {
  const Results r = results_with_missing_numbers();
  const Table t = with_time_ratio(results_table(r), "turbo");
  const std::regex not_a_number("nan|inf", std::regex::icase);
  int dashes = 0, not_finite = 0;
  for (const auto& row : t.rows)
    for (const Cell& c : row) {
      INFO(c.text);
      CHECK_FALSE(std::regex_search(c.text, not_a_number));
      if (c.text == kNoNumber) {
        ++dashes;
        CHECK(std::isnan(c.value));
      }
      if (c.text == fmt::format("{} (the output is not finite)", kNoNumber)) {
        ++not_finite;
        CHECK(std::isnan(c.value));
      }
    }
  // The blank row: its time, rate and the ratio of an infinite time; the sample kernel's rate, which it did
  // not record (0). Its four metrics say why they are missing (a truth was computed, so the output was not
  // finite).
  CHECK(dashes == 4);
  CHECK(not_finite == 4);
  const auto& good = t.rows.at(0);
  CHECK(good[2].text == "1.000e-03");
  CHECK(good[4].text == "0.999000");

  // The CSV leaves a missing number's field empty; the blank row is the last line.
  const std::string csv = report::to_csv(t);
  CHECK_FALSE(std::regex_search(csv, not_a_number));
  const std::string last = csv.substr(csv.rfind('\n', csv.size() - 2) + 1);
  CHECK(last.rfind("no-truth,reference,,,,,,,", 0) == 0);

  // The report's tables and chart tooltips.
  const std::string html = report::render_html(r);
  CHECK_FALSE(std::regex_search(html, std::regex(R"([>:, ]-?(nan|inf)\b)", std::regex::icase)));
  CHECK(html.find(std::string(">") + kNoNumber + "<") != std::string::npos);
}

TEST_CASE("results_table: a timing-only run's metric cells are empty, the legend says why once", "[views]") {
  Results r = test::small_results();
  r.environment.ground_truth = false;
  for (auto& v : r.variants) {
    if (v.reference) v.reference->metrics = no_metrics();
    if (v.kernel) v.kernel->metrics = no_metrics();
  }
  const Results back = results_from_json(to_json(r));  // the flag survives results.json
  CHECK_FALSE(back.environment.ground_truth);
  CHECK(results_from_json(to_json(test::small_results())).environment.ground_truth);
  const Table t = results_table(back);
  int empty = 0;
  for (const auto& row : t.rows)
    for (size_t c = 2; c <= 5; ++c) {
      CHECK(row[c].text.empty());
      empty += row[c].text.empty();
    }
  CHECK(empty == 12);  // a reference, a kernel and a model row
  CHECK(t.legend.find("no errors: a timing-only run computes no FP64 truth") != std::string::npos);
}

size_t column_of(const Table& t, const std::string& key) {
  for (size_t c = 0; c < t.columns.size(); ++c)
    if (t.columns[c].key == key) return c;
  FAIL("no column " << key);
  return 0;
}

// Times from different machines never share a column: the reference's on this CPU, the kernel's on the GPU, the
// model's for the GPU it predicts for, each column titled with its machine and each row filling its own. A model
// row's error cells and a kernel's KV-cache cell are empty (not "— (why)" in every row), the legend says why once.
TEST_CASE("results_table: one time column per machine, empty cells explained by one legend line", "[views]") {
  Results r = test::small_results();
  r.environment.cpu = "Example CPU 9000", r.environment.threads = 2;
  r.environment.gpu = "NVIDIA H200";
  r.variants[0].model->gpu = "h200";
  const Table t = results_table(r);
  const size_t cpu = column_of(t, "time_cpu_ms"), gpu = column_of(t, "time_gpu_ms"), model = column_of(t, "time_model_ms");
  CHECK(t.columns[cpu].title == "time on CPU");
  CHECK(t.columns[gpu].title == "time on H200");
  CHECK(t.columns[model].title == "predicted for h200");
  REQUIRE(t.rows.size() == 3);
  const auto& ref = t.rows[0];
  const auto& kern = t.rows[1];
  const auto& pred = t.rows[2];
  CHECK(ref[cpu].value == 0.0);  // the sample's reference time
  CHECK(ref[gpu].text.empty());
  CHECK(ref[model].text.empty());
  CHECK(kern[gpu].value == 0.002);
  CHECK(kern[cpu].text.empty());
  CHECK(kern[model].text.empty());
  CHECK(pred[model].value == 0.001);
  CHECK(pred[cpu].text.empty());
  CHECK(pred[gpu].text.empty());
  for (size_t c = 2; c <= 5; ++c) CHECK(pred[c].text.empty());
  CHECK(kern[column_of(t, "kv_cache_bytes")].text.empty());
  for (const auto& row : t.rows)
    for (size_t c = 2; c < row.size(); ++c) CHECK(row[c].text.rfind(std::string(kNoNumber) + " (", 0) == std::string::npos);
  CHECK(t.legend.find("time on CPU: the reference on Example CPU 9000, 2 threads") != std::string::npos);
  CHECK(t.legend.find("time on H200: the kernel's median on the NVIDIA H200") != std::string::npos);
  CHECK(t.legend.find("model rows have no output, so no errors") != std::string::npos);
  CHECK(t.legend.find('\n') == std::string::npos);  // one line

  // A run without a kernel has no GPU column; a reference-only run has the CPU's alone.
  r.variants[0].kernel.reset();
  const Table no_kernel = results_table(r);
  for (const auto& c : no_kernel.columns) CHECK(c.key != "time_gpu_ms");
  r.variants[0].model.reset();
  const Table reference_only = results_table(r);
  CHECK(reference_only.legend.find("model rows") == std::string::npos);
  for (const auto& c : reference_only.columns) CHECK(c.key != "time_model_ms");

  // The report draws the legend under the table.
  const std::string html = report::render_html(test::small_results());
  CHECK(html.find("<p class=\"note legend\">time on CPU: the reference on") != std::string::npos);
}

// time / baseline divides a row's time by the baseline's time on the same backend: a kernel's time by the
// baseline's kernel time, never by its CPU reference time.
TEST_CASE("with_time_ratio: a ratio never crosses machines", "[views]") {
  Results r = test::small_results();
  VariantResult fast = r.variants[0];
  fast.id = "flash2", fast.label = "fast";
  fast.reference->time_ms = 2, r.variants[0].reference->time_ms = 8;
  fast.kernel->median_ms = 0.001;                           // turbo's: 0.002
  fast.model.reset();                                       // no prediction for it
  r.variants.push_back(fast);
  const Table t = with_time_ratio(results_table(r), "turbo");
  const size_t ratio = column_of(t, "time_ratio");
  REQUIRE(t.rows.size() == 5);  // turbo: reference, kernel, model; fast: reference, kernel
  CHECK(t.rows[0][ratio].value == 1.0);
  CHECK(t.rows[3][ratio].value == 0.25);  // 2 / 8 on the CPU
  CHECK(t.rows[4][ratio].value == 0.5);   // 0.001 / 0.002 on the GPU
  CHECK(t.legend.find("time / turbo: over turbo's time on the same backend") != std::string::npos);
  const Table by_fast = with_time_ratio(results_table(r), "fast");
  CHECK(by_fast.rows[2][ratio].text.empty());  // turbo's prediction: fast has none to divide by
  CHECK_THROWS_AS(with_time_ratio(results_table(r), "absent"), InputError);
}

// The report's first section says what ran: the backends, each with the variants it ran for and every variant
// (or the whole backend) it did not run for, with the reason — before the results table, not at the bottom.
TEST_CASE("what_ran_table: the report's first section names what did not run and why", "[views][report]") {
  Results r = test::small_results();
  VariantResult naive = r.variants[0];
  naive.id = naive.label = "naive";
  naive.kernel.reset();
  r.variants.push_back(naive);
  r.environment.ran = {"reference", "kernel", "model"};
  r.environment.skipped = {{"naive", "kernel", "no kernel for this variant"}, {"", "kernel", kNotRequested}};
  const Table t = what_ran_table(r);
  REQUIRE(t.rows.size() == 3);
  CHECK(t.rows[0][0].text == "reference");
  CHECK(t.rows[0][1].text == "every variant");
  CHECK(t.rows[1][0].text == "kernel");
  CHECK(t.rows[1][1].text == "turbo");
  CHECK(t.rows[1][2].text == "naive: no kernel for this variant");
  CHECK(not_run_line(r.environment) == "kernel for naive: no kernel for this variant");
  const std::string html = report::render_html(r);
  const size_t first = html.find("naive: no kernel for this variant");
  REQUIRE(first != std::string::npos);
  CHECK(first < html.find("Results (errors against the FP64 ground truth)"));
  CHECK(html.find("Backends that did not run") == std::string::npos);  // no second list at the bottom

  // A backend that was not asked for has no row; one that did not run at all has its reason.
  r.variants[0].kernel.reset();
  r.environment.ran = {"reference", "model"};
  r.environment.skipped = {{"", "kernel", "no CUDA GPU found (no NVIDIA driver is installed)"}};
  const Table none = what_ran_table(r);
  REQUIRE(none.rows.size() == 3);
  CHECK(none.rows[1][1].text == "none");
  CHECK(none.rows[1][2].text == "no CUDA GPU found (no NVIDIA driver is installed)");
  r.environment.skipped = {{"", "kernel", kNotRequested}};
  CHECK(what_ran_table(r).rows.size() == 2);
}

}  // namespace
}  // namespace attnlab::views

namespace attnlab::views {
namespace ATTNLAB_FILE_LOCAL {

TEST_CASE("what ran comes first: the GPU named, or why the kernels did not run, at the top of the report", "[views]") {
  Results r = test::small_results();
  r.environment.gpu.reset();
  r.environment.ran = {"reference", "model"};
  r.environment.skipped = {{"", "kernel", "no CUDA GPU found (no NVIDIA driver is installed)"}};
  CHECK(ran_line(r.environment) == "reference, model");
  CHECK(gpu_line(r.environment) == "none — no CUDA GPU found (no NVIDIA driver is installed)");
  CHECK(not_run_line(r.environment) == "kernel: no CUDA GPU found (no NVIDIA driver is installed)");
  const std::string html = report::render_html(r);
  const size_t ran = html.find("<p class=\"ran\">Ran: reference, model · GPU: none — no CUDA GPU found (no NVIDIA driver is "
                               "installed) · <strong>not run</strong>: kernel: no CUDA GPU found");
  REQUIRE(ran != std::string::npos);
  CHECK(ran < html.find("<table"));  // before the results table, not only in the list at the bottom

  r.environment.skipped = {{"", "kernel", "not requested"}};  // not asked for: no reason to give
  CHECK(gpu_line(r.environment) == "none");
  CHECK(not_run_line(r.environment).empty());
  r.environment.gpu = "NVIDIA H100 80GB HBM3";
  r.environment.skipped = {{"fireq", "kernel", "no kernel for this variant yet"}};  // one variant: not the backend
  CHECK(gpu_line(r.environment) == "NVIDIA H100 80GB HBM3");
  CHECK(not_run_line(r.environment) == "kernel for fireq: no kernel for this variant yet");
  // The model pinned to another GPU (core/gpu_names.h): the line says so, in the report's first lines too.
  r.environment.gpu = "NVIDIA H200";
  r.environment.model_gpu = "h100-sxm5";
  r.environment.model_gpu_note = model_gpu_for("h100-sxm5", r.environment.gpu).note;
  CHECK(gpu_line(r.environment) == "NVIDIA H200 (the model predicts for h100-sxm5 (gpu_model), the GPU here is the NVIDIA "
                                   "H200: different GPUs, no model error drawn)");
  CHECK(report::render_html(r).find("GPU: NVIDIA H200 (the model predicts for h100-sxm5") != std::string::npos);
}

}  // namespace
}  // namespace attnlab::views
