// attnlab core: whether a producer warpgroup copies a kernel's K/V tiles — core/kernel_traits.h's
// kProducerLoads read against a variant request, one answer for the kernel backends (which launch by it) and
// the cost model (which schedules by it).
#pragma once

#include "core/config.h"
#include "core/kernel_traits.h"

namespace attnlab {

// True where v's kernel of generation `arch` has a row in kProducerLoads whose every (param, value) holds for v.
inline bool producer_loads(const VariantRequest& v, int arch) {
  for (const ProducerLoads& r : kProducerLoads) {
    if (v.id != r.variant || arch != r.arch) continue;
    bool holds = true;
    for (const ProducerLoads::Holds& h : r.when)
      holds = holds && (!h.param || (v.params.values().count(h.param) > 0 && v.params.choice(h.param) == h.value));
    if (holds) return true;
  }
  return false;
}

}  // namespace attnlab
