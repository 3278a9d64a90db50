// attnlab kernels: which kernel generation runs a variant — mma.sync (any sm_80+ GPU, every shape) or
// warpgroup MMA (sm_90a, prefill without a KV split). `automatic` takes the latter wherever it applies
// (core/kernel_traits.h: kernel_arch); the others pin one, e.g. to compare the two in one benchmark.
#pragma once

#include <string>

namespace attnlab::kernels {

struct DeviceInfo;

enum class KernelPath { automatic, warp_mma, warpgroup_mma };

inline const char* to_string(KernelPath path) {
  switch (path) {
    case KernelPath::automatic: return "automatic";
    case KernelPath::warp_mma: return "mma.sync";
    case KernelPath::warpgroup_mma: return "wgmma";
  }
  return "?";
}

// The path a pinned generation asks for: core/variants/kernel_param.h's 0 (auto), 80 (mma.sync), 90 (wgmma).
inline KernelPath path_of_generation(int generation) {
  return generation == 90 ? KernelPath::warpgroup_mma : generation == 80 ? KernelPath::warp_mma : KernelPath::automatic;
}

// The generation (80 or 90) of a path that ran, as the probes report it.
inline int generation_of(KernelPath path) { return path == KernelPath::warpgroup_mma ? 90 : 80; }

// True when the current device is compute capability 9.0 and this binary holds the sm_90a kernels
// (checked once per device by running a probe kernel).
bool warpgroup_mma_available();

// "" where the sm_90a kernels run on `dev` (the current device); otherwise why not, in device_reason.h's
// words: dev.reason where no GPU is usable, else "sm_90a needed (this GPU is sm_80)" or "… (this build has no
// sm_90a kernels: compiled for 80)".
std::string warpgroup_mma_refusal(const DeviceInfo& dev);

}  // namespace attnlab::kernels
