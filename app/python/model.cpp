// attnlab python: the cost model as functions — attnlab.gpus, attnlab.predict and attnlab.kv_capacity,
// over the code behind `attnlab gpus`, the model backend of `attnlab run` and `attnlab capacity`. Nothing
// here computes a number: each function reads its arguments as the CLI reads its options
// (app/python/arguments.h, experiment.h) and converts what the engine returns.
#include "app/python/model.h"

#include "app/cli/value_checks.h"
#include "app/cli/commands.h"
#include "app/python/arguments.h"
#include "app/python/experiment.h"
#include "app/python/json_to_python.h"
#include "core/config.h"
#include "core/error.h"
#include "core/gpu_names.h"
#include "core/results.h"
#include "sim/capacity.h"
#include "sim/capacity_table.h"
#include "sim/gpu_spec.h"
#include "sim/model_backend.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace attnlab::python {

namespace py = pybind11;
using nlohmann::json;

namespace {

json gpu_json(const sim::GpuSpec& g) {
  json peak = json::object();
  for (const sim::Unit u : sim::kUnits) peak[sim::to_string(u)] = g.peak(u);
  return {{"id", g.id},
          {"name", g.name},
          {"arch", g.arch},
          {"sm_count", g.sm_count},
          {"sm_clock_ghz", g.sm_clock_ghz},
          {"hbm_bandwidth_gbs", g.hbm_bandwidth_gbs},
          {"hbm_capacity_gb", g.hbm_capacity_gb},
          {"l2_bytes", g.l2_bytes},
          {"smem_per_sm_bytes", g.smem_per_sm_bytes},
          {"smem_per_cta_bytes", g.smem_per_cta_bytes},
          {"regs_per_sm", g.regs_per_sm},
          {"max_threads_per_sm", g.max_threads_per_sm},
          {"max_ctas_per_sm", g.max_ctas_per_sm},
          {"tensor_tflops", g.tensor_tflops},
          {"mma_sync_fraction", g.mma_sync_fraction},
          {"fp32_tflops", g.fp32_tflops},
          {"sfu_exp2_per_clk_per_sm", g.sfu_exp2_per_clk_per_sm},
          {"int32_per_clk_per_sm", g.int32_per_clk_per_sm},
          {"cvt_per_clk_per_sm", g.cvt_per_clk_per_sm},
          {"issue_per_clk_per_sm", g.issue_per_clk_per_sm},
          {"issue_latency_cycles", g.issue_latency_cycles},
          {"cta_overhead_us", g.cta_overhead_us},
          {"peak", peak},
          {"calibrated", !g.efficiency.empty()},  // what `attnlab gpus` marks "(calibrated)"
          {"efficiency", g.efficiency},
          {"measured", g.measured},
          {"sources", g.sources}};
}

py::list gpus() {
  py::list out;
  for (const sim::GpuSpec& g : sim::all_gpu_specs()) out.append(to_python(gpu_json(g)));
  return out;
}

// `attnlab run --backend model [--gpu ID]` without the data: the model backend reads only the problem's
// shapes, so the operands the runner would generate (and check against host memory) are not made.
py::list predict(const py::object& config, const py::object& gpu) {
  const std::string gpu_arg = gpu.is_none() ? "" : id_or_path(gpu, "--gpu", cli::check_gpu_id);
  Experiment e = experiment_from(config, std::nullopt);
  cli::override_gpu(e, gpu_arg);
  // No kernel runs here: "auto" is the fallback spec (core/gpu_names.h). As `attnlab run` checks the model's GPU
  // before it runs: refused here, not skipped variant by variant.
  e.gpu_model = model_gpu_for(e.gpu_model, std::nullopt).id;
  sim::load_gpu_spec(e.gpu_model);

  sim::ModelBackend backend;
  Results r;
  std::vector<std::string> skipped;  // per variant: why the model did not run it, or ""
  for (const VariantRequest& v : e.variants) {  // Runner::run's loop, the model backend alone
    const std::string& label = v.shown_label();
    VariantResult vr;
    vr.id = v.id;
    vr.label = label;
    vr.params = v.params.to_json();
    skipped.push_back(backend.cannot_run(v, e));
    if (skipped.back().empty()) {
      backend.check_fits(v, e);
      backend.run(e, v, QKV{}, TensorF64{}, vr);
    }
    r.variants.push_back(std::move(vr));
  }
  json variants = to_json(r)["variants"];  // results.json's entries: id, label, params, model
  for (size_t i = 0; i < skipped.size(); ++i)
    if (!skipped[i].empty()) variants[i]["skipped"] = skipped[i];
  return to_python(variants).cast<py::list>();
}

py::list kv_capacity(const py::object& model, const py::object& gpu, const py::object& context,
                     const py::object& config) {
  const std::string model_arg = id_or_path(model, "--model", cli::check_model_id);
  const std::string gpu_arg = id_or_path(gpu, "--gpu", cli::check_gpu_id);
  const int64_t tokens = whole_number(context, "--context");
  const sim::LlmConfig m = sim::load_llm(model_arg, "--model");
  const sim::GpuSpec g = sim::load_gpu_spec(gpu_arg, "--gpu");
  sim::check_context(tokens);
  const std::vector<VariantRequest> variants = config.is_none()
                                                   ? sim::default_capacity_variants(m, "--model " + echo(model_arg))
                                                   : experiment_from(config, std::nullopt).variants;
  const std::vector<sim::CapacityRow> rows = sim::capacity_table(m, g, tokens, variants);
  py::list out;
  for (size_t i = 0; i < rows.size(); ++i) {
    const sim::CapacityRow& row = rows[i];
    const sim::Capacity& c = row.capacity;
    const json none;  // no decode step where one sequence does not fit (the CLI prints a dash)
    const json j = {{"variant", row.format.variant},
                    {"id", variants[i].id},
                    {"params", variants[i].params.to_json()},
                    {"cache", row.format.how},
                    {"bytes_per_token", row.bytes_per_token},
                    {"seq_bytes", c.seq_bytes},
                    {"max_batch", c.max_batch},
                    {"step_ms", row.fits() ? json(c.step_ms) : none},
                    {"tokens_per_s", row.fits() ? json(c.tokens_per_s) : none},
                    {"speedup", row.fits() ? json(row.speedup) : none},
                    {"weights_bytes", c.weights_bytes},
                    {"workspace_bytes", c.workspace_bytes},
                    {"free_bytes", c.free_bytes},
                    {"model", m.id},
                    {"gpu", g.id},
                    {"context", tokens}};
    out.append(to_python(j));
  }
  return out;
}

}  // namespace

void bind_model(py::module_& m) {
  m.def("gpus", &gpus,
        R"(The GPU specifications the cost model knows (sim/specs, or $ATTNLAB_SPECS): the list of `attnlab gpus`.

Returns a list of dicts sorted by id, one per spec: id, name, arch; the spec's numbers (sm_count,
sm_clock_ghz, hbm_bandwidth_gbs, hbm_capacity_gb, l2_bytes, smem_per_sm_bytes, smem_per_cta_bytes,
regs_per_sm, max_threads_per_sm, max_ctas_per_sm, tensor_tflops {fp16, fp8, int8: TFLOPS/TOPS, absent
when the GPU has no such unit}, mma_sync_fraction, fp32_tflops, sfu_exp2_per_clk_per_sm,
int32_per_clk_per_sm, cvt_per_clk_per_sm, issue_per_clk_per_sm, issue_latency_cycles, cta_overhead_us); peak {unit: operations
per second the model charges against, HBM in bytes per second, before efficiency}; calibrated (bool),
efficiency {unit: fitted fraction of peak}, measured (the spec's calibration section, {} when none);
sources {field: where the number comes from}.
Raises ValueError when a spec file is malformed (the CLI's message).)");

  m.def("predict", &predict, py::arg("config"), py::arg("gpu") = py::none(),
        R"(The cost model's prediction for each variant of an experiment: the model backend of `attnlab run`,
without the data (no operands are generated; the reference and kernel backends do not run).

config: a dict in the config-file form (docs/configs.md) or the path of a config file; its "backends" list
    is ignored, its "model" section ({"l2_reuse": bool}) applies.
gpu: a GPU id (attnlab.gpus()) or the path of a spec .json, as `attnlab run --gpu`; None keeps the
    config's gpu_model (default "auto": h100-sxm5 here, where no kernel runs).

Returns a list with one dict per variant, in the config's order: results.json's entry for it — id,
label, params, and model {gpu, time_ms, bound (the resource that bounds the time: "memory" or a unit),
hbm_bytes {total and per tensor}, ops {unit: operations}, details {dram_bytes, unit_ms, smem_bytes,
ctas_per_sm, ctas, waves, tail_factor, occupancy, tiles_from, block_r, block_c, splits, explain,
per_tile}} — or, where the model cannot run the variant (an FP8 variant on a GPU without FP8 units),
no "model" and "skipped": the reason `attnlab run` records.
Raises ValueError for bad input with the CLI's message ("--gpu: …", "gpu_model: …", the config's field).)");

  const cli::CapacityOptions defaults;  // the CLI's defaults, not a copy of them
  m.def("kv_capacity", &kv_capacity, py::arg("model") = defaults.model, py::arg("gpu") = defaults.gpu,
        py::arg("context") = defaults.context, py::arg("config") = py::none(),
        R"(KV-cache capacity and memory-bound decode throughput per variant: `attnlab capacity`.

model: a model id (sim/models: llama-3-8b, …) or the path of a model .json.
gpu: a GPU id (attnlab.gpus()) or the path of a spec .json.
context: tokens of context per sequence, 1 to 2**30.
config: None for every variant at its defaults plus turbo with half the KV heads at 2 bits
    ("turbo 2/4-bit mix"), as the CLI compares; else a config (dict or path) whose variants to compare.

Returns a list with one dict per variant, in the table's order: variant (label), id, params, cache (the
format in words), bytes_per_token (all layers), seq_bytes (one sequence at `context`, all layers),
max_batch, step_ms and tokens_per_s (decode at max_batch), speedup (tokens/s over the first row that
fits) — those three None where one sequence does not fit —, weights_bytes (FP16), workspace_bytes,
free_bytes (left for the cache), and model, gpu, context (ids as read).
Raises ValueError for bad input with the CLI's message ("--model: …", "--gpu: …", "--context: …").)");
}

}  // namespace attnlab::python
