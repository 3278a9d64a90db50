#include "tests/support/big_results.h"

#include "core/config.h"

#include <cmath>
#include <cstdint>

namespace attnlab::test {

namespace {

constexpr int64_t B = 4, H = 16, N = 16384, D = 128, Br = 64, Bc = 64;

// Seeded uniform values in [0, 1): the same Results on every call.
struct Lcg {
  uint64_t s;
  double next() {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    return double(s >> 11) * 0x1.0p-53;
  }
};

ProbeArray per_token(Lcg& g, bool as_float, const char* unit, const char* help) {
  std::vector<double> v(size_t(B * H * N));
  for (double& x : v) x = as_float ? double(float(0.01 + 0.05 * g.next())) : 8.0 + 3.0 * g.next();
  return {{B, H, N}, std::move(v), {}, unit, help};
}

ReferenceResult reference(Lcg& g) {
  ReferenceResult ref;
  ref.time_ms = 4000.0;
  for (const char* t : {"k", "v"})
    for (const char* side : {"min", "max"}) {
      std::vector<double> v(size_t(B * H * D));
      for (double& x : v) x = double(float((side[1] == 'i' ? -1 : 1) * (0.5 + 4.0 * g.next())));
      ref.probes[std::string("channels.") + t + "." + side] = {{B, H, D}, std::move(v), {}, "", "channel range"};
    }
  const int64_t steps = N / Bc;
  std::vector<double> tiles, m, l, bytes;
  for (int64_t j = 0; j < steps; ++j) {
    tiles.push_back(double(j));
    bytes.push_back(double(Br * D * 2 + (j + 1) * 2 * Bc * D * 2));
    for (int64_t row = 0; row < Br; ++row) m.push_back(1.0 + std::log1p(double(j)) + 0.01 * row), l.push_back(1.0 + j * g.next());
  }
  ref.probes["trace.kv_tile"] = {{steps}, tiles, {}, "", "KV tile index"};
  ref.probes["trace.m"] = {{steps, Br}, m, {}, "logit", "running max"};
  ref.probes["trace.l"] = {{steps, Br}, l, {}, "", "running sum"};
  ref.probes["trace.hbm_bytes"] = {{steps}, bytes, {}, "bytes", "bytes so far"};
  ref.probes["trace.block"] = labelled({"batch", "head", "row_block", "first_row", "rows", "block_r", "block_c"},
                                       {0, 0, double(N / Br - 1), double(N - Br), double(Br), double(Br), double(Bc)}, "",
                                       "the traced row block");
  ref.probes["lse"] = per_token(g, false, "logit", "logsumexp per query row");
  ref.probes["hbm_bytes"] = labelled({"q", "k", "v", "o", "lse"}, {5e8, 5e8, 5e8, 5e8, 4e6}, "bytes", "");
  return ref;
}

}  // namespace

Results big_results() {
  Problem p;
  p.batch = B, p.q_heads = H, p.kv_heads = H, p.q_len = N, p.kv_len = N, p.head_dim = D;
  Results r;
  r.problem = to_json(p);
  r.config = {{"title", "bench-gpu at N = 16384, synthetic"}, {"problem", r.problem}};
  r.environment.gpu = "NVIDIA H100 80GB HBM3";
  r.environment.ran = {"reference", "kernel", "model"};
  Lcg g{16384};
  // The GPU quantizes the same Q and K for every int_flash-family kernel: one S_Q and one S_K for all four.
  const ProbeArray s_q = per_token(g, true, "", "S_Q per query token, computed on the GPU");
  const ProbeArray s_k = per_token(g, true, "", "S_K per key token, computed on the GPU");
  struct Row {
    const char* label;
    const char* id;
    bool int8, v_int8;
    double ms;
  };
  const Row rows[] = {{"flash2", "flash2", false, false, 3.0},          {"flash2_mma_sync", "flash2", false, false, 4.0},
                      {"int_flash", "int_flash", true, true, 2.0},       {"int_flash_mma_sync", "int_flash", true, true, 3.5},
                      {"int_half", "int_flash", true, false, 2.4},       {"int_half_mma_sync", "int_flash", true, false, 3.8}};
  for (const Row& row : rows) {
    VariantResult v;
    v.id = row.id, v.label = row.label;
    if (v.label == "flash2") v.reference = reference(g);
    KernelResult k;
    k.median_ms = row.ms, k.p10_ms = row.ms * 0.99, k.p90_ms = row.ms * 1.01;
    k.tops = p.flops() / (row.ms * 1e-3) / 1e12;
    k.metrics = no_metrics();
    if (row.int8) {
      k.probes["scales.q"] = s_q;
      k.probes["scales.k"] = s_k;
    }
    if (row.v_int8) k.probes["scales.v"] = {{B, H, 1}, std::vector<double>(size_t(B * H), 0.25), {}, "", "S_V"};
    k.probes["lse"] = per_token(g, false, "logit", "logsumexp per query row, read back from the GPU");
    k.probes["kernel.launch"] = labelled({"grid", "threads"}, {double(B * H * N / 128), 256}, "", "launch");
    v.kernel = std::move(k);
    ModelResult m;
    m.gpu = "h100-sxm5", m.time_ms = row.ms * 0.9, m.bound = "compute";
    m.hbm_bytes = {{"total", 2e9}, {"q", 5e8}, {"k", 5e8}, {"v", 5e8}, {"o", 5e8}};
    v.model = std::move(m);
    r.variants.push_back(std::move(v));
  }
  return r;
}

}  // namespace attnlab::test
