// attnlab core: the `kernel` parameter of the variants that have CUDA kernels (flash2, int_flash) — which
// kernel generation the kernel backend runs. The reference and its numbers do not depend on it; the cost
// model reads it to pick the kernel-traits row (core/kernel_traits.h).
//
// The choices and the generation each one pins live in one table (kKernelChoices): the parameter's
// declared choices, the kernel backend's dispatch and the cost model's schedule all read it.
#pragma once

#include "core/params.h"

#include <string>
#include <vector>

namespace attnlab::variants {

struct KernelChoice {
  const char* name;  // the parameter's value
  int generation;    // core/kernel_traits.h's arch: 0 = auto (the rule chooses), 80 = mma.sync, 90 = wgmma
};

inline constexpr KernelChoice kKernelChoices[] = {{"auto", 0}, {"mma_sync", 80}, {"wgmma", 90}};

inline ParamSpec kernel_generation_param() {
  std::vector<std::string> names;
  for (const KernelChoice& c : kKernelChoices) names.emplace_back(c.name);
  return ParamSpec::choice("kernel", kKernelChoices[0].name, names,
                           "CUDA kernel: mma.sync (sm_80+), wgmma (sm_90a, prefill), or auto = the fastest that applies");
}

// The generation `values` pins: 0 (auto) where the variant declares no `kernel` parameter. The value was
// validated against the declared choices, so it is always in the table.
inline int pinned_generation(const ParamValues& values) {
  if (values.values().count("kernel") == 0) return 0;
  const std::string& chosen = values.choice("kernel");
  for (const KernelChoice& c : kKernelChoices)
    if (chosen == c.name) return c.generation;
  return 0;
}

}  // namespace attnlab::variants
