#include "sim/model_backend.h"

#include "core/error.h"
#include "sim/context_parallel_model.h"
#include "sim/schedule.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace attnlab::sim {

namespace {

// The problem across problem.gpus GPUs (context_parallel_model.h): the run's time becomes the multi-GPU one, the
// one-GPU prediction stays beside it, and the ring's timeline, link bytes and efficiency go into details.
void add_context_parallel(ModelResult& m, const Experiment& e, const VariantRequest& v, const GpuSpec& gpu,
                          const ModelOptions& o) {
  const int gpus = static_cast<int>(e.problem.gpus);
  const cp::Balance balance = cp::default_balance(e.problem.causal);
  const MultiGpuPrediction mg = predict_context_parallel(e.problem, v, gpu, gpus, balance, o);
  const LinkCrossover crossover = link_crossover(e.problem, v, gpu, gpus, balance, o);
  nlohmann::json timeline = nlohmann::json::array();
  for (const RingSlot& s : mg.timeline)
    timeline.push_back({{"gpu", s.gpu}, {"step", s.step}, {"compute_ms", s.compute_ms}, {"send_ms", s.send_ms},
                        {"recv_ms", s.recv_ms}, {"idle_ms", s.idle_ms}, {"link_bytes", s.link_bytes},
                        {"pairs", s.pairs}});
  m.details["context_parallel"] = {
      {"gpus", gpus},          {"balance", cp::to_string(balance)},
      {"link", mg.link},       {"link_gbs", mg.link_gbs},
      {"one_gpu_ms", mg.one_gpu_ms}, {"scaling_efficiency", mg.scaling_efficiency},
      {"link_bytes", mg.link_bytes}, {"hbm_bytes_per_gpu", mg.hbm_bytes_per_gpu},
      {"imbalance", mg.imbalance},   {"bound", mg.bound},
      {"link_bound_steps", mg.link_bound_steps}, {"timeline", timeline}, {"explain", mg.explain},
      {"link_bound_up_to_tokens", crossover.tokens}, {"link_bound_whole_scan", crossover.whole_scan},
      {"link_crossover_scanned_to", kCrossoverScanTokens}};
  m.time_ms = mg.time_ms;
  if (mg.bound == "link") m.bound = "link";
  m.details["time_terms_ms"] = nlohmann::json::array();  // the multi-GPU total's terms replace the one GPU's
  for (const TimeTerm& term : mg.terms)
    if (term.ms > 0) m.details["time_terms_ms"].push_back({{"term", term.name}, {"ms", term.ms}});
  for (const std::string& line : mg.explain) m.details["explain"].push_back(line);
}

}  // namespace

ModelResult model_result(const Experiment& e, const VariantRequest& v, const ModelOptions& o) {
  const GpuSpec gpu = load_gpu_spec(e.gpu_model);
  const Schedule s = make_schedule(e.problem, v, gpu);
  const Prediction p = predict(s, gpu, o);
  ModelResult m;
  m.gpu = p.gpu;
  m.time_ms = p.time_ms;
  m.bound = p.bound;
  m.hbm_bytes = p.hbm_bytes;
  double total = 0;
  for (const auto& [_, b] : p.hbm_bytes) total += b;
  m.hbm_bytes["total"] = total;
  m.ops = p.ops;
  m.details = {{"dram_bytes", p.dram_bytes},   {"unit_ms", p.unit_ms},         {"smem_bytes", p.smem_bytes},
               {"ctas_per_sm", p.ctas_per_sm}, {"ctas", p.ctas},               {"waves", p.waves},
               {"tail_factor", p.tail_factor}, {"occupancy", p.occupancy},     {"tiles_from", s.tiles_from},
               {"warps_per_scheduler", p.warps_per_scheduler},                 {"issue_rate", p.issue_rate},
               {"launches", 1 + s.then.size()},
               {"block_r", s.block_r},         {"block_c", s.block_c},         {"splits", s.splits},
               {"explain", p.explain}};
  // The total term by term, in stacking order (an array: the order is part of it).
  m.details["time_terms_ms"] = nlohmann::json::array();
  for (const TimeTerm& term : p.terms) m.details["time_terms_ms"].push_back({{"term", term.name}, {"ms", term.ms}});
  // One KV-tile iteration of one CTA as the model counts it: bytes read (K, V, their scales, for a full
  // tile of B_c keys) and operations per unit — what the tile stepper shows beside the reference's trace.
  nlohmann::json tile_bytes = nlohmann::json::object(), tile_ops = nlohmann::json::object();
  for (const auto& [name, b] : s.per_key.bytes) tile_bytes[name] = b * double(s.block_c);
  for (const auto& [unit, n] : s.per_tile.ops) tile_ops[to_string(unit)] = n;
  double q_row = 0;
  for (const auto& [name, b] : s.per_row.bytes)
    if (name == "q" || name == "scales") q_row += b;
  m.details["per_tile"] = {{"bytes", tile_bytes}, {"ops", tile_ops}, {"q_block_bytes", q_row * double(s.block_r)}};
  if (e.problem.gpus > 1) add_context_parallel(m, e, v, gpu, o);
  return m;
}

std::string ModelBackend::cannot_run(const VariantRequest& v, const Experiment& e) const {
  try {
    const GpuSpec gpu = load_gpu_spec(e.gpu_model);
    const Schedule s = make_schedule(e.problem, v, gpu);
    for (const auto& [unit, ops] : s.total().ops)
      if (ops > 0 && !(gpu.peak(unit) > 0)) return fmt::format("the {} has no {} units", gpu.name, to_string(unit));
    if (e.problem.gpus > 1) return links_missing(gpu);
  } catch (const InputError& err) {
    return err.what();
  }
  return "";
}

void ModelBackend::run(const Experiment& e, const VariantRequest& v, const QKV&, const TensorF64&, VariantResult& into) {
  ModelOptions o = options_;
  o.l2_reuse = e.model_l2_reuse;
  into.model = model_result(e, v, o);
}

}  // namespace attnlab::sim
