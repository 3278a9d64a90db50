// attnlab kernels: why a GPU cannot run the kernels, in words that name what is missing. Plain C++ over
// plain numbers (no CUDA header), so the wording is tested with the runtime's answers stubbed
// (tests/kernels/common/test_device_reason.cpp); probe_device (device.cu) fills DeviceQuery from the runtime.
#pragma once

#include <string>

namespace attnlab::kernels {

// What the CUDA runtime answered about device 0, and what this build holds.
struct DeviceQuery {
  int runtime_version = 0;          // cudaRuntimeGetVersion: 13000 for CUDA 13.0
  int driver_version = 0;           // cudaDriverGetVersion: the newest CUDA the driver supports; 0 without a driver
  std::string count_error;          // cudaGetDeviceCount's error name, "" on success
  int device_count = 0;
  int sm_major = 0, sm_minor = 0;   // device 0's compute capability
  bool has_kernel_image = true;     // this binary holds code that runs on device 0
  std::string built_for;            // the architectures the kernels were compiled for ("90a", "80;89;90a")
  bool build_check = false;         // the kernels were compiled as a build check (PTX without optimization)
};

// "" when device 0 can run the kernels; otherwise one line naming the first thing missing:
//   "no CUDA GPU found (no NVIDIA driver is installed)"
//   "the driver is older than the runtime (the driver supports CUDA 12.2, this build's runtime is CUDA 13.0)"
//   "no CUDA GPU found" / "no CUDA GPU found (cudaErrorNoDevice)"
//   "sm_80 or newer needed (this GPU is sm_75)"
//   "this build's kernels are a build check, not fit to run (configured without a GPU: PTX for 90a, unoptimized):
//    configure on the GPU's machine or with -DATTNLAB_CUDA_ARCHITECTURES=90a"
//   "no kernels for this GPU's sm_89 in this build (compiled for 90a): configure with -DATTNLAB_CUDA_ARCHITECTURES=89"
std::string unusable_reason(const DeviceQuery& q);

// "" when the sm_90a kernels (warpgroup MMA) can run on a usable device of compute capability
// sm_major.sm_minor whose binary image does (wgmma_image) or does not hold them; otherwise
// "sm_90a needed (this GPU is sm_80)" or "sm_90a needed (this build has no sm_90a kernels: compiled for 90)".
std::string sm90a_refusal(int sm_major, int sm_minor, bool wgmma_image, const std::string& built_for);

// "13.0" from the runtime's 13000.
std::string cuda_version_text(int version);

}  // namespace attnlab::kernels
