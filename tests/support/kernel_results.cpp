#include "tests/support/kernel_results.h"

#include "core/config.h"

namespace attnlab::test {

Results kernel_results() {
  Problem p;
  p.batch = 1, p.q_heads = 2, p.kv_heads = 2, p.q_len = 4096, p.kv_len = 4096, p.head_dim = 128;
  Results r;
  r.problem = to_json(p);
  r.config = {{"title", "kernel results"}, {"problem", r.problem}};
  r.environment.gpu = "NVIDIA H100 80GB HBM3";
  r.environment.ran = {"kernel", "model"};
  r.environment.skipped = {{"", "reference", "not requested"}};
  r.environment.ground_truth = false;  // a timing run (attnlab bench): no FP64 truth, no metrics
  // One block scale per 1024 tokens, per (batch, head): [1, 2, 4].
  const ProbeArray s_q{{1, 2, 4}, {1, 2, 3, 4, 5, 6, 7, 8}, {}, "", "S_Q per query token, computed on the GPU"};
  const ProbeArray s_k{{1, 2, 4}, {8, 7, 6, 5, 4, 3, 2, 1}, {}, "", "S_K per key token, computed on the GPU"};
  const ProbeArray s_v{{1, 2, 1}, {0.5, 0.25}, {}, "", "S_V per (batch, KV head), computed on the GPU"};
  struct Row {
    const char* label;
    bool int8;              // an int_flash-family variant: GPU scales recorded
    bool v_int8;            // S_V recorded (full INT8)
    double total_bytes;     // the model's DRAM bytes
    double model_ms, kernel_ms;
  };
  const Row rows[] = {{"flash2", false, false, 34e6, 0.060, 0.075},
                      {"int_flash", true, true, 17e6, 0.040, 0.050},
                      {"int_flash_mma_sync", true, true, 17e6, 0.045, 0.090},
                      {"int_half", true, false, 25e6, 0.050, 0.048},
                      {"int_half_mma_sync", true, false, 25e6, 0.052, 0.100}};
  for (const Row& row : rows) {
    VariantResult v;
    v.id = row.int8 ? "int_flash" : "flash2";
    v.label = row.label;
    KernelResult k;
    k.median_ms = row.kernel_ms, k.p10_ms = row.kernel_ms * 0.98, k.p90_ms = row.kernel_ms * 1.02;
    k.tops = p.flops() / (row.kernel_ms * 1e-3) / 1e12;
    k.metrics = no_metrics();  // a timing run: no FP64 truth
    if (row.int8) k.probes = {{"scales.q", s_q}, {"scales.k", s_k}};
    if (row.v_int8) k.probes["scales.v"] = s_v;
    v.kernel = k;
    ModelResult m;
    m.gpu = "h100-sxm5", m.time_ms = row.model_ms, m.bound = "compute";
    m.hbm_bytes = {{"total", row.total_bytes}, {"q", row.total_bytes / 4}, {"k", row.total_bytes / 4},
                   {"v", row.total_bytes / 4}, {"o", row.total_bytes / 4}};
    v.model = m;
    r.variants.push_back(v);
  }
  return r;
}

}  // namespace attnlab::test
