// attnlab core: an experiment — one attention problem, its data, the variants and the backends.
//
// The JSON form is the contract of DESIGN.md ("An experiment config"); fields may be added, never
// renamed. Parsing validates everything and throws InputError naming the field and the rule; a parsed
// Experiment is complete (every default filled in) and consistent.
#pragma once

#include "core/gpu_names.h"
#include "core/lesson.h"
#include "core/params.h"
#include "core/probes.h"
#include "core/problem.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace attnlab {

struct DataSpec {
  std::string generator = "llm_like";  // empty when `file` is set
  ParamValues generator_params;
  uint64_t seed = 1;
  std::string file;  // a .safetensors file or a folder of q.npy, k.npy, v.npy
};

struct VariantRequest {
  std::string id;
  ParamValues params;  // every declared parameter, defaults filled in
  std::string label;   // optional: how tables and legends name this entry (two entries of one variant)
  // How tables, legends and report.speedup_over name this entry: its label, or its id where it has none.
  const std::string& shown_label() const { return label.empty() ? id : label; }
};

// One axis of a sweep: a value path (see set_value) and the values it takes, in order.
struct SweepAxis {
  std::string path;
  std::vector<nlohmann::json> values;
};

inline const std::vector<std::string> kBackends = {"reference", "kernel", "model"};

struct Experiment {
  std::string title;        // optional, for reports and the presets list
  std::string description;  // optional
  std::optional<Lesson> lesson;  // optional: a guided tour through this experiment (core/lesson.h)
  Problem problem;
  DataSpec data;
  std::vector<VariantRequest> variants;
  std::vector<std::string> backends = {"reference"};
  // The spec the cost model predicts for (sim/specs/<id>.json, or a path); "auto": the GPU the kernels run on
  // (core/gpu_names.h), h100-sxm5 where none is found.
  std::string gpu_model = kAutoGpuModel;
  bool model_l2_reuse = true;  // "model": {"l2_reuse": …}: K/V re-reads of one head hit L2 (sim/cost_model.h)
  ProbeRequest probe;
  std::vector<SweepAxis> sweep;  // optional: the grid `attnlab sweep` runs when given no --vary (≤ 2 axes)
  // Optional "report": {"speedup_over": name}: the report draws every variant's time as a speedup over
  // this variant's — its label, or its id where it has none — measured beside predicted (app/views/speedup.h).
  std::string speedup_over;
  // Optional "report": {"baselines": [file, …]}: attnlab.measurements/1 files of other implementations (PyTorch SDPA,
  // FlashAttention-3, …: kernels/bench/peers_to_measurements.py converts peer_bench.py's rows), paths resolved against
  // the config's folder. Their rows on the run's problem become Results::external, and speedup_over may name one's
  // implementation ("sdpa_cudnn").
  std::vector<std::string> baselines;
  bool problem_from_file = false;  // shapes were taken from the data file

  bool wants(const std::string& backend) const;
};

// How many of e's variants go by `name` (VariantRequest::shown_label): report.speedup_over and --baseline name one.
int64_t variants_named(const Experiment& e, const std::string& name);

// Relative paths in `data.file` are resolved against `base_dir` (the config file's folder).
Experiment parse_experiment(const nlohmann::json& j, const std::string& base_dir = ".");
// Reads and parses a config file; errors name the file.
Experiment load_experiment(const std::string& path);

nlohmann::json to_json(const Problem& p);
nlohmann::json to_json(const Experiment& e);  // the complete config, defaults filled in

// A sweep or the GUI changes one value: "problem.<field>", "problem.len" (q_len and kv_len together;
// q_len stays 1 in decode), "data.seed", "data.generator" (its parameters reset to their defaults),
// "data.<generator parameter>", "<variant>.<param>" or "<param>" (applies to every listed variant that
// declares it), "model.l2_reuse". Errors name `where`.
void set_value(Experiment& e, const std::string& path, const nlohmann::json& value, const std::string& where);
// Re-checks the cross-field rules after edits (problem limits, phase support, variant checks).
void check_experiment(Experiment& e);

}  // namespace attnlab
