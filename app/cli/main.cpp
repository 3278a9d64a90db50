// attnlab — the command-line front end. Exit codes (DESIGN.md): 0 success, 2 bad input (one line on
// stderr naming the field or file and the rule), 1 internal failure.
#include "app/cli/commands.h"
#include "core/error.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <exception>

int main(int argc, char** argv) {
  using namespace attnlab::cli;
  CLI::App app{"attnlab: learn, teach and measure quantized attention"};
  app.require_subcommand(1);

  RunOptions run;
  auto* run_cmd = app.add_subcommand("run", "run an experiment and print the results table");
  run_cmd->add_option("--config", run.config, "experiment config (JSON)")->required();
  run_cmd->add_option("--json", run.json_out, "also write results.json here");
  run_cmd->add_option("--backend", run.backends, "backends to run (reference, kernel, model); overrides the config");
  run_cmd->add_option("--gpu", run.gpu, "the GPU the cost model predicts for (attnlab gpus lists them)");
  run_cmd->add_option("--baseline", run.baseline, "add a column: each time over this variant's reference time");

  ReportOptions report;
  auto* report_cmd = app.add_subcommand("report", "run an experiment and write index.html, results.json, results.csv");
  report_cmd->add_option("--config", report.config, "experiment config (JSON)")->required();
  report_cmd->add_option("--out", report.out, "report folder (replaced atomically)");
  report_cmd->add_option("--gpu", report.gpu, "the GPU the cost model predicts for");
  report_cmd->add_flag("--pdf", report.pdf, "also print index.html to report.pdf with headless Chromium");

  SweepOptions sweep;
  auto* sweep_cmd = app.add_subcommand("sweep", "run an experiment over a grid of one or two varied values; table and CSV");
  sweep_cmd->add_option("--config", sweep.config, "experiment config (JSON)")->required();
  sweep_cmd->add_option("--vary", sweep.vary,
                        "PATH=v1,v2,… (twice for a grid); PATH: problem.<field>, problem.len, data.seed, "
                        "data.generator, <variant>.<param> or <param>. Default: the config's \"sweep\"");
  sweep_cmd->add_option("--csv", sweep.csv_out, "CSV output (default out/sweep/<config name>.csv)");
  sweep_cmd->add_option("--backend", sweep.backends, "backends to run; overrides the config");
  sweep_cmd->add_option("--gpu", sweep.gpu, "the GPU the cost model predicts for");

  CapacityOptions capacity;
  auto* capacity_cmd = app.add_subcommand("capacity", "KV-cache bytes per token, max batch and decode throughput per variant");
  capacity_cmd->add_option("--model", capacity.model, "model: an id in sim/models (llama-3-8b, …) or a path to a model .json");
  capacity_cmd->add_option("--gpu", capacity.gpu, "GPU: an id in sim/specs (attnlab gpus) or a path to a spec .json");
  capacity_cmd->add_option("--context", capacity.context, "tokens of context per sequence (1 to 2^30)");
  capacity_cmd->add_option("--config", capacity.config, "compare the variants of this experiment config instead");

  CalibrateOptions calibrate;
  auto* calibrate_cmd = app.add_subcommand("calibrate", "fit the cost model's per-unit efficiency factors to measured kernel times");
  calibrate_cmd->add_option("--measurements", calibrate.measurements, "measurements JSON (attnlab bench --out)")->required();
  calibrate_cmd->add_option("--gpu", calibrate.gpu, "the GPU spec to calibrate: an id or a path to a spec .json (default: the file's id)");
  calibrate_cmd->add_flag("--dry-run", calibrate.dry_run, "print the fit without writing the spec");

  BenchOptions bench;
  auto* bench_cmd = app.add_subcommand("bench", "time the GPU kernels over a config (and its sweep); measurements for calibrate");
  bench_cmd->add_option("--config", bench.config, "experiment config (JSON)")->required();
  bench_cmd->add_option("--vary", bench.vary, "PATH=v1,v2,… as for sweep (default: the config's \"sweep\")");
  bench_cmd->add_option("--out", bench.out, "write the measurements (attnlab.measurements/1) here");

  auto* gpus_cmd = app.add_subcommand("gpus", "list the GPU specifications the cost model knows (sim/specs)");
  app.add_subcommand("presets", "list the example experiments and lessons in configs/");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  try {
    if (*run_cmd) return run_command(run);
    if (*report_cmd) return report_command(report);
    if (*sweep_cmd) return sweep_command(sweep);
    if (*gpus_cmd) return gpus_command();
    if (*bench_cmd) return bench_command(bench);
    if (*capacity_cmd) return capacity_command(capacity);
    if (*calibrate_cmd) return calibrate_command(calibrate);
    return presets_command();
  } catch (const attnlab::InputError& e) {
    std::fprintf(stderr, "attnlab: error: %s\n", attnlab::one_line(e.what()).c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "attnlab: internal error: %s\n", attnlab::one_line(e.what()).c_str());
    return 1;
  }
}
