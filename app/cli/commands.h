// attnlab cli: the subcommands. Each returns the process exit code (0 ok, 2 bad input, 1 internal).
#pragma once

#include <string>
#include <vector>

namespace attnlab {
struct Experiment;
}

namespace attnlab::cli {

struct RunOptions {
  std::string config;
  std::string json_out;               // --json OUT
  std::string save;                   // --save DIR: a results folder for report --results / the GUI
  std::vector<std::string> backends;  // --backend, overrides the config's list
  std::string baseline;               // --baseline LABEL: add each row's time over that variant's
  std::string gpu;                    // --gpu ID: the cost model's GPU, overrides the config
  std::string gpus;                   // --gpus N: problem.gpus (context parallelism), overrides the config
};
int run_command(const RunOptions& o);

struct ReportOptions {
  std::string config;
  std::string results;  // --results: render saved results (a results.json or the folder holding one) instead
  std::string out = "out/report";
  std::string gpu;
  bool pdf = false;
};
int report_command(const ReportOptions& o);

struct SweepOptions {
  std::string config;
  std::vector<std::string> vary;      // --vary PATH=v1,v2,… (one or two); the config's "sweep" when empty
  std::string csv_out;                // --csv OUT; default out/sweep/<config name>.csv
  std::vector<std::string> backends;  // --backend, overrides the config's list
  std::string gpu;
};
int sweep_command(const SweepOptions& o);

struct CapacityOptions {
  std::string model = "llama-3-8b";
  std::string gpu = "h100-sxm5";
  int64_t context = 4096;
  std::string config;  // optional: the variants (with parameters) to compare; default: every variant
};
int capacity_command(const CapacityOptions& o);

struct CalibrateOptions {
  std::string measurements;
  std::string gpu;       // default: the measurements file's "gpu"
  bool dry_run = false;  // print, do not write the spec
};
int calibrate_command(const CalibrateOptions& o);

struct BenchOptions {
  std::string config;
  std::vector<std::string> vary;  // as sweep; default the config's "sweep", else the config alone
  std::string out;                // measurements JSON (attnlab.measurements/1) for attnlab calibrate
};
int bench_command(const BenchOptions& o);

int presets_command();
int generators_command();  // the data generators' parameters: default, range, help (with its source)
int gpus_command();  // the GPU specs the cost model knows

// Where the presets live: $ATTNLAB_CONFIGS, else the source tree's configs/.
std::string configs_dir();

// --gpu ID of run, report and sweep: the GPU the cost model predicts for, in place of the config's; refused
// as "--gpu: …" when no spec has that id or path. An empty id keeps the config's.
void override_gpu(Experiment& e, const std::string& gpu);

}  // namespace attnlab::cli
