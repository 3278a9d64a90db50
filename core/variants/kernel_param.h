// attnlab core: the `kernel` parameter of the variants that have CUDA kernels (flash2, int_flash) — which
// kernel generation the kernel backend runs. The reference and its numbers do not depend on it; the cost
// model reads it to pick the kernel-traits row (core/kernel_traits.h).
#pragma once

#include "core/params.h"

namespace attnlab::variants {

inline ParamSpec kernel_generation_param() {
  return ParamSpec::choice("kernel", "auto", {"auto", "mma_sync", "wgmma"},
                           "CUDA kernel: mma.sync (sm_80+), wgmma (sm_90a, prefill), or auto = the fastest that applies");
}

}  // namespace attnlab::variants
