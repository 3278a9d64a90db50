#include "kernels/device.h"

#include <cuda_runtime.h>

namespace attnlab::kernels {

DeviceInfo probe_device() {
  DeviceInfo info;
  int count = 0;
  if (const cudaError_t err = cudaGetDeviceCount(&count); err != cudaSuccess) {
    info.reason = std::string("no GPU: ") + cudaGetErrorString(err);
    return info;
  }
  if (count == 0) {
    info.reason = "no GPU: no CUDA device";
    return info;
  }
  cudaDeviceProp prop{};
  if (const cudaError_t err = cudaGetDeviceProperties(&prop, 0); err != cudaSuccess) {
    info.reason = std::string("no GPU: ") + cudaGetErrorString(err);
    return info;
  }
  info.usable = true;
  info.name = prop.name;
  info.sm_major = prop.major;
  info.sm_minor = prop.minor;
  info.sm_count = prop.multiProcessorCount;
  info.memory_gib = double(prop.totalGlobalMem) / double(1ull << 30);
  info.smem_per_block_optin = int(prop.sharedMemPerBlockOptin);
  return info;
}

}  // namespace attnlab::kernels
