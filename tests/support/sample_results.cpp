#include "tests/support/sample_results.h"

#include "core/config.h"

#include <cmath>

namespace attnlab::test {

Results small_results() {
  Problem p;
  p.batch = 1, p.q_heads = 2, p.kv_heads = 1, p.q_len = 6, p.kv_len = 6, p.head_dim = 4;
  Results r;
  r.problem = to_json(p);
  r.config = {{"title", "sample results"}, {"problem", r.problem}};
  VariantResult v;
  v.id = v.label = "turbo";
  v.params = {{"priority", "entropy"}, {"bits_lo", 2}};
  ReferenceResult ref;
  ref.probes["scales.q"] = {{1, 2, 6}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {}, "", "s_Q per token"};
  ref.probes["channels.k.min"] = {{1, 1, 4}, {-1, -2, -9, -1}, {}, "", ""};
  ref.probes["channels.k.max"] = {{1, 1, 4}, {1, 3, 8, 1}, {}, "", ""};
  ref.probes["channels.k_pre_rope.min"] = {{1, 1, 4}, {-1, -1, -1, -1}, {}, "", ""};
  ref.probes["channels.k_pre_rope.max"] = {{1, 1, 4}, {1, 1, 12, 1}, {}, "", ""};
  ref.probes["channels.v.min"] = {{1, 1, 4}, {-1, -1, -1, -1}, {}, "", ""};
  ref.probes["channels.v.max"] = {{1, 1, 4}, {1, 1, 1, 1}, {}, "", ""};
  ref.probes["kv_bits"] = {{1, 1}, {2}, {}, "bits", ""};
  for (const char* m : {"gap_std", "entropy", "min_max", "variation"})
    ref.probes[std::string("priority.") + m] = {{1, 1}, {0.5}, {}, "", ""};
  ref.probes["sas.zeroed_fraction"] = labelled({"zeroed", "visible", "fraction"}, {3, 12, 0.25}, "", "");
  ref.probes["sas.curve.t"] = {{3}, {-2, -1, 0}, {}, "", ""};
  ref.probes["sas.curve.exp"] = {{3}, {std::exp(-2.0), std::exp(-1.0), 1}, {}, "", ""};
  ref.probes["sas.curve.sas"] = {{3}, {0, 0.36, 1}, {}, "", ""};
  ref.probes["trace.m"] = {{2, 3}, {1, 2, 3, 4, 5, 6}, {}, "logit", ""};
  ref.probes["trace.l"] = {{2, 3}, {1, 1, 1, 2, 2, 2}, {}, "", ""};
  ref.probes["trace.hbm_bytes"] = {{2}, {100, 200}, {}, "bytes", ""};
  ref.probes["hbm_bytes"] = labelled({"q", "k", "v", "o"}, {10, 20, 30, 40}, "bytes", "");
  v.reference = ref;
  ModelResult m;
  m.gpu = "h100-sxm5", m.time_ms = 0.001;
  m.hbm_bytes = {{"total", 1000}, {"q", 400}, {"o", 600}};
  v.model = m;
  KernelResult k;
  k.median_ms = 0.002;
  v.kernel = k;
  r.variants = {v};
  return r;
}

}  // namespace attnlab::test
