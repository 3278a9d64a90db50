#include "kernels/common/device.h"

#include "kernels/common/device_reason.h"
#include "kernels/common/kernel_path.h"

#include <cuda_runtime.h>

namespace attnlab::kernels {

namespace {

// Asked for its attributes only: the runtime finds it when this binary holds code for the device.
__global__ void image_probe() {}

}  // namespace

std::string kernels_built_for() { return ATTNLAB_CUDA_ARCHITECTURES_BUILT; }

DeviceInfo probe_device() {
  DeviceQuery q;
  q.built_for = kernels_built_for();
  q.build_check = ATTNLAB_KERNELS_BUILD_CHECK != 0;
  if (cudaRuntimeGetVersion(&q.runtime_version) != cudaSuccess) q.runtime_version = CUDART_VERSION;
  if (cudaDriverGetVersion(&q.driver_version) != cudaSuccess) q.driver_version = 0;
  cudaDeviceProp prop{};
  if (const cudaError_t err = cudaGetDeviceCount(&q.device_count); err != cudaSuccess) {
    q.count_error = cudaGetErrorName(err);
    q.device_count = 0;
  } else if (q.device_count > 0) {
    if (const cudaError_t e = cudaGetDeviceProperties(&prop, 0); e != cudaSuccess) {
      q.count_error = cudaGetErrorName(e);
    } else {
      q.sm_major = prop.major, q.sm_minor = prop.minor;
      cudaFuncAttributes attributes{};
      q.has_kernel_image = cudaFuncGetAttributes(&attributes, image_probe) == cudaSuccess;
    }
  }
  cudaGetLastError();  // the questions' errors are answers, not failures of a later call

  DeviceInfo info;
  info.reason = unusable_reason(q);
  info.usable = info.reason.empty();
  if (!info.usable) return info;
  info.name = prop.name;
  info.sm_major = prop.major;
  info.sm_minor = prop.minor;
  info.sm_count = prop.multiProcessorCount;
  info.memory_gib = double(prop.totalGlobalMem) / double(1ull << 30);
  info.smem_per_block_optin = int(prop.sharedMemPerBlockOptin);
  info.warpgroup_mma = warpgroup_mma_available();
  return info;
}

}  // namespace attnlab::kernels
