// attnlab sim: measurement files (measurements.h).
#include "sim/measurements.h"

#include "core/error.h"
#include "core/gpu_names.h"
#include "core/registry.h"
#include "sim/gpu_spec.h"

#include <fmt/format.h>

namespace attnlab::sim {

using nlohmann::json;

namespace {

constexpr double kMaxMs = 1e7;  // about three hours: no kernel timing is longer

// kernels/bench/sdpa_bench.py describes the device as an object (its name, and the ceilings it measured).
const FieldTable& device_fields() {
  static const FieldTable t = {
      FieldSpec::text("name", 256, "the device name the runtime reports"),
      FieldSpec::integer("sms", 1, 1024, "streaming multiprocessors").optional(),
      FieldSpec::integer("l2_bytes", 0, 1ll << 34, "L2 cache, bytes").optional(),
      FieldSpec::text("torch", 100, "the PyTorch version that timed").optional(),
      FieldSpec::real("copy_gbs", 0, 1e6, "measured device-to-device copy bandwidth, GB/s").optional(),
      FieldSpec::real("fp16_matmul_tflops", 0, 1e6, "measured FP16 matrix-product rate, TFLOPS").optional(),
  };
  return t;
}

const FieldTable& measurement_row() {
  static const FieldTable t = {FieldSpec::object("measurement", measurement_fields, "one kernel timing")};
  return t;
}

// One GPU's share of one ring step, measured (the kernels' traced run) or predicted (the cost model's timeline).
const FieldTable& ring_slot_fields() {
  static const FieldTable t = {
      FieldSpec::integer("step", 0, 2 * kMaxGpus, "the ring step (a decode: 0 the attention, 1 the gather and merge)"),
      FieldSpec::integer("gpu", 0, kMaxGpus - 1, "the GPU"),
      FieldSpec::real("compute_ms", 0, kMaxMs, "its attention and merges in the step, ms"),
      FieldSpec::real("idle_ms", 0, kMaxMs, "the rest of the step it waited (its next shard, the slowest GPU), ms"),
      FieldSpec::real("exchange_ms", 0, kMaxMs, "what it sent and received during the step, ms (absent: nothing)")
          .optional(),
  };
  return t;
}

const FieldTable& ring_slot_row() {
  static const FieldTable t = {FieldSpec::object("slot", ring_slot_fields, "one GPU's share of one ring step")};
  return t;
}

const FieldTable& ring_model_fields() {
  static const FieldTable t = {
      FieldSpec::real("time_ms", 0, kMaxMs, "the model's time of the whole run across the GPUs, ms"),
      FieldSpec::real("one_gpu_ms", 0, kMaxMs, "the model's time of the problem on one GPU, ms"),
      FieldSpec::real("scaling_efficiency", 0, 100, "one_gpu_ms / (gpus · time_ms)"),
      FieldSpec::array("timeline", 1, 2 * kMaxGpus * kMaxGpus, ring_slot_row,
                       "its slots, step-major (its exchange: the shard or partial sent on the link)"),
  };
  return t;
}

const FieldTable& context_parallel_fields() {
  static const FieldTable t = {
      FieldSpec::integer("gpus", 1, kMaxGpus, "GPUs of the ring"),
      FieldSpec::real("wire_bytes", 0, 1e18, "bytes the ring moved between the GPUs in one run"),
      FieldSpec::real("merge_ms", 0, kMaxMs, "a decode's merge on GPU 0 (median), ms").optional(),
      FieldSpec::array("timeline", 1, 2 * kMaxGpus * kMaxGpus, ring_slot_row,
                       "one traced run after the timed ones, step-major").optional(),
      FieldSpec::object("model", ring_model_fields, "the cost model's prediction of the same run").optional(),
  };
  return t;
}

json slot_json(int step, int gpu, double compute_ms, double idle_ms, double exchange_ms) {
  json s = {{"step", step}, {"gpu", gpu}, {"compute_ms", compute_ms}, {"idle_ms", idle_ms}};
  if (exchange_ms > 0) s["exchange_ms"] = exchange_ms;
  return s;
}

// A ring's measurement (the kernel backend's probes, kernels/context_parallel/ring_backend.cpp) and the model's
// prediction beside it, for a variant that ran across GPUs; null otherwise.
json context_parallel_json(const VariantResult& v) {
  const auto ring = v.kernel->probes.find("kernel.context_parallel");
  if (ring == v.kernel->probes.end() || ring->second.values.size() < 4) return nullptr;
  const ProbeValues& r = ring->second.values;  // labels: gpus, wire_bytes, timed_runs, merge_ms
  json out = {{"gpus", int(r[0])}, {"wire_bytes", r[1]}};
  if (r[3] > 0) out["merge_ms"] = r[3];
  if (const auto t = v.kernel->probes.find("kernel.context_parallel.timeline");
      t != v.kernel->probes.end() && t->second.shape.size() == 3 && t->second.shape[2] == 3 &&
      t->second.values.size() == size_t(t->second.shape[0] * t->second.shape[1] * 3)) {
    const int64_t steps = t->second.shape[0], gpus = t->second.shape[1];
    const ProbeValues& x = t->second.values;
    out["timeline"] = json::array();
    for (int64_t s = 0; s < steps; ++s)
      for (int64_t g = 0; g < gpus; ++g) {
        const size_t at = size_t((s * gpus + g) * 3);
        out["timeline"].push_back(slot_json(int(s), int(g), x[at], x[at + 1], x[at + 2]));
      }
  }
  if (v.model && v.model->details.contains("context_parallel")) {
    const json& m = v.model->details["context_parallel"];
    json model = {{"time_ms", v.model->time_ms},
                  {"one_gpu_ms", m.value("one_gpu_ms", 0.0)},
                  {"scaling_efficiency", m.value("scaling_efficiency", 0.0)},
                  {"timeline", json::array()}};
    for (const json& slot : m.value("timeline", json::array()))
      model["timeline"].push_back(slot_json(slot.value("step", 0), slot.value("gpu", 0), slot.value("compute_ms", 0.0),
                                            slot.value("idle_ms", 0.0), slot.value("send_ms", 0.0)));
    if (!model["timeline"].empty()) out["model"] = std::move(model);
  }
  return out;
}

std::vector<std::string> variant_ids() {
  std::vector<std::string> ids;
  for (const auto& v : variant_registry()) ids.push_back(v.id);
  return ids;
}

}  // namespace

const FieldTable& measurement_fields() {
  static const FieldTable t = {
      FieldSpec::choice("variant", variant_ids(), "the variant that ran"),
      FieldSpec::text("label", 200, "the config's label of the entry").optional(),
      FieldSpec::text("implementation", 200, "what ran it when not attnlab's kernel").optional(),
      FieldSpec::object("params", nullptr, "the variant's parameters, checked against its table").optional(),
      FieldSpec::object("problem", nullptr, "the shape, as a config's problem section (checked as one)").optional(),
      FieldSpec::real("median_ms", 1e-6, kMaxMs, "median kernel time, ms"),
      FieldSpec::real("p10_ms", 0, kMaxMs, "10th percentile, ms").optional(),
      FieldSpec::real("p90_ms", 0, kMaxMs, "90th percentile, ms").optional(),
      FieldSpec::real("tops", 0, 1e7, "achieved tera-operations per second").optional(),
      FieldSpec::real("hbm_gbps", 0, 1e7, "achieved DRAM bandwidth, GB/s").optional(),
      FieldSpec::real("sm_clock_mhz", KernelResult::Clock::kMinMhz, KernelResult::Clock::kMaxMhz,
                      "the SM clock's median over the timed runs, MHz").optional(),
      FieldSpec::real("sm_clock_min_mhz", KernelResult::Clock::kMinMhz, KernelResult::Clock::kMaxMhz,
                      "the lowest SM clock of the timed runs, MHz").optional(),
      FieldSpec::real("sm_clock_max_mhz", KernelResult::Clock::kMinMhz, KernelResult::Clock::kMaxMhz,
                      "the highest SM clock of the timed runs, MHz").optional(),
      FieldSpec::integer("timed_runs", 1, KernelResult::Clock::kMaxRuns, "how many runs were timed").optional(),
      FieldSpec::real("decode_step_ms", 1e-6, kMaxMs, "the serving loop's mean time per generated token (append, "
                      "flush, attend), ms").optional(),
      FieldSpec::object("context_parallel", context_parallel_fields,
                        "a run across GPUs: its ring's bytes, a traced run's timeline, the model's beside it").optional(),
  };
  return t;
}

const FieldTable& measurement_file_fields() {
  static const FieldTable t = {
      FieldSpec::choice("schema", {"attnlab.measurements/1"}, "the format's name and version"),
      FieldSpec::id("gpu", "the spec id of the GPU that ran them (attnlab gpus); \"\": unknown").or_empty().optional(),
      FieldSpec::text("device", 256, "the device name the runtime reports").or_empty().or_object(device_fields).optional(),
      FieldSpec::array("measurements", 1, 100000, measurement_row, "the timings"),
  };
  return t;
}

json measurements_json(const std::vector<Results>& runs) {
  json list = json::array();
  std::string device;
  for (const Results& r : runs) {
    if (r.environment.gpu) device = *r.environment.gpu;
    for (const VariantResult& v : r.variants) {
      if (!v.kernel) continue;
      const KernelResult& k = *v.kernel;
      json row = {{"variant", v.id}, {"label", v.label}, {"params", v.params}, {"problem", r.problem},
                  {"median_ms", k.median_ms}, {"p10_ms", k.p10_ms}, {"p90_ms", k.p90_ms}, {"tops", k.tops},
                  {"hbm_gbps", k.hbm_gbps}};
      if (k.sm_clock) {
        row["sm_clock_mhz"] = k.sm_clock->median_mhz, row["sm_clock_min_mhz"] = k.sm_clock->min_mhz;
        row["sm_clock_max_mhz"] = k.sm_clock->max_mhz, row["timed_runs"] = k.sm_clock->runs;
      }
      if (const auto it = k.probes.find("decode.steps"); it != k.probes.end() && it->second.values.size() >= 2)
        row["decode_step_ms"] = it->second.values[1];  // labels: steps, step_ms, attend_ms, step_over_attend
      if (json ring = context_parallel_json(v); !ring.is_null()) row["context_parallel"] = std::move(ring);
      list.push_back(std::move(row));
    }
  }
  return {{"schema", "attnlab.measurements/1"}, {"gpu", spec_id_for_device(device)}, {"device", device},
          {"measurements", list}};
}

std::vector<Measurement> load_measurements(const std::string& path, std::string* gpu) {
  const json j = read_data_file(path);
  const std::string w = where_of(path);
  check_fields(j, measurement_file_fields(), w);
  if (gpu) *gpu = j.value("gpu", "");
  std::vector<Measurement> out;
  const json& list = j["measurements"];
  for (size_t i = 0; i < list.size(); ++i) {
    const json& m = list[i];
    const std::string at = fmt::format("{}.measurements[{}]", w, i);
    json config = {{"problem", m.value("problem", json::object())},
                   {"variants", json::array({{{"id", m["variant"]}, {"params", m.value("params", json::object())}}})}};
    Experiment e;
    try {
      e = parse_experiment(config);
    } catch (const InputError& err) {
      fail_input(at, err.what());
    }
    const Problem& p = e.problem;
    const std::string label = fmt::format("{} B={} H={}/{} N={} d={}{}{}{}", m["variant"].get<std::string>(), p.batch,
                                          p.q_heads, p.kv_heads, p.kv_len, p.head_dim, p.causal ? " causal" : "",
                                          p.phase == Phase::decode ? " decode" : "",
                                          p.gpus > 1 ? fmt::format(" ×{} GPUs", p.gpus) : "");
    out.push_back({label, p, e.variants[0], m["median_ms"].get<double>(), m.value("implementation", std::string())});
  }
  return out;
}

}  // namespace attnlab::sim
