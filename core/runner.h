// attnlab core: the Runner — turns an Experiment into Results by running each requested backend.
//
// The reference backend lives in core. The kernel backend (kernels/) and the model backend (sim/)
// implement `Backend` and are handed to the Runner by the front end, so core depends on neither. A
// requested backend that is absent or cannot run a variant is recorded in Results.environment with
// the reason; nothing is silently dropped.
#pragma once

#include "core/config.h"
#include "core/memory.h"
#include "core/results.h"
#include "core/tensor.h"

#include <atomic>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace attnlab {

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;  // "kernel" or "model"
  // Empty when the backend can run at all on this machine, else why not ("no GPU: …").
  virtual std::string unavailable() const = 0;
  // Empty when it can run this variant on this problem, else why not ("no kernel for this variant").
  virtual std::string cannot_run(const VariantRequest& v, const Experiment& e) const = 0;
  // Throws InputError when this variant's problem cannot fit the backend's device (the GPU's free memory),
  // before any data is generated or read; called for each variant the backend can run.
  virtual void check_fits(const VariantRequest& /*v*/, const Experiment& /*e*/) const {}
  // Whether it reads the operands (Q, K, V) and the FP64 truth; false for one that needs the problem's shapes
  // alone (the cost model): a run whose backends all need none generates or reads no data, computes no truth
  // and checks no host memory for them.
  virtual bool needs_data() const { return true; }
  // Fills its part of `into` (kernel or model); `in` and `truth` are empty when no backend of the run needs data.
  virtual void run(const Experiment& e, const VariantRequest& v, const QKV& in, const TensorF64& truth,
                   VariantResult& into) = 0;
  virtual std::string device_name() const { return ""; }  // the GPU, for environment.gpu
  // Empty when it runs a problem split across `gpus` GPUs of one host (problem.gpus: context parallelism), else
  // what it lacks for that (NCCL, a second GPU). By default a backend runs on one GPU.
  virtual std::string cannot_split(int64_t gpus) const { return gpus == 1 ? "" : "it runs on one GPU"; }
};

struct RunControl {
  std::function<void(double fraction, const std::string& stage)> progress;  // may be empty
  const std::atomic<bool>* cancel = nullptr;                               // may be null
  // false: skip the FP64 ground truth (timing-only runs such as `attnlab bench`, where it would cost
  // minutes at long sequences); backends then receive an empty truth and leave their metrics at NaN.
  bool ground_truth = true;
  // Given operands replace the experiment's generator or file (the Python module's NumPy arrays); their
  // shapes must match e.problem. q is (B, Hq, Nq, d); k and v are (B, Hkv, Nkv, d). May be null.
  const QKV* inputs = nullptr;
  // Called with each variant's output O (B, Hq, Nq, d) of each backend that computes one ("reference",
  // "kernel") — the tensor its metrics were computed from — before the runner drops it; results.json does
  // not hold outputs. May be empty.
  std::function<void(size_t variant, const std::string& backend, const Tensor& o)> on_output;
};

struct Cancelled : std::runtime_error {
  Cancelled() : std::runtime_error("cancelled") {}
};

// Reads the config's report.baselines (their rows on the experiment's problem, one per implementation), or throws
// InputError naming the file (sim/baselines.h provides it: core does not read measurement files itself).
using BaselineReader = std::function<std::vector<ExternalTiming>(const Experiment&)>;

class Runner {
 public:
  void add_backend(std::unique_ptr<Backend> backend);
  // Where report.baselines are read: before anything runs (a bad file costs nothing), into Results::external; a
  // speedup_over that names neither a listed variant nor one of their implementations is refused there. A Runner
  // given no reader (core alone, as some tests build one) leaves Results::external empty.
  void set_baseline_reader(BaselineReader reader) { baselines_ = std::move(reader); }
  // Throws InputError for bad data files, a problem too large for this machine (checked from the shapes
  // before any data is generated or read), inputs beyond the FP32 range (core/input_range.h) or a variant
  // that overflows on them (named); Cancelled when asked. A run where no backend that runs needs data (the
  // model alone: Backend::needs_data) generates and reads none — the given inputs are not looked at either —,
  // leaves Results::data_probes empty and says so in environment.data_note.
  Results run(const Experiment& e, const RunControl& control = {}) const;

 private:
  std::vector<std::unique_ptr<Backend>> backends_;
  BaselineReader baselines_;
};

// The operands of an experiment: generated from its seed or loaded from its file.
QKV experiment_inputs(const Experiment& e);

// Bytes the reference backend needs for this experiment on worker_threads() threads (core/memory.h:
// inputs, ground truth and its scratch, the largest variant's working memory); the limit it is held to
// is memory_limit_bytes() there.
double reference_memory_bytes(const Experiment& e);

std::string cpu_name();

}  // namespace attnlab
