// attnlab kernels: GPU discovery. The one place that asks the CUDA runtime what is installed.
#pragma once

#include <string>

namespace attnlab::kernels {

struct DeviceInfo {
  bool usable = false;
  std::string name;    // "NVIDIA H100 80GB HBM3" when usable
  std::string reason;  // why not, when not usable: device_reason.h's words ("no CUDA GPU found", …)
  int sm_major = 0, sm_minor = 0;
  int sm_count = 0;
  double memory_gib = 0.0;
  int smem_per_block_optin = 0;  // bytes of shared memory one CTA may ask for (0: not known)
  // The sm_90a (warpgroup MMA) kernels run here: compute capability 9.0 and a binary that holds them
  // (kernel_path.h: warpgroup_mma_available, asked once when the device is probed). The kernel table's support
  // checks read it from here, so that they answer for a device described by hand as for the one probed.
  bool warpgroup_mma = false;
};

// Device 0 as the runtime sees it. Never throws: a machine without a GPU is a normal answer.
DeviceInfo probe_device();

// The GPU architectures this build's kernels were compiled for, as CMake was told ("90a", "80;89;90a").
std::string kernels_built_for();

}  // namespace attnlab::kernels
