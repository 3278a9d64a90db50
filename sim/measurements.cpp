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
      FieldSpec::real("decode_step_ms", 1e-6, kMaxMs, "the serving loop's mean time per generated token (append, "
                      "flush, attend), ms").optional(),
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
      if (const auto it = k.probes.find("decode.steps"); it != k.probes.end() && it->second.values.size() >= 2)
        row["decode_step_ms"] = it->second.values[1];  // labels: steps, step_ms, attend_ms, step_over_attend
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
    const std::string label = fmt::format("{} B={} H={}/{} N={} d={}{}{}", m["variant"].get<std::string>(), p.batch,
                                          p.q_heads, p.kv_heads, p.kv_len, p.head_dim, p.causal ? " causal" : "",
                                          p.phase == Phase::decode ? " decode" : "");
    out.push_back({label, p, e.variants[0], m["median_ms"].get<double>(), m.value("implementation", std::string())});
  }
  return out;
}

}  // namespace attnlab::sim
