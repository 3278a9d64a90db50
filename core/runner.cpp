#include "core/runner.h"

#include "core/data/attention_stats.h"
#include "core/data/generators.h"
#include "core/data/loaders.h"
#include "core/error.h"
#include "core/ground_truth.h"
#include "core/input_range.h"
#include "core/memory.h"
#include "core/metrics.h"
#include "core/parallel.h"
#include "core/registry.h"
#include "core/variants/shared_probes.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <optional>
#include <stdexcept>

namespace attnlab {

void Runner::add_backend(std::unique_ptr<Backend> backend) { backends_.push_back(std::move(backend)); }

QKV experiment_inputs(const Experiment& e) {
  if (!e.data.file.empty()) return data::load_qkv(e.data.file);
  return data::generate(e.problem, e.data.generator, e.data.generator_params, e.data.seed);
}

double reference_memory_bytes(const Experiment& e) { return estimate_memory(e, worker_threads()).total(); }

std::string cpu_name() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      return colon == std::string::npos ? line : line.substr(line.find_first_not_of(' ', colon + 1));
    }
  return "unknown CPU";
}

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// One variant's reference run, with its failures named: an InputError it raises gets the variant and
// the inputs' magnitudes beside it; an output holding NaN or Inf is refused (never turned into metrics),
// as bad input when the data exceeds FP16's range (what the variants' formats cannot hold), else as an
// internal failure.
ReferenceOutput run_reference(const Experiment& e, size_t index, const VariantRequest& v, const QKV& in,
                              const InputMagnitudes& magnitudes) {
  const VariantSpec& spec = *find_variant(v.id);
  const std::string where = fmt::format("variants[{}] ({})", index, echo(v.shown_label(), 40));
  ReferenceOutput out;
  try {
    out = spec.reference(e.problem, in, v.params, e.probe);
  } catch (const InputError& err) {
    throw InputError(fmt::format("{}: {}; {}", where, err.what(), describe_inputs(e, magnitudes)));
  }
  if (const int64_t bad = first_nonfinite(out.o); bad >= 0) {
    const Shape4& s = out.o.shape();
    const int64_t c = bad % s.dim, n = bad / s.dim % s.len, h = bad / (s.dim * s.len) % s.heads,
                  b = bad / (s.dim * s.len * s.heads);
    const std::string what = fmt::format("output O[{}, {}, {}, {}] is {}", b, h, n, c,
                                         std::isnan(out.o.data()[bad]) ? "NaN" : "Inf");
    if (beyond_fp16(magnitudes))
      fail_input(where, fmt::format("{}: the input overflows this variant's number formats; {}", what,
                                    describe_inputs(e, magnitudes)));
    throw std::runtime_error(fmt::format("{}: {} although every input fits FP16 ({})", where, what,
                                         describe_inputs(e, magnitudes)));
  }
  return out;
}

}  // namespace

Results Runner::run(const Experiment& e, const RunControl& control) const {
  Results r;
  r.config = to_json(e);
  r.problem = r.config["problem"];
  r.environment.cpu = cpu_name();
  r.environment.version = ATTNLAB_VERSION;
  r.environment.threads = worker_threads();
  r.environment.ground_truth = control.ground_truth;
  if (!e.baselines.empty() && baselines_) r.external = baselines_(e);
  if (!e.speedup_over.empty() && !e.baselines.empty() && baselines_) {  // a variant's label, or a baseline's
    const bool variant = variants_named(e, e.speedup_over) > 0;
    const bool external = std::any_of(r.external.begin(), r.external.end(),
                                      [&](const ExternalTiming& x) { return x.implementation == e.speedup_over; });
    if (!variant && !external)
      fail_input("report.speedup_over",
                 fmt::format("'{}' is neither a listed variant nor an implementation measured on this problem in "
                             "report.baselines",
                             echo(e.speedup_over)));
  }

  // Which backends can run: requested, present, available on this machine.
  std::vector<Backend*> active;
  for (const std::string& name : kBackends) {
    if (name == "reference") continue;
    auto it = std::find_if(backends_.begin(), backends_.end(), [&](const auto& b) { return b->name() == name; });
    if (!e.wants(name)) {
      r.environment.skipped.push_back({"", name, kNotRequested});
      // The machine's GPU is still named (a status line reading "no GPU" on a GPU server misleads).
      if (it != backends_.end() && (*it)->unavailable().empty())
        if (const std::string gpu = (*it)->device_name(); !gpu.empty()) r.environment.gpu = gpu;
      continue;
    }
    const std::string why = it != backends_.end() ? (*it)->unavailable()
                            : name == "kernel"    ? "this build has no CUDA kernels (no CUDA compiler at configure time)"
                                                  : "this build has no cost-model backend";
    // A problem split across GPUs (problem.gpus > 1) is refused, not skipped, where a requested backend cannot split
    // it: a run on one GPU in its place would answer another question. The reference computes the same function at
    // any count (core/problem.h), so it never refuses.
    if (e.problem.gpus > 1)
      if (const std::string split = why.empty() ? (*it)->cannot_split(e.problem.gpus) : why; !split.empty())
        fail_input("problem.gpus", fmt::format("{} GPUs with the {} backend: {}; without \"{}\" in backends the rest "
                                               "runs",
                                               e.problem.gpus, name, split, name));
    if (!why.empty()) {
      r.environment.skipped.push_back({"", name, why});
      continue;
    }
    active.push_back(it->get());
    if (const std::string gpu = (*it)->device_name(); !gpu.empty()) r.environment.gpu = gpu;
  }
  if (!e.wants("reference")) r.environment.skipped.push_back({"", "reference", kNotRequested});
  // The model predicts for this machine's GPU unless the config pins another (core/gpu_names.h); the backends get
  // the experiment with gpu_model resolved.
  const ModelGpu model_gpu = model_gpu_for(e.gpu_model, r.environment.gpu);
  Experiment resolved = e;
  resolved.gpu_model = model_gpu.id;
  if (e.wants("model")) r.environment.model_gpu = model_gpu.id, r.environment.model_gpu_note = model_gpu.note;
  // The data is made (and its memory checked) only for a backend that reads it: the reference, or another that
  // runs at least one variant and needs the operands. The model alone needs the shapes (a data file's headers,
  // read when the config was).
  bool needs_data = e.wants("reference");
  for (Backend* b : active)
    for (const VariantRequest& v : e.variants)
      needs_data = needs_data || (b->needs_data() && b->cannot_run(v, resolved).empty());
  // Host memory and device memory are checked from the shapes, before the data is generated or read.
  if (needs_data) check_memory(e, control.ground_truth);
  else r.environment.data_note = kNoDataNote;
  for (Backend* b : active)
    for (const VariantRequest& v : e.variants)
      if (b->cannot_run(v, resolved).empty()) b->check_fits(v, resolved);

  const double steps = 2.0 + double(e.variants.size()) * (1.0 + double(active.size()));
  double done = 0;
  auto advance = [&](const std::string& stage) {
    if (control.cancel && control.cancel->load()) throw Cancelled();
    if (control.progress) control.progress(done / steps, stage);
    done += 1;
  };

  if (control.inputs && (control.inputs->q.shape() != e.problem.q_shape() ||
                         control.inputs->k.shape() != e.problem.kv_shape() ||
                         control.inputs->v.shape() != e.problem.kv_shape()))
    throw std::invalid_argument("Runner::run: the given inputs do not have the problem's shapes");
  advance(!needs_data       ? "no data: the model reads the shapes"
          : control.inputs  ? "given inputs"
          : e.data.file.empty() ? "generating data"
                                : "loading " + e.data.file);
  std::optional<QKV> read;  // the experiment's own data; given inputs are used in place, not copied
  const QKV& in = control.inputs ? *control.inputs : needs_data ? read.emplace(experiment_inputs(e)) : read.emplace();
  InputMagnitudes magnitudes;
  if (needs_data) {
    magnitudes = measure_inputs(in);
    r.data_probes = data::attention_statistics(e.problem, in);
    check_input_range(e, magnitudes);
  }
  // The generator rotates Q and K by RoPE as its last step: the same draws without it are K before RoPE,
  // whose channel ranges the variants that record channel ranges get beside their own (post-RoPE) ones.
  // Computed once, when the first such variant has run.
  std::optional<Probes> pre_rope;
  const bool rotated = !control.inputs && e.data.file.empty() && e.data.generator_params.values().count("rope") &&
                       e.data.generator_params.flag("rope");
  auto pre_rope_probes = [&]() -> const Probes& {
    if (!pre_rope) {
      pre_rope.emplace();
      ParamValues no_rope = e.data.generator_params;
      no_rope.set(data::find_generator(e.data.generator)->params, "rope", false, "data.rope");
      const QKV raw = data::generate(e.problem, e.data.generator, no_rope, e.data.seed);
      variants::add_key_channel_probes(*pre_rope, e.problem, raw.k, "channels.k_pre_rope",
                                       "of each K channel over tokens before RoPE (the generator's draws, unrotated)");
    }
    return *pre_rope;
  };
  advance("FP64 ground truth");
  const TensorF64 truth = control.ground_truth && needs_data ? attention_fp64(e.problem, in) : TensorF64();

  auto mark_ran = [&](const std::string& name) {
    if (std::find(r.environment.ran.begin(), r.environment.ran.end(), name) == r.environment.ran.end())
      r.environment.ran.push_back(name);
  };
  for (size_t index = 0; index < e.variants.size(); ++index) {
    const VariantRequest& v = e.variants[index];
    VariantResult vr;
    vr.id = v.id;
    vr.label = v.shown_label();
    vr.params = v.params.to_json();
    advance(vr.label + ": reference");
    if (e.wants("reference")) {
      const auto t0 = Clock::now();
      ReferenceOutput out = run_reference(e, index, v, in, magnitudes);
      ReferenceResult ref;
      ref.time_ms = ms_since(t0);
      ref.metrics = control.ground_truth ? compare_to_truth(out.o, truth) : no_metrics();
      if (control.on_output) control.on_output(index, "reference", out.o);
      ref.gflops = e.problem.flops() / (ref.time_ms * 1e6);
      ref.kv_cache_bytes = out.kv_cache_bytes;
      ref.probes = std::move(out.probes);
      if (rotated && ref.probes.count("channels.k.max"))
        for (const auto& [name, a] : pre_rope_probes()) ref.probes[name] = a;
      vr.reference = std::move(ref);
      mark_ran("reference");
    }
    for (Backend* b : active) {
      advance(v.id + ": " + b->name());
      if (const std::string why = b->cannot_run(v, resolved); !why.empty()) {
        r.environment.skipped.push_back({v.id, b->name(), why});
        continue;
      }
      b->run(resolved, v, in, truth, vr);
      if (vr.kernel && vr.kernel->output) {
        if (control.on_output) control.on_output(index, b->name(), *vr.kernel->output);
        vr.kernel->output.reset();
      }
      mark_ran(b->name());
    }
    r.variants.push_back(std::move(vr));
  }
  if (control.progress) control.progress(1.0, "done");
  return r;
}

}  // namespace attnlab
