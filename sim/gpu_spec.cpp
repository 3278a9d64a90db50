#include "sim/gpu_spec.h"

#include "core/error.h"
#include "sim/data_fields.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>

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

std::string specs_dir() {
  if (const char* env = std::getenv("ATTNLAB_SPECS")) return env;
  return std::string(ATTNLAB_SOURCE_DIR) + "/sim/specs";
}

namespace {

const FieldTable& tensor_fields() {
  static const FieldTable t = {
      FieldSpec::real("fp16", 0.01, 1e5, "dense FP16/BF16 tensor-core peak, FP32 accumulate (TFLOPS)").with_source(),
      FieldSpec::real("fp8", 0.01, 1e5, "dense FP8 tensor-core peak (TFLOPS); absent: no FP8 unit").with_source().optional(),
      FieldSpec::real("int8", 0.01, 1e5, "dense INT8 tensor-core peak (TOPS); absent: no INT8 unit").with_source().optional(),
  };
  return t;
}

// The links to the host's other GPUs (GpuSpec::nvlink_gbs_per_direction …).
const FieldTable& link_fields() {
  static const FieldTable t = {
      FieldSpec::real("nvlink_gbs_per_direction", 1, 1e5, "NVLink bandwidth per direction per GPU, GB/s; absent: no NVLink")
          .with_source()
          .optional(),
      FieldSpec::real("pcie_gbs_per_direction", 1, 1e5, "PCIe bandwidth per direction, GB/s").with_source(),
      FieldSpec::real("latency_us", 0, 1e4, "time of one NCCL send/receive beside its bytes, µs").with_source(),
      FieldSpec::real("efficiency", 0.01, 1, "share of the link's peak NCCL's point-to-point transfers reach")
          .with_source(),
  };
  return t;
}

// The calibration's factors per unit: the fit's range (calibrate.h) with room for a hand-written factor.
const FieldTable& efficiency_fields() {
  static const FieldTable t = [] {
    FieldTable rows;
    for (Unit u : kUnits)
      rows.push_back(FieldSpec::real(to_string(u), 0.01, 1.5, "achieved fraction of the unit's peak").optional());
    return rows;
  }();
  return t;
}

const FieldTable& fitted_unit_row() {
  static const FieldTable t = [] {
    std::vector<std::string> names;
    for (Unit u : kUnits) names.push_back(to_string(u));
    names.push_back("cta_overhead_us");
    names.push_back("issue_latency_cycles");
    names.push_back("link_efficiency");
    names.push_back("link_latency_us");
    return FieldTable{FieldSpec::choice("unit", names, "a unit or parameter no measurement moved")};
  }();
  return t;
}

const FieldTable& measured_fields() {
  static const FieldTable t = {
      FieldSpec::real("cta_overhead_us", 0, 100, "fixed time per CTA wave (pipeline fill and drain), µs").optional(),
      FieldSpec::real("issue_latency_cycles", 1, 64, "cycles between a warp's dependent instructions").optional(),
      FieldSpec::object("efficiency", efficiency_fields, "unit → achieved fraction of its peak").optional(),
      FieldSpec::real("link_efficiency", 0.01, 1, "the links' achieved fraction of their rate per direction, fitted "
                      "on rings measured across GPUs (replaces links.efficiency)").optional(),
      FieldSpec::real("link_latency_us", 0, 1e4, "the links' fixed time per transfer, fitted likewise, µs (replaces "
                      "links.latency_us)").optional(),
      FieldSpec::integer("fitted_from", 1, 1e9, "how many measurements the factors were fitted to").optional(),
      FieldSpec::text("measurements", 4096, "the measurements file they were fitted to").optional(),
      FieldSpec::real("median_error_before", 0, 1e9, "median |t_model/t_measured − 1| before the fit").optional(),
      FieldSpec::real("median_error_after", 0, 1e9, "the same after the fit").optional(),
      FieldSpec::real("median_error_leave_one_out", 0, 1e9, "each time predicted by a fit without it").optional(),
      FieldSpec::array("not_identifiable", 0, 16, fitted_unit_row, "factors left at 1: no measurement moved them")
          .optional(),
  };
  return t;
}

}  // namespace

const FieldTable& gpu_spec_fields() {
  static const FieldTable t = {
      FieldSpec::id("id", "the spec's id: its file name without .json"),
      FieldSpec::text("name", 100, "the product name, for tables"),
      FieldSpec::text("arch", 16, "the compute capability, e.g. sm_90"),
      FieldSpec::integer("sm_count", 1, 1024, "streaming multiprocessors").with_source(),
      FieldSpec::real("sm_clock_ghz", 0.1, 10, "SM (boost) clock, GHz").with_source(),
      FieldSpec::real("hbm_bandwidth_gbs", 1, 1e5, "DRAM bandwidth, GB/s").with_source(),
      FieldSpec::real("hbm_capacity_gb", 0.5, 1e4, "DRAM capacity, GB").with_source(),
      FieldSpec::integer("l2_bytes", 1 << 16, 1ll << 34, "L2 cache, bytes").with_source(),
      FieldSpec::integer("smem_per_sm_bytes", 1024, 1 << 24, "shared memory per SM, bytes").with_source(),
      FieldSpec::integer("smem_per_cta_bytes", 1024, 1 << 24, "shared memory one CTA may use, bytes").with_source(),
      FieldSpec::integer("regs_per_sm", 1024, 1 << 24, "32-bit registers per SM").with_source(),
      FieldSpec::integer("max_threads_per_sm", 32, 8192, "resident threads per SM").with_source(),
      FieldSpec::integer("max_ctas_per_sm", 1, 256, "resident CTAs per SM").with_source(),
      FieldSpec::object("tensor_tflops", tensor_fields, "dense tensor-core peaks by input type"),
      FieldSpec::real("mma_sync_fraction", 0.01, 1, "share of the tensor peak warp-level mma.sync reaches").with_source(),
      FieldSpec::real("fp32_tflops", 0.01, 1e4, "non-tensor FP32 peak, 2 flops per FMA (TFLOPS)").with_source(),
      FieldSpec::real("sfu_exp2_per_clk_per_sm", 1, 1024, "ex2 results per clock per SM").with_source(),
      FieldSpec::real("int32_per_clk_per_sm", 1, 1024, "32-bit integer multiply-add results per clock per SM")
          .with_source(),
      FieldSpec::real("cvt_per_clk_per_sm", 1, 1024, "conversions per clock per SM").with_source(),
      FieldSpec::real("issue_per_clk_per_sm", 1, 4096, "thread-instructions issued per clock per SM").with_source(),
      FieldSpec::real("issue_latency_cycles", 1, 64,
                      "cycles between a warp's dependent instructions, on average (absent: 5.5, the H100's)")
          .with_source()
          .optional(),
      FieldSpec::integer("l2_write_resident_bytes", 0, 1ll << 34,
                         "a kernel's written bytes still dirty in L2 when it ends, not yet in DRAM (absent: 0)")
          .with_source()
          .optional(),
      FieldSpec::object("links", link_fields, "the links to the host's other GPUs (absent: no multi-GPU model)")
          .optional(),
      FieldSpec::object("measured", measured_fields, "what `attnlab calibrate` fitted (absent: uncalibrated)")
          .optional(),
  };
  return t;
}

GpuSpec load_gpu_spec_file(const std::string& path) {
  const json j = read_data_file(path);
  const std::string w = where_of(path);
  check_fields(j, gpu_spec_fields(), w);
  GpuSpec s;
  s.id = j["id"], s.name = j["name"], s.arch = j["arch"];
  const std::string stem = fs::path(path).stem().string();
  if (s.id != stem) fail_input(w + ".id", fmt::format("'{}' must equal the file name '{}'", s.id, echo(stem)));
  for (const FieldSpec& f : gpu_spec_fields())
    if (f.sourced) s.sources[f.name] = source_of(j, f.name);
  s.sm_count = static_cast<int>(number(j, "sm_count"));
  s.sm_clock_ghz = number(j, "sm_clock_ghz");
  s.hbm_bandwidth_gbs = number(j, "hbm_bandwidth_gbs");
  s.hbm_capacity_gb = number(j, "hbm_capacity_gb");
  s.l2_bytes = number(j, "l2_bytes");
  s.smem_per_sm_bytes = number(j, "smem_per_sm_bytes");
  s.smem_per_cta_bytes = number(j, "smem_per_cta_bytes");
  s.regs_per_sm = number(j, "regs_per_sm");
  s.max_threads_per_sm = static_cast<int>(number(j, "max_threads_per_sm"));
  s.max_ctas_per_sm = static_cast<int>(number(j, "max_ctas_per_sm"));
  if (s.smem_per_cta_bytes > s.smem_per_sm_bytes)
    fail_input(w + ".smem_per_cta_bytes", fmt::format("{} exceeds smem_per_sm_bytes ({})", s.smem_per_cta_bytes,
                                                      s.smem_per_sm_bytes));
  for (const auto& [type, _] : j["tensor_tflops"].items()) {
    s.tensor_tflops[type] = number(j["tensor_tflops"], type);
    s.sources["tensor_tflops." + type] = source_of(j["tensor_tflops"], type);
  }
  s.mma_sync_fraction = number(j, "mma_sync_fraction");
  s.fp32_tflops = number(j, "fp32_tflops");
  s.sfu_exp2_per_clk_per_sm = number(j, "sfu_exp2_per_clk_per_sm");
  s.int32_per_clk_per_sm = number(j, "int32_per_clk_per_sm");
  s.cvt_per_clk_per_sm = number(j, "cvt_per_clk_per_sm");
  s.issue_per_clk_per_sm = number(j, "issue_per_clk_per_sm");
  if (j.contains("issue_latency_cycles")) s.issue_latency_cycles = number(j, "issue_latency_cycles");
  if (j.contains("l2_write_resident_bytes")) s.l2_write_resident_bytes = number(j, "l2_write_resident_bytes");
  if (j.contains("links")) {
    const json& l = j["links"];
    if (l.contains("nvlink_gbs_per_direction")) s.nvlink_gbs_per_direction = number(l, "nvlink_gbs_per_direction");
    s.pcie_gbs_per_direction = number(l, "pcie_gbs_per_direction");
    s.link_latency_us = s.links_section_latency_us = number(l, "latency_us");
    s.link_efficiency = s.links_section_efficiency = number(l, "efficiency");
    for (const FieldSpec& f : link_fields())
      if (l.contains(f.name)) s.sources["links." + f.name] = source_of(l, f.name);
  }
  if (j.contains("measured")) {
    s.measured = j["measured"];
    if (s.measured.contains("cta_overhead_us")) s.cta_overhead_us = s.measured["cta_overhead_us"].get<double>();
    if (s.measured.contains("issue_latency_cycles"))
      s.issue_latency_cycles = s.measured["issue_latency_cycles"].get<double>();
    if (s.measured.contains("efficiency"))
      for (const auto& [unit, v] : s.measured["efficiency"].items()) s.efficiency[unit] = v.get<double>();
    // The link's fit needs a links section to refine: without one there is no multi-GPU model to apply it to.
    for (const char* key : {"link_efficiency", "link_latency_us"})
      if (s.measured.contains(key) && !j.contains("links"))
        fail_input(w + ".measured." + key, "a fitted link term, but the spec has no links section");
    if (s.measured.contains("link_efficiency")) s.link_efficiency = s.measured["link_efficiency"].get<double>();
    if (s.measured.contains("link_latency_us")) s.link_latency_us = s.measured["link_latency_us"].get<double>();
  }
  return s;
}

std::vector<GpuSpec> all_gpu_specs() {
  std::vector<GpuSpec> specs;
  std::error_code ec;
  for (auto it = fs::directory_iterator(specs_dir(), ec); !ec && it != fs::directory_iterator(); it.increment(ec))
    if (it->path().extension() == ".json") specs.push_back(load_gpu_spec_file(it->path().string()));
  if (ec) fail_input(echo_path(specs_dir()), "cannot list the GPU specs folder");
  std::sort(specs.begin(), specs.end(), [](const GpuSpec& a, const GpuSpec& b) { return a.id < b.id; });
  return specs;
}

std::string gpu_spec_path(const std::string& id_or_path, const std::string& where) {
  return data_file_path(id_or_path, specs_dir(), "GPU", where);
}

GpuSpec load_gpu_spec(const std::string& id_or_path, const std::string& where) {
  const std::string path = gpu_spec_path(id_or_path, where);
  try {
    return load_gpu_spec_file(path);
  } catch (const InputError& err) {  // the file's own errors name the file and its field; this names the option
    throw InputError(where + ": " + err.what());
  }
}

}  // namespace attnlab::sim
