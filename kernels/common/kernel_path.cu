// attnlab kernels: is the warpgroup-MMA generation runnable here (kernel_path.h)?
#include "kernels/common/kernel_path.h"

#include "kernels/common/device.h"
#include "kernels/common/device_reason.h"

#include <cuda_runtime.h>

namespace attnlab::kernels {

namespace {

// Writes 1 where the sm_90a image runs (the wgmma kernels are compiled only there), 0 elsewhere.
__global__ void sm90a_probe(int* out) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  *out = 1;
#else
  *out = 0;
#endif
}

}  // namespace

bool warpgroup_mma_available() {
  constexpr int kMaxDevices = 64;
  static int known[kMaxDevices] = {};  // per device: 0 not asked yet, 1 yes, 2 no
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || device < 0 || device >= kMaxDevices) return false;
  if (known[device] == 0) {
    int major = 0, minor = 0, yes = 0;
    int* flag = nullptr;
    const bool candidate = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) == cudaSuccess &&
                           cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) == cudaSuccess &&
                           major == 9 && minor == 0;  // sm_90a code runs on compute capability 9.0 only
    if (candidate && cudaMalloc(&flag, sizeof(int)) == cudaSuccess) {
      sm90a_probe<<<1, 1>>>(flag);
      if (cudaMemcpy(&yes, flag, sizeof(int), cudaMemcpyDeviceToHost) != cudaSuccess) yes = 0;
      cudaFree(flag);
    }
    known[device] = yes == 1 ? 1 : 2;
  }
  return known[device] == 1;
}

std::string warpgroup_mma_refusal(const DeviceInfo& dev) {
  if (!dev.usable) return dev.reason;
  return sm90a_refusal(dev.sm_major, dev.sm_minor, warpgroup_mma_available(), kernels_built_for());
}

}  // namespace attnlab::kernels
