#include "core/results.h"

#include "core/error.h"
#include "core/results_sidecars.h"

#include <fmt/format.h>

namespace attnlab {

using nlohmann::json;

namespace {

json probes_json(const Probes& probes, SidecarPlan* plan, const std::string& variant, const std::string& backend) {
  json out = json::object();
  for (const auto& [name, p] : probes) out[name] = plan ? plan->probe_json(p, variant, backend, name) : to_json(p);
  return out;
}

Probes probes_from(const json& j, const ResultsSource& src, const std::string& variant, const std::string& backend) {
  Probes out;
  for (const auto& [name, p] : j.items())
    out[name] = probe_from_saved(p, src.dir, src.file, fmt::format("probe {} of {}, {}", name, variant, backend));
  return out;
}

// A kernel's sm_clock object: numbers in range, min ≤ median ≤ max, `runs` a whole number — or one line naming the
// file, the variant and the field.
KernelResult::Clock clock_from_json(const json& j, const ResultsSource& src, const std::string& variant) {
  const auto bad = [&](const std::string& what) {
    fail_input(echo_path(src.file), fmt::format("variant {}: kernel.sm_clock: {}", variant, what));
  };
  if (!j.is_object()) bad("not an object");
  KernelResult::Clock c;
  const auto number = [&](const char* key, double lo, double hi) {
    if (!j.contains(key) || !j[key].is_number() || !(j[key].get<double>() >= lo && j[key].get<double>() <= hi))
      bad(fmt::format("{} must be a number in [{}, {}]", key, lo, hi));
    return j[key].get<double>();
  };
  using C = KernelResult::Clock;
  c.min_mhz = number("min_mhz", C::kMinMhz, C::kMaxMhz), c.median_mhz = number("median_mhz", C::kMinMhz, C::kMaxMhz);
  c.max_mhz = number("max_mhz", C::kMinMhz, C::kMaxMhz);
  const double runs = number("runs", 1, C::kMaxRuns);
  if (runs != double(int(runs))) bad("runs must be a whole number");
  c.runs = int(runs);
  if (!(c.min_mhz <= c.median_mhz && c.median_mhz <= c.max_mhz)) bad("min_mhz ≤ median_mhz ≤ max_mhz does not hold");
  return c;
}

json results_json(const Results& r, SidecarPlan* plan) {
  json env = {{"cpu", r.environment.cpu},
              {"gpu", r.environment.gpu ? json(*r.environment.gpu) : json(nullptr)},
              {"version", r.environment.version},
              {"threads", r.environment.threads},
              {"backends_ran", r.environment.ran},
              {"ground_truth", r.environment.ground_truth},
              {"skipped", json::array()}};
  // Where the model ran (absent otherwise, as in files from before they were recorded): its GPU, and why that is
  // not this machine's where it is not.
  if (!r.environment.model_gpu.empty()) env["model_gpu"] = r.environment.model_gpu;
  if (!r.environment.model_gpu_note.empty()) env["model_gpu_note"] = r.environment.model_gpu_note;
  if (!r.environment.data_note.empty()) env["data_note"] = r.environment.data_note;
  for (const auto& s : r.environment.skipped) {
    json one = {{"backend", s.backend}, {"reason", s.reason}};
    if (!s.variant.empty()) one["variant"] = s.variant;
    env["skipped"].push_back(one);
  }
  json variants = json::array();
  for (const auto& v : r.variants) {
    json jv = {{"id", v.id}, {"label", v.label}, {"params", v.params}};
    if (v.reference) {
      const auto& ref = *v.reference;
      jv["reference"] = {{"metrics", to_json(ref.metrics)}, {"time_ms", ref.time_ms}, {"gflops", ref.gflops},
                         {"kv_cache_bytes", ref.kv_cache_bytes}, {"probes", probes_json(ref.probes, plan, v.label, "reference")}};
    }
    if (v.kernel) {
      const auto& k = *v.kernel;
      jv["kernel"] = {{"metrics", to_json(k.metrics)},
                      {"time_ms", {{"median", k.median_ms}, {"p10", k.p10_ms}, {"p90", k.p90_ms}}},
                      {"tops", k.tops}, {"hbm_gbps", k.hbm_gbps}, {"probes", probes_json(k.probes, plan, v.label, "kernel")}};
      if (k.sm_clock)
        jv["kernel"]["sm_clock"] = {{"min_mhz", k.sm_clock->min_mhz}, {"median_mhz", k.sm_clock->median_mhz},
                                    {"max_mhz", k.sm_clock->max_mhz}, {"runs", k.sm_clock->runs}};
    }
    if (v.model) {
      const auto& m = *v.model;
      jv["model"] = {{"gpu", m.gpu}, {"time_ms", m.time_ms}, {"bound", m.bound},
                     {"hbm_bytes", m.hbm_bytes}, {"ops", m.ops}, {"details", m.details}};
    }
    variants.push_back(std::move(jv));
  }
  json out = {{"schema", kResultsSchema}, {"problem", r.problem}, {"config", r.config},
              {"environment", env}, {"variants", variants}};
  if (!r.data_probes.empty()) out["data"] = {{"probes", probes_json(r.data_probes, plan, "data", "inputs")}};
  if (!r.external.empty()) {  // absent without baselines (and in files from before them)
    out["external"] = json::array();
    for (const auto& x : r.external)
      out["external"].push_back({{"implementation", x.implementation}, {"variant", x.variant},
                                 {"median_ms", x.median_ms}, {"gpu", x.gpu}, {"file", x.file}});
  }
  return out;
}

}  // namespace

json to_json(const Results& r) { return results_json(r, nullptr); }
json to_json(const Results& r, SidecarPlan& plan) { return results_json(r, &plan); }

Results results_from_json(const json& j, const ResultsSource& src) {
  const json schema = j.is_object() && j.contains("schema") ? j["schema"] : json();
  if (!schema.is_string() || (schema != kResultsSchema && schema != kResultsSchemaV1))
    fail_input(echo_path(src.file), fmt::format("schema {} is not supported (this attnlab reads \"{}\" and \"{}\")",
                                                schema.is_null() ? "missing" : echo(schema.dump()), kResultsSchema,
                                                kResultsSchemaV1));
  Results r;
  r.problem = j.at("problem");
  r.config = j.value("config", json::object());
  const json& env = j.at("environment");
  r.environment.cpu = env.value("cpu", "");
  if (env.contains("gpu") && env["gpu"].is_string()) r.environment.gpu = env["gpu"].get<std::string>();
  r.environment.version = env.value("version", "");
  r.environment.threads = env.value("threads", 1);
  r.environment.ran = env.value("backends_ran", std::vector<std::string>{});
  r.environment.ground_truth = env.value("ground_truth", true);  // files from before the field: always computed
  r.environment.model_gpu = env.value("model_gpu", "");
  r.environment.model_gpu_note = env.value("model_gpu_note", "");
  r.environment.data_note = env.value("data_note", "");
  for (const auto& s : env.value("skipped", json::array()))
    r.environment.skipped.push_back({s.value("variant", ""), s.at("backend"), s.at("reason")});
  if (j.contains("data") && j["data"].is_object())
    r.data_probes = probes_from(j["data"].value("probes", json::object()), src, "data", "inputs");
  for (const auto& x : j.value("external", json::array()))
    r.external.push_back({x.at("implementation").get<std::string>(), x.value("variant", ""),
                          x.at("median_ms").get<double>(), x.value("gpu", ""), x.value("file", "")});
  for (const auto& jv : j.at("variants")) {
    VariantResult v;
    v.id = jv.at("id");
    v.label = jv.value("label", v.id);
    v.params = jv.value("params", json::object());
    if (jv.contains("reference")) {
      const json& x = jv["reference"];
      v.reference = ReferenceResult{metrics_from_json(x.at("metrics")), x.at("time_ms"), x.value("gflops", 0.0),
                                    x.value("kv_cache_bytes", int64_t(0)), probes_from(x.value("probes", json::object()), src, v.label, "reference")};
    }
    if (jv.contains("kernel")) {
      const json& x = jv["kernel"];
      v.kernel = KernelResult{metrics_from_json(x.at("metrics")), x.at("time_ms").at("median"),
                              x.at("time_ms").at("p10"), x.at("time_ms").at("p90"), x.value("tops", 0.0),
                              x.value("hbm_gbps", 0.0), probes_from(x.value("probes", json::object()), src, v.label, "kernel"), std::nullopt, std::nullopt};
      if (x.contains("sm_clock")) v.kernel->sm_clock = clock_from_json(x["sm_clock"], src, v.label);
    }
    if (jv.contains("model")) {
      const json& x = jv["model"];
      v.model = ModelResult{x.at("gpu"), x.at("time_ms"), x.at("bound"),
                            x.value("hbm_bytes", std::map<std::string, double>{}),
                            x.value("ops", std::map<std::string, double>{}), x.value("details", json::object())};
    }
    r.variants.push_back(std::move(v));
  }
  return r;
}

}  // namespace attnlab
