// attnlab sim: a GPU's specification as data (sim/specs/<id>.json). Every number carries its source
// (datasheet, whitepaper, programming guide, estimate); the `measured` section holds the efficiency
// factors `attnlab calibrate` fits from kernel timings (sim/calibrate.h) and the model then applies.
#pragma once

#include "sim/data_fields.h"

#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <vector>

namespace attnlab::sim {

// The execution units the model charges work to (what runs in parallel with what: cost_model.h). Their
// names (to_string) are the keys of results.json's model "ops": mma_fp16, mma_fp8, mma_int8, fma_fp32,
// exp_sfu, int32, cvt, issue (every instruction takes an issue slot of its warp scheduler, whatever pipe
// executes it); and hbm for bandwidth.
enum class Unit { hbm, tensor_fp16, tensor_fp8, tensor_int8, fp32_fma, sfu, int32, cvt, issue };
const char* to_string(Unit u);
inline constexpr Unit kUnits[] = {Unit::hbm,   Unit::tensor_fp16, Unit::tensor_fp8, Unit::tensor_int8, Unit::fp32_fma,
                                  Unit::sfu,   Unit::int32,       Unit::cvt,        Unit::issue};

struct GpuSpec {
  std::string id, name, arch;
  int sm_count = 0;
  double sm_clock_ghz = 0, hbm_bandwidth_gbs = 0, hbm_capacity_gb = 0;
  double l2_bytes = 0, smem_per_sm_bytes = 0, smem_per_cta_bytes = 0, regs_per_sm = 0;
  int max_threads_per_sm = 0, max_ctas_per_sm = 0;
  std::map<std::string, double> tensor_tflops;  // "fp16", "fp8", "int8" (TOPS); absent = no such unit
  double mma_sync_fraction = 1;                 // of the tensor peak reachable with warp-level mma.sync
  double fp32_tflops = 0;                       // non-tensor FP32, 2 flops per FMA
  double sfu_exp2_per_clk_per_sm = 0, int32_per_clk_per_sm = 0, cvt_per_clk_per_sm = 0;
  double issue_per_clk_per_sm = 0;  // thread-instructions issued per clock per SM (4 schedulers × 32 lanes)
  // The latency term (cost_model.h, step 2): the cycles a warp waits, on average, between two of its own
  // instructions (its dependent-instruction latency; what Nsight Compute calls warp cycles per issued
  // instruction when one warp runs alone). A scheduler with W warps issues min(1, W / this) per clock.
  double issue_latency_cycles = 5.5;
  // The bytes a kernel writes that are still in L2, dirty, when it ends — written back later, and counted for
  // no kernel by Nsight Compute, which flushes L2 between the kernels it profiles: a launch's DRAM writes are
  // what it writes beyond this (absent: 0).
  double l2_write_resident_bytes = 0;
  std::map<std::string, std::string> sources;   // field → where the number comes from
  std::map<std::string, double> efficiency;     // measured: unit name → achieved fraction of peak (≤ 1)
  // Fixed time per CTA slot and wave that no throughput hides: filling the tile pipeline before the
  // first MMA and draining it after the last (about one DRAM latency plus a tile's load). An estimate
  // until calibrated (measured.cta_overhead_us).
  double cta_overhead_us = 1.0;
  // The links to the host's other GPUs, which context parallelism's ring sends K/V over (sim/context_parallel.h):
  // NVLink's bandwidth per direction per GPU where the GPU has it, else PCIe's (the fallback, and every host's);
  // the time one NCCL send/receive takes beside its bytes; the share of the peak NCCL's point-to-point reaches.
  // pcie_gbs_per_direction = 0: the spec has no links section, and the multi-GPU model refuses it by name.
  double nvlink_gbs_per_direction = 0;  // 0: no NVLink
  double pcie_gbs_per_direction = 0;
  double link_latency_us = 0, link_efficiency = 1;
  // The links section's own estimates, before `measured` replaces them with a fit (calibrate starts from these).
  double links_section_latency_us = 0, links_section_efficiency = 1;
  nlohmann::json measured = nlohmann::json::object();  // the `measured` section as read

  // Peak rate of a unit in operations per second (HBM: bytes per second), before efficiency.
  // Tensor units: flops (2 per multiply-add); fp32_fma, SFU, INT32 and CVT: instructions (one result
  // per lane). 0 when the GPU has no such unit (e.g. FP8 on A100).
  double peak(Unit u) const;
  double efficiency_of(Unit u) const;  // measured factor, 1 when uncalibrated
};

// The folder of spec files: $ATTNLAB_SPECS, else the source tree's sim/specs.
std::string specs_dir();
// Every field of a spec file, declared (sim/data_fields.h): numbers {"value", "source"} with their ranges,
// the optional `measured` section calibrate writes. Unknown fields are refused.
const FieldTable& gpu_spec_fields();
// Reads and validates one spec against gpu_spec_fields(); its id must equal the file name. Errors name
// the file and the field.
GpuSpec load_gpu_spec_file(const std::string& path);
// The file of a GPU named by an id ("h100-sxm5": specs_dir()/h100-sxm5.json) or a path ("my/gpu.json",
// "gpu.json"), by sim/data_fields.h's rule (data_file_name); an unknown id or a name that is neither fails as
// "<where>: …", listing the known ids.
std::string gpu_spec_path(const std::string& id_or_path, const std::string& where = "gpu_model");
// The spec there, read and validated; every error names `where` first ("gpu_model: '<path>': not valid JSON …",
// "--gpu: <path>.sm_count: …").
GpuSpec load_gpu_spec(const std::string& id_or_path, const std::string& where = "gpu_model");
// Every spec in specs_dir(), sorted by id.
std::vector<GpuSpec> all_gpu_specs();

}  // namespace attnlab::sim
