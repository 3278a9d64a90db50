// attnlab — the command-line front end. Exit codes (DESIGN.md): 0 success, 2 bad input (one line on
// stderr, "attnlab: error: <where>: <rule>", naming the option, field or file and the rule), 1 internal
// failure. Command-line mistakes are bad input too and follow the same form; the usage is printed by
// --help only.
#include "app/cli/arguments.h"
#include "app/cli/commands.h"
#include "core/error.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <exception>
#include <utility>
#include <vector>

namespace {

int input_error(const std::string& message) {
  std::fprintf(stderr, "attnlab: error: %s\n", attnlab::one_line(message).c_str());
  return 2;
}

// CLI11's own messages hold the offending arguments unescaped: the unexpected ones are named here,
// echoed, with the command they were given to.
int extras_error(const CLI::App& app) {
  const std::vector<std::string> extra = app.remaining(true);
  const std::string command = app.get_subcommands().empty() ? "attnlab" : "attnlab " + app.get_subcommands()[0]->get_name();
  if (extra.empty()) return input_error(fmt::format("{}: unexpected arguments; {} --help lists its options", command, command));
  return input_error(fmt::format("{}: not an option or value {} takes{}; {} --help lists them", attnlab::echo(extra[0]),
                                 command, extra.size() > 1 ? fmt::format(" ({} more unexpected)", extra.size() - 1) : "",
                                 command));
}

// "--json: At Most 1 required but received 2", "--config: 1 required TEXT missing": said plainly.
int mismatch_error(const CLI::ArgumentMismatch& e) {
  const std::string what = e.what();
  const std::string option = what.substr(0, what.find(':'));
  if (what.find("At Most") != std::string::npos) return input_error(option + ": given more than once; give it once");
  if (what.find("missing") != std::string::npos) return input_error(option + ": needs a value");
  return input_error(what);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace attnlab::cli;
  CLI::App app{"attnlab: learn, teach and measure quantized attention"};
  app.require_subcommand(0, 1);  // none given is reported below, in the one-line form
  std::vector<std::pair<CLI::App*, CLI::Option*>> required;  // (command, option it cannot run without)

  RunOptions run;
  auto* run_cmd = app.add_subcommand("run", "run an experiment and print the results table");
  required.emplace_back(run_cmd, run_cmd->add_option("--config", run.config, "experiment config (JSON), required")->check(input_file()));
  run_cmd->add_option("--json", run.json_out, "also write results.json here")->check(not_empty("a file path"));
  run_cmd->add_option("--save", run.save, "also save a results folder here (attnlab report --results and attnlab-gui --results open it)")
      ->check(not_empty("a folder path"));
  run_cmd->add_option("--backend", run.backends, "backends to run (reference, kernel, model); overrides the config")
      ->check(not_empty("a backend"));
  run_cmd->add_option("--gpu", run.gpu, "the GPU the cost model predicts for: auto (the config's default: this machine's GPU) or an id "
                     "(attnlab gpus lists them)")->check(gpu_id());
  run_cmd->add_option("--gpus", run.gpus, "split the problem's sequence across this many GPUs of the host (problem.gpus, "
                     "1 to 8: context parallelism); overrides the config")->check(whole_number());
  run_cmd->add_option("--baseline", run.baseline, "add a column: each time over this variant's reference time")
      ->check(not_empty("a variant label or id"));

  ReportOptions report;
  auto* report_cmd = app.add_subcommand(
      "report", "run an experiment (or take saved results) and write index.html, results.json, results.csv");
  report_cmd->add_option("--config", report.config, "experiment config (JSON); this or --results is required")->check(input_file());
  report_cmd->add_option("--results", report.results,
                         "render saved results instead of running: a results.json or the folder holding one")
      ->check(not_empty("a results.json or its folder"));
  report_cmd->add_option("--out", report.out,
                         "report folder: new, empty, or one attnlab wrote (replaced atomically; default out/report)")
      ->check(not_empty("a folder path"));
  report_cmd->add_option("--gpu", report.gpu, "the GPU the cost model predicts for: auto or an id")->check(gpu_id());
  report_cmd->add_flag("--pdf", report.pdf, "also print index.html to report.pdf with headless Chromium");

  SweepOptions sweep;
  auto* sweep_cmd = app.add_subcommand("sweep", "run an experiment over a grid of one or two varied values; table and CSV");
  required.emplace_back(sweep_cmd, sweep_cmd->add_option("--config", sweep.config, "experiment config (JSON), required")->check(input_file()));
  sweep_cmd->add_option("--vary", sweep.vary,
                        "PATH=v1,v2,… (twice for a grid); PATH: problem.<field>, problem.len, data.seed, "
                        "data.generator, <variant>.<param> or <param>. Default: the config's \"sweep\"")
      ->check(not_empty("PATH=v1,v2,…"));
  sweep_cmd->add_option("--csv", sweep.csv_out, "CSV output (default out/sweep/<config name>.csv)")->check(not_empty("a file path"));
  sweep_cmd->add_option("--backend", sweep.backends, "backends to run; overrides the config")->check(not_empty("a backend"));
  sweep_cmd->add_option("--gpu", sweep.gpu, "the GPU the cost model predicts for: auto or an id")->check(gpu_id());

  CapacityOptions capacity;
  auto* capacity_cmd = app.add_subcommand("capacity", "KV-cache bytes per token, max batch and decode throughput per variant");
  capacity_cmd->add_option("--model", capacity.model, "model: an id in sim/models (llama-3-8b, …) or a path to a model .json")
      ->check(model_id());
  capacity_cmd->add_option("--gpu", capacity.gpu, "GPU: an id in sim/specs (attnlab gpus) or a path to a spec .json")->check(gpu_id());
  capacity_cmd->add_option("--context", capacity.context, "tokens of context per sequence (1 to 2^30)")->check(whole_number());
  capacity_cmd->add_option("--config", capacity.config, "compare the variants of this experiment config instead")
      ->check(input_file());

  CalibrateOptions calibrate;
  auto* calibrate_cmd = app.add_subcommand("calibrate", "fit the cost model's per-unit efficiency factors to measured kernel times");
  required.emplace_back(calibrate_cmd, calibrate_cmd->add_option("--measurements", calibrate.measurements,
                                                                 "measurements JSON (attnlab bench --out), required")
                                           ->check(input_file()));
  calibrate_cmd->add_option("--gpu", calibrate.gpu, "the GPU spec to calibrate: an id or a path to a spec .json (default: the file's id)")
      ->check(gpu_id());
  calibrate_cmd->add_flag("--dry-run", calibrate.dry_run, "print the fit without writing the spec");

  BenchOptions bench;
  auto* bench_cmd = app.add_subcommand("bench", "time the GPU kernels over a config (and its sweep); measurements for calibrate");
  required.emplace_back(bench_cmd, bench_cmd->add_option("--config", bench.config, "experiment config (JSON), required")->check(input_file()));
  bench_cmd->add_option("--vary", bench.vary, "PATH=v1,v2,… as for sweep (default: the config's \"sweep\")")
      ->check(not_empty("PATH=v1,v2,…"));
  bench_cmd->add_option("--out", bench.out, "write the measurements (attnlab.measurements/1) here")->check(not_empty("a file path"));

  auto* gpus_cmd = app.add_subcommand("gpus", "list the GPU specifications the cost model knows (sim/specs)");
  auto* presets_cmd = app.add_subcommand("presets", "list the example experiments and lessons in configs/");
  auto* generators_cmd =
      app.add_subcommand("generators", "list the data generators and their parameters, each with its source");

  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help: the usage, on stdout, exit 0
    return app.exit(e);
  } catch (const CLI::ExtrasError&) {
    return extras_error(app);
  } catch (const CLI::ArgumentMismatch& e) {
    return mismatch_error(e);
  } catch (const CLI::ParseError& e) {  // validators name the option: "--context: must be a whole number, …"
    return input_error(e.what());
  }
  if (app.get_subcommands().empty())
    return input_error("a command is required: run, report, sweep, bench, calibrate, capacity, gpus, presets or generators; "
                       "attnlab --help says what each does");
  for (const auto& [command, option] : required)
    if (*command && option->count() == 0)
      return input_error(fmt::format("{}: is required; attnlab {} --help lists the options", option->get_name(),
                                     command->get_name()));
  try {
    if (*run_cmd) return run_command(run);
    if (*report_cmd) return report_command(report);
    if (*sweep_cmd) return sweep_command(sweep);
    if (*gpus_cmd) return gpus_command();
    if (*bench_cmd) return bench_command(bench);
    if (*capacity_cmd) return capacity_command(capacity);
    if (*calibrate_cmd) return calibrate_command(calibrate);
    if (*presets_cmd) return presets_command();
    if (*generators_cmd) return generators_command();
    return input_error("no command ran");
  } catch (const attnlab::InputError& e) {
    return input_error(e.what());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "attnlab: internal error: %s\n", attnlab::one_line(e.what()).c_str());
    return 1;
  }
}
