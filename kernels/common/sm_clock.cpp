// attnlab kernels: sample_sm_clock (sm_clock.h) through NVML's C entry points, looked up by name in
// libnvidia-ml.so.1 (the driver installs it; no header or link-time library needed). The few declarations below
// are NVML's documented ABI: every call returns 0 (NVML_SUCCESS) on success; a device is an opaque handle.
#include "kernels/common/sm_clock.h"

#include <cuda_runtime.h>
#include <dlfcn.h>

#include <fmt/format.h>

namespace attnlab::kernels {

namespace {

using NvmlDevice = void*;
constexpr unsigned kNvmlClockSm = 1;  // nvmlClockType_t NVML_CLOCK_SM

struct Nvml {
  int (*clock_info)(NvmlDevice, unsigned, unsigned*) = nullptr;
  NvmlDevice device = nullptr;
  std::string unavailable;  // empty: usable
  std::string last_error;   // the last sample's failure, where NVML was usable

  Nvml() {
    void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      unavailable = "NVML (libnvidia-ml.so.1) is not installed";
      return;
    }
    auto* init = reinterpret_cast<int (*)()>(dlsym(lib, "nvmlInit_v2"));
    auto* by_pci = reinterpret_cast<int (*)(const char*, NvmlDevice*)>(dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2"));
    clock_info = reinterpret_cast<int (*)(NvmlDevice, unsigned, unsigned*)>(dlsym(lib, "nvmlDeviceGetClockInfo"));
    if (init == nullptr || by_pci == nullptr || clock_info == nullptr) {
      unavailable = "NVML lacks nvmlInit_v2, nvmlDeviceGetHandleByPciBusId_v2 or nvmlDeviceGetClockInfo";
      return;
    }
    if (const int e = init(); e != 0) {
      unavailable = fmt::format("nvmlInit_v2 returned {}", e);
      return;
    }
    int ordinal = 0;
    char bus_id[32] = {};
    if (cudaGetDevice(&ordinal) != cudaSuccess || cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, ordinal) != cudaSuccess) {
      unavailable = "the CUDA device's PCI bus id is not known";
      return;
    }
    if (const int e = by_pci(bus_id, &device); e != 0) unavailable = fmt::format("NVML has no device at {} ({})", bus_id, e);
  }
};

Nvml& nvml() {
  static Nvml n;  // once per process (a function-local static: thread-safe initialization)
  return n;
}

}  // namespace

std::optional<ClockSample> sample_sm_clock() {
  Nvml& n = nvml();
  if (!n.unavailable.empty()) return std::nullopt;
  ClockSample s;
  if (const int e = n.clock_info(n.device, kNvmlClockSm, &s.sm_mhz); e != 0 || s.sm_mhz == 0) {
    n.last_error = e != 0 ? fmt::format("nvmlDeviceGetClockInfo returned {}", e) : "NVML reported an SM clock of 0 MHz";
    return std::nullopt;  // 0 MHz (some virtual GPUs) is no clock: results.json refuses it
  }
  n.last_error.clear();
  return s;
}

std::string clock_unavailable() {
  const Nvml& n = nvml();
  return n.unavailable.empty() ? n.last_error : n.unavailable;
}

}  // namespace attnlab::kernels
