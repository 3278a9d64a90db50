// attnlab core: Results — the one value every front end renders (DESIGN.md, results.json schema
// "attnlab.results/2": large probe arrays in .npy sidecars beside it, results_sidecars.h). A backend that
// did not run is absent from a variant, and `environment` says why.
#pragma once

#include "core/metrics.h"
#include "core/probes.h"
#include "core/tensor.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace attnlab {

inline constexpr const char* kResultsSchema = "attnlab.results/2";
// Still read: every probe array inline (the shipped tests/data/h100-fig6-decode is one).
inline constexpr const char* kResultsSchemaV1 = "attnlab.results/1";

class SidecarPlan;

struct ReferenceResult {
  Metrics metrics;
  double time_ms = 0.0;
  double gflops = 0.0;  // Problem::flops() / time
  int64_t kv_cache_bytes = 0;
  Probes probes;
};

struct KernelResult {
  Metrics metrics;
  double median_ms = 0.0, p10_ms = 0.0, p90_ms = 0.0;
  double tops = 0.0;
  double hbm_gbps = 0.0;
  Probes probes;  // values read back from the GPU (scales)
  // O (B, Hq, Nq, d) read back from the GPU, the tensor the metrics were computed from: the runner hands it
  // to RunControl::on_output and drops it (results.json holds no outputs).
  std::optional<Tensor> output;
  // The SM clock read after each of the `runs` timed runs (kernels/common/sm_clock.h): lowest, median, highest, MHz.
  // Absent where the clock is not known.
  struct Clock {
    // What a saved file may hold (results.json's kernel.sm_clock and a measurements file's sm_clock_* fields alike).
    static constexpr double kMinMhz = 1, kMaxMhz = 1e5, kMaxRuns = 1e6;
    double min_mhz = 0.0, median_mhz = 0.0, max_mhz = 0.0;
    int runs = 0;
  };
  std::optional<Clock> sm_clock;
};

struct ModelResult {
  std::string gpu;
  double time_ms = 0.0;
  std::string bound;                           // "memory" or "compute" or the unit that bounds it
  std::map<std::string, double> hbm_bytes;     // total, q, k, v, o, scales, kv_cache
  std::map<std::string, double> ops;           // mma_int8, mma_fp16, mma_fp8, exp_sfu, fma_fp32
  nlohmann::json details = nlohmann::json::object();  // footprint, occupancy, per-unit times
};

struct VariantResult {
  std::string id;
  std::string label;  // the config's label, or the id when none was given
  nlohmann::json params = nlohmann::json::object();  // every parameter, defaults filled in
  std::optional<ReferenceResult> reference;
  std::optional<KernelResult> kernel;
  std::optional<ModelResult> model;
};

// The reason of a backend the experiment did not ask for: no reason to show a user (views/ and the CLI leave
// these out where they say why a backend did not run).
inline constexpr const char* kNotRequested = "not requested";

struct SkippedBackend {
  std::string variant;  // empty when the whole backend did not run
  std::string backend;
  std::string reason;   // "not requested", "no GPU", "no kernel for this variant", …
};

struct Environment {
  std::string cpu;
  std::optional<std::string> gpu;
  std::string version;
  int threads = 1;
  std::vector<std::string> ran;  // backends that ran for at least one variant
  std::vector<SkippedBackend> skipped;
  bool ground_truth = true;  // false: a timing-only run (attnlab bench) computed no FP64 truth, no metrics
  // The spec the cost model predicted for (the config's gpu_model resolved: core/gpu_names.h), and why it is not
  // this machine's GPU where it is not ("" otherwise). Empty in files from before it was recorded.
  std::string model_gpu, model_gpu_note;
  // About the data, where none was generated or read (a model-only run: kNoDataNote); "" otherwise.
  std::string data_note;
};

inline constexpr const char* kNoDataNote =
    "none generated or read: only the model ran, and it needs the problem's shapes alone";

// A time measured outside attnlab on the run's problem — a peer's kernel (PyTorch SDPA's cuDNN backend,
// FlashAttention-3, SageAttention2, …) read from a measurements file the config names (report.baselines): a row to
// compare with, shown as measured elsewhere and never as this run's.
struct ExternalTiming {
  std::string implementation;  // what ran it ("sdpa_cudnn")
  std::string variant;         // the variant whose function it computes ("flash2": FP16 attention)
  double median_ms = 0;
  std::string gpu;             // the spec id of the GPU that measured it (attnlab gpus); "" unknown
  std::string file;            // the measurements file, as the config names it
};

struct Results {
  nlohmann::json config;   // the experiment, complete with defaults
  nlohmann::json problem;  // as in the config, completed with defaults
  Environment environment;
  std::vector<VariantResult> variants;
  // What the inputs do to attention, per head (core/data/attention_stats.h: attn.*), for generated and loaded
  // data alike; empty when no data was read (a model-only run: environment.data_note says so) and in files from
  // before it was recorded.
  Probes data_probes;
  // The config's report.baselines rows on this problem, one per implementation (empty without baselines).
  std::vector<ExternalTiming> external = {};
};

// Every probe array inline (a valid schema /2 document at any size; Python's attnlab.run, tests).
nlohmann::json to_json(const Results& r);
// results.json as saved: probe arrays over kInlineProbeMax values become sidecar references, recorded in
// `plan` for the writer (the Results must outlive plan.sidecars()).
nlohmann::json to_json(const Results& r, SidecarPlan& plan);

// Where a results.json was read from: `file` names it in messages; sidecars resolve against `dir`.
struct ResultsSource {
  std::string file = "results";
  std::filesystem::path dir;
};

// Reads schema /2 (sidecar arrays deferred: read when first asked for) or /1. Throws InputError naming
// source.file on any other schema.
Results results_from_json(const nlohmann::json& j, const ResultsSource& source = {});

}  // namespace attnlab
