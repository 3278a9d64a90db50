#include "sim/gpu_spec.h"

#include "core/error.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace attnlab::sim {

namespace fs = std::filesystem;
using nlohmann::json;

const char* to_string(Unit u) {
  switch (u) {
    case Unit::hbm: return "hbm";
    case Unit::tensor_fp16: return "mma_fp16";
    case Unit::tensor_fp8: return "mma_fp8";
    case Unit::tensor_int8: return "mma_int8";
    case Unit::fp32_fma: return "fma_fp32";
    case Unit::sfu: return "exp_sfu";
    case Unit::int32: return "int32";
    case Unit::cvt: return "cvt";
    case Unit::issue: return "issue";
  }
  return "?";
}

double GpuSpec::peak(Unit u) const {
  const double per_clk = double(sm_count) * sm_clock_ghz * 1e9;  // SM-clocks per second
  auto tensor = [&](const char* t) {
    const auto it = tensor_tflops.find(t);
    return it == tensor_tflops.end() ? 0.0 : it->second * 1e12;
  };
  switch (u) {
    case Unit::hbm: return hbm_bandwidth_gbs * 1e9;
    case Unit::tensor_fp16: return tensor("fp16");
    case Unit::tensor_fp8: return tensor("fp8");
    case Unit::tensor_int8: return tensor("int8");
    case Unit::fp32_fma: return fp32_tflops * 1e12 / 2;  // instructions: the datasheet counts an FMA as 2 flops
    case Unit::sfu: return sfu_exp2_per_clk_per_sm * per_clk;
    case Unit::int32: return int32_per_clk_per_sm * per_clk;
    case Unit::cvt: return cvt_per_clk_per_sm * per_clk;
    case Unit::issue: return issue_per_clk_per_sm * per_clk;
  }
  return 0;
}

double GpuSpec::efficiency_of(Unit u) const {
  const auto it = efficiency.find(to_string(u));
  return it == efficiency.end() ? 1.0 : it->second;
}

std::string spec_id_for_device(const std::string& device_name) {
  static const std::pair<const char*, const char*> kNames[] = {
      {"H100", "h100-sxm5"}, {"H200", "h200"}, {"A100", "a100-sxm4-80gb"}, {"4090", "rtx-4090"}, {"L40S", "l40s"}};
  for (const auto& [needle, id] : kNames)
    if (device_name.find(needle) != std::string::npos) return id;
  return "";
}

std::string specs_dir() {
  if (const char* env = std::getenv("ATTNLAB_SPECS")) return env;
  return std::string(ATTNLAB_SOURCE_DIR) + "/sim/specs";
}

namespace {

// {"value": v, "source": "…"} with v > 0; the source goes into spec.sources[name].
double positive(const json& j, const std::string& name, const std::string& where, GpuSpec& spec) {
  if (!j.contains(name)) fail_input(where + "." + name, "missing");
  const json& f = j[name];
  if (!f.is_object() || !f.contains("value") || !f["value"].is_number() || !f.contains("source") ||
      !f["source"].is_string() || f["source"].get<std::string>().empty())
    fail_input(where + "." + name, "expected {\"value\": number, \"source\": \"where it comes from\"}");
  const double v = f["value"].get<double>();
  if (!(v > 0) || !std::isfinite(v)) fail_input(where + "." + name, fmt::format("must be positive (got {})", v));
  spec.sources[name] = f["source"].get<std::string>();
  return v;
}

std::string text(const json& j, const char* name, const std::string& where) {
  if (!j.contains(name) || !j[name].is_string() || j[name].get<std::string>().empty())
    fail_input(where + "." + name, "expected a non-empty string");
  return j[name].get<std::string>();
}

}  // namespace

GpuSpec load_gpu_spec_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail_input(path, "cannot open the GPU spec");
  json j;
  try {
    j = json::parse(in);
  } catch (const json::parse_error& e) {
    fail_input(path, fmt::format("not valid JSON (byte {})", e.byte));
  }
  if (!j.is_object()) fail_input(path, "expected a JSON object");
  GpuSpec s;
  const std::string w = path;
  s.id = text(j, "id", w);
  if (s.id != fs::path(path).stem().string())
    fail_input(w + ".id", fmt::format("'{}' must equal the file name '{}'", s.id, fs::path(path).stem().string()));
  s.name = text(j, "name", w);
  s.arch = text(j, "arch", w);
  s.sm_count = static_cast<int>(positive(j, "sm_count", w, s));
  s.sm_clock_ghz = positive(j, "sm_clock_ghz", w, s);
  s.hbm_bandwidth_gbs = positive(j, "hbm_bandwidth_gbs", w, s);
  s.hbm_capacity_gb = positive(j, "hbm_capacity_gb", w, s);
  s.l2_bytes = positive(j, "l2_bytes", w, s);
  s.smem_per_sm_bytes = positive(j, "smem_per_sm_bytes", w, s);
  s.smem_per_cta_bytes = positive(j, "smem_per_cta_bytes", w, s);
  s.regs_per_sm = positive(j, "regs_per_sm", w, s);
  s.max_threads_per_sm = static_cast<int>(positive(j, "max_threads_per_sm", w, s));
  s.max_ctas_per_sm = static_cast<int>(positive(j, "max_ctas_per_sm", w, s));
  if (!j.contains("tensor_tflops") || !j["tensor_tflops"].is_object() || !j["tensor_tflops"].contains("fp16"))
    fail_input(w + ".tensor_tflops", "expected an object with at least \"fp16\"");
  for (const auto& [type, _] : j["tensor_tflops"].items()) {
    if (type != "fp16" && type != "fp8" && type != "int8")
      fail_input(w + ".tensor_tflops." + type, "unknown data type (known: fp16, fp8, int8)");
    GpuSpec scratch;
    s.tensor_tflops[type] = positive(j["tensor_tflops"], type, w + ".tensor_tflops", scratch);
    s.sources["tensor_tflops." + type] = scratch.sources[type];
  }
  s.mma_sync_fraction = positive(j, "mma_sync_fraction", w, s);
  if (s.mma_sync_fraction > 1) fail_input(w + ".mma_sync_fraction", "must be at most 1");
  s.fp32_tflops = positive(j, "fp32_tflops", w, s);
  s.sfu_exp2_per_clk_per_sm = positive(j, "sfu_exp2_per_clk_per_sm", w, s);
  s.int32_per_clk_per_sm = positive(j, "int32_per_clk_per_sm", w, s);
  s.cvt_per_clk_per_sm = positive(j, "cvt_per_clk_per_sm", w, s);
  s.issue_per_clk_per_sm = positive(j, "issue_per_clk_per_sm", w, s);
  if (j.contains("measured")) {
    if (!j["measured"].is_object()) fail_input(w + ".measured", "expected an object");
    s.measured = j["measured"];
    if (s.measured.contains("cta_overhead_us")) {
      const json& v = s.measured["cta_overhead_us"];
      if (!v.is_number() || !(v.get<double>() >= 0) || v.get<double>() > 100)
        fail_input(w + ".measured.cta_overhead_us", "expected microseconds in [0, 100]");
      s.cta_overhead_us = v.get<double>();
    }
    if (s.measured.contains("efficiency")) {
      const json& e = s.measured["efficiency"];
      if (!e.is_object()) fail_input(w + ".measured.efficiency", "expected an object of unit: factor");
      for (const auto& [unit, v] : e.items()) {
        const bool known = std::any_of(std::begin(kUnits), std::end(kUnits), [&](Unit u) { return unit == to_string(u); });
        if (!known) fail_input(w + ".measured.efficiency." + unit, "unknown unit");
        if (!v.is_number() || !(v.get<double>() > 0) || v.get<double>() > 1.5)
          fail_input(w + ".measured.efficiency." + unit, "expected a factor in (0, 1.5]");
        s.efficiency[unit] = v.get<double>();
      }
    }
  }
  return s;
}

std::vector<GpuSpec> all_gpu_specs() {
  std::vector<GpuSpec> specs;
  std::error_code ec;
  for (auto it = fs::directory_iterator(specs_dir(), ec); !ec && it != fs::directory_iterator(); ++it)
    if (it->path().extension() == ".json") specs.push_back(load_gpu_spec_file(it->path().string()));
  if (ec) fail_input(specs_dir(), "cannot list the GPU specs folder");
  std::sort(specs.begin(), specs.end(), [](const GpuSpec& a, const GpuSpec& b) { return a.id < b.id; });
  return specs;
}

GpuSpec load_gpu_spec(const std::string& id) {
  const fs::path file = fs::path(specs_dir()) / (id + ".json");
  if (fs::exists(file)) return load_gpu_spec_file(file.string());
  std::vector<std::string> ids;
  for (const auto& s : all_gpu_specs()) ids.push_back(s.id);
  fail_input("gpu_model", fmt::format("unknown GPU '{}' (known: {})", id, fmt::join(ids, ", ")));
}

}  // namespace attnlab::sim
