// attnlab tests: what the cost-model tests share — a variant request with some parameters set, and the H100's
// spec.
#pragma once

#include "core/registry.h"
#include "sim/gpu_spec.h"
#include "tests/support/variant_cases.h"

#include <string>

namespace attnlab::test {

// Variant `id`'s defaults with `set` applied through a config's validation (params_of).
inline VariantRequest request(const std::string& id, ParamSettings set = {}) {
  return VariantRequest{id, params_of(*find_variant(id), set), ""};
}

inline const sim::GpuSpec& h100() {
  static const sim::GpuSpec g = sim::load_gpu_spec("h100-sxm5");
  return g;
}

}  // namespace attnlab::test
