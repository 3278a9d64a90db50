#include "sim/context_parallel_model.h"

#include "core/context_parallel_bytes.h"
#include "core/error.h"
#include "sim/schedule.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace attnlab::sim {

namespace {

double transfer_ms(const LinkRate& l, double bytes) {
  return bytes > 0 ? 1e3 * (l.latency_s + bytes / l.bytes_per_s) : 0;
}

double hbm_ms(const GpuSpec& g, double bytes) {
  return 1e3 * bytes / (g.peak(Unit::hbm) * g.efficiency_of(Unit::hbm));
}

// The ring's merge passes (core/context_parallel.h's account of kernels/context_parallel/lse_merge.h): each its own
// launch, bound by HBM, `rows` query rows of every batch and query head.
double merge_ms(const GpuSpec& g, const Problem& p, int64_t rows, int64_t bytes_per_row, int launches) {
  return hbm_ms(g, double(p.batch * p.q_heads * rows) * double(bytes_per_row)) + launches * kLaunchUs * 1e-3;
}
double merge_bytes(const Problem& p, int64_t rows, int64_t bytes_per_row) {
  return double(p.batch * p.q_heads * rows) * double(bytes_per_row);
}

// The one-GPU model of a block: the (query chunk, key chunk) pairs as a problem of their own. A block whose
// visible pairs are its own bottom-right causal mask (the ring's diagonal blocks) is that causal problem; a
// partial block of another shape (q_len ≠ kv_len) is the full block's time scaled by its share of visible
// pairs — an approximation the explanation names.
struct BlockTime {
  double ms = 0, dram_bytes = 0;
  bool scaled = false;
};
BlockTime block_time(const Problem& p, const VariantRequest& v, const GpuSpec& g, const ModelOptions& o,
                     const cp::RingBlock& b) {
  Problem sub = p;
  sub.q_len = b.q.size(), sub.kv_len = b.kv.size();
  sub.causal = b.kind == cp::BlockKind::partial;
  BlockTime t;
  if (sub.causal && cp::visible_pairs(b.q, b.kv, p.kv_len - p.q_len, true) !=
                        cp::visible_pairs({0, sub.q_len}, {0, sub.kv_len}, sub.kv_len - sub.q_len, true)) {
    sub.causal = false;
    t.scaled = true;
  }
  const Prediction pr = predict(make_schedule(sub, v, g), g, o);
  const double share = t.scaled ? double(b.pairs) / double(sub.q_len * sub.kv_len) : 1.0;
  t.ms = pr.time_ms * share, t.dram_bytes = pr.dram_bytes * share;
  return t;
}

MultiGpuPrediction ring_prefill(const Problem& p, const VariantRequest& v, const GpuSpec& g, int P, cp::Balance b,
                                const ModelOptions& o) {
  const cp::RingPlan plan = cp::plan_ring(p.q_len, p.kv_len, p.causal, P, b, cp::kShardAlign);
  MultiGpuPrediction m;
  m.imbalance = plan.imbalance();
  std::vector<double> hbm(P, 0.0);
  bool scaled = false;
  const int64_t d = p.head_dim;
  auto charge_merge = [&](RingSlot& slot, int64_t rows, int64_t bytes_per_row, int launches) {
    slot.compute_ms += merge_ms(g, p, rows, bytes_per_row, launches);
    hbm[size_t(slot.gpu)] += merge_bytes(p, rows, bytes_per_row);
  };
  // Across GPUs each block's partial joins its query chunk's result by its role (core/context_parallel.h's account:
  // the only block writes the result itself, the first becomes the running result, a middle one merges, the last
  // merges and stores); a chunk no block sees is cleared at the first step and stored at the last. One GPU runs the
  // one-GPU kernel: no merges.
  const bool merges = P > 1;
  const cp::MergePlan merging = cp::merge_plan(plan);
  auto merge_bytes_of = [&](cp::MergeRole r) -> int64_t {
    switch (r) {
      case cp::MergeRole::first: return cp::merge_first_bytes_per_row(d);
      case cp::MergeRole::middle: return cp::merge_add_bytes_per_row(d);
      case cp::MergeRole::last: return cp::merge_last_bytes_per_row(d);
      default: return 0;
    }
  };
  for (int s = 0; s < P; ++s) {
    const auto& row = plan.steps[size_t(s)];
    for (const cp::RingStep& st : row) {
      RingSlot slot{.gpu = st.gpu, .step = s, .pairs = st.pairs};
      const std::vector<cp::Span>& chunks = plan.shards[size_t(st.gpu)].q;
      for (size_t c = 0; c < chunks.size(); ++c) {
        const int64_t per_row = s == 0       ? cp::merge_clear_bytes_per_row(d)
                                : s == P - 1 ? cp::merge_store_bytes_per_row(d)
                                             : 0;
        if (merges && per_row > 0 && chunks[c].size() > 0 && merging.unseen[size_t(st.gpu)][c])
          charge_merge(slot, chunks[c].size(), per_row, 1);
      }
      for (size_t k = 0; k < st.blocks.size(); ++k) {
        const cp::RingBlock& blk = st.blocks[k];
        if (blk.kind == cp::BlockKind::masked) continue;
        const BlockTime t = block_time(p, v, g, o, blk);
        scaled = scaled || t.scaled;
        slot.compute_ms += t.ms;
        hbm[size_t(st.gpu)] += t.dram_bytes;
        if (const int64_t per_row = merge_bytes_of(merging.roles[size_t(s)][size_t(st.gpu)][k]); merges && per_row > 0)
          charge_merge(slot, blk.q.size(), per_row, 1);
      }
      if (s + 1 < P) slot.link_bytes = cp::wire_bytes(p, v, st.kv_tokens);
      m.timeline.push_back(slot);
    }
  }
  m.hbm_bytes_per_gpu = *std::max_element(hbm.begin(), hbm.end());
  m.explain.push_back(fmt::format(
      "ring over {} GPUs, {} split (shards aligned to {} tokens): {} steps; each GPU attends the K/V shard in hand "
      "while it sends it on; imbalance {:.3f} (max over GPUs of the attended pairs ÷ their mean)",
      P, cp::to_string(b), cp::kShardAlign, P, m.imbalance));
  if (scaled)
    m.explain.push_back(fmt::format("blocks whose mask is not their own bottom-right causal mask (q_len ≠ kv_len) "
                                    "are predicted as full blocks scaled by their share of visible pairs"));
  return m;
}

MultiGpuPrediction sharded_decode(const Problem& p, const VariantRequest& v, const GpuSpec& g, int P,
                                  const ModelOptions& o) {
  const std::vector<cp::Span> shards = cp::decode_shards(p.kv_len, P, cp::kShardAlign);
  MultiGpuPrediction m;
  const double partial = merge_bytes(p, 1, cp::partial_bytes_per_row(p.head_dim));  // O in FP16, its logsumexp
  double pairs_max = 0, pairs_sum = 0;
  for (int r = 0; r < P; ++r) {
    RingSlot slot{.gpu = r, .step = 0, .pairs = shards[size_t(r)].size() * p.batch * p.q_heads};
    if (shards[size_t(r)].size() > 0) {
      Problem sub = p;
      sub.kv_len = shards[size_t(r)].size();
      const Prediction pr = predict(make_schedule(sub, v, g), g, o);
      slot.compute_ms = pr.time_ms;
      m.hbm_bytes_per_gpu = std::max(m.hbm_bytes_per_gpu, pr.dram_bytes);
    }
    pairs_max = std::max(pairs_max, double(slot.pairs)), pairs_sum += double(slot.pairs);
    m.timeline.push_back(slot);
  }
  // Step 1: GPUs 1 … P − 1 send their partials to GPU 0 (over_link times the gather), which merges every non-empty
  // shard's partial in one pass (one launch, each partial read once, the result written once).
  int parts = 0;
  for (const cp::Span& s : shards) parts += s.size() > 0;
  const int64_t d = p.head_dim;
  const double merge = P > 1 ? merge_ms(g, p, 1, cp::merge_parts_bytes_per_row(d, parts), 1) : 0.0;
  for (int r = 0; r < P; ++r) {
    RingSlot slot{.gpu = r, .step = 1};
    if (r == 0) slot.compute_ms = merge;
    else slot.link_bytes = partial;
    m.timeline.push_back(slot);
  }
  m.imbalance = pairs_sum > 0 ? pairs_max / (pairs_sum / P) : 1.0;
  m.explain.push_back(fmt::format(
      "decode over {} GPUs: the cache split by tokens (shards aligned to {} tokens), each GPU's partial (O in FP16, "
      "the logsumexp) sent to GPU 0 ({:.0f} bytes each) and merged there in rank order",
      P, cp::kShardAlign, partial));
  return m;
}

}  // namespace

std::string links_missing(const GpuSpec& gpu) {
  return gpu.pcie_gbs_per_direction > 0
             ? ""
             : fmt::format("the spec of the {} has no links section: no multi-GPU model for it", gpu.name);
}

LinkRate link_of(const GpuSpec& g) {
  if (const std::string why = links_missing(g); !why.empty()) fail_input("gpu_model", why);
  const bool nvlink = g.nvlink_gbs_per_direction > 0;
  const double gbs = nvlink ? g.nvlink_gbs_per_direction : g.pcie_gbs_per_direction;
  return {nvlink ? "NVLink" : "PCIe", gbs * 1e9 * g.link_efficiency, g.link_latency_us * 1e-6};
}

MultiGpuPrediction over_link(MultiGpuPrediction m, Phase phase, const LinkRate& link) {
  const int P = m.gpus;
  if (P < 1) throw std::logic_error("over_link: no GPU");
  const size_t steps = m.timeline.size() / size_t(P);
  if (m.timeline.size() != steps * size_t(P) || (phase == Phase::decode && steps != 2))
    throw std::logic_error("over_link: a timeline that is not gpus × steps slots");
  auto slot = [&](size_t s, int r) -> RingSlot& { return m.timeline[s * size_t(P) + size_t(r)]; };
  auto slowest_of = [&](size_t s) {
    double t = 0;
    for (int r = 0; r < P; ++r) t = std::max(t, slot(s, r).compute_ms);
    return t;
  };
  m.link = link.name, m.link_gbs = link.bytes_per_s / 1e9;
  m.link_bytes = 0, m.link_bound_steps = 0;
  for (RingSlot& x : m.timeline) m.link_bytes += x.link_bytes, x.send_ms = x.recv_ms = x.idle_ms = 0;
  if (phase == Phase::decode) {
    // T = max_r C_r + latency + (P − 1) · partial bytes / link + merge (the header's decode line).
    const double slowest = slowest_of(0), merge = slot(1, 0).compute_ms;
    const double gather = P > 1 ? 1e3 * link.latency_s + 1e3 * m.link_bytes / link.bytes_per_s : 0.0;
    for (int r = 0; r < P; ++r) slot(0, r).idle_ms = slowest - slot(0, r).compute_ms;
    slot(1, 0).recv_ms = gather, slot(1, 0).idle_ms = gather;
    for (int r = 1; r < P; ++r) {
      RingSlot& x = slot(1, r);
      x.send_ms = transfer_ms(link, x.link_bytes);
      x.idle_ms = gather + merge - x.send_ms;
    }
    m.time_ms = slowest + gather + merge;
    m.terms = {{"gpu_attention", slowest}, {"link", gather}, {"gpu_merge", merge}};
    m.link_bound_steps = gather > slowest ? 1 : 0;  // the exchange, which no compute hides, outlasts the attention
  } else {
    // T_s = max(max over GPUs of C_{r,s}, X_s), T = Σ_s T_s (the header's prefill lines).
    double attention_ms = 0;
    m.time_ms = 0;
    for (size_t s = 0; s < steps; ++s) {
      const double slowest = slowest_of(s);
      double step_ms = slowest;
      for (int r = 0; r < P; ++r) {
        slot(s, r).send_ms = transfer_ms(link, slot(s, r).link_bytes);
        step_ms = std::max(step_ms, slot(s, r).send_ms);
      }
      for (int r = 0; r < P; ++r) {
        slot(s, r).recv_ms = slot(s, (r + P - 1) % P).send_ms;  // what GPU r − 1 sends, GPU r receives
        slot(s, r).idle_ms = step_ms - slot(s, r).compute_ms;
      }
      if (step_ms > slowest) ++m.link_bound_steps;
      m.time_ms += step_ms;
      attention_ms += slowest;
    }
    m.terms = {{"gpu_attention", attention_ms}, {"link", m.time_ms - attention_ms}};
  }
  m.scaling_efficiency = m.time_ms > 0 ? m.one_gpu_ms / (P * m.time_ms) : 0;
  m.bound = m.link_bound_steps > 0 ? "link" : "compute";
  return m;
}

MultiGpuPrediction predict_context_parallel(const Problem& p, const VariantRequest& v, const GpuSpec& gpu, int gpus,
                                            cp::Balance balance, const ModelOptions& o) {
  const LinkRate link = gpus > 1 ? link_of(gpu) : LinkRate{};  // one GPU sends nothing: no links needed
  MultiGpuPrediction m = p.phase == Phase::decode ? sharded_decode(p, v, gpu, gpus, o) : ring_prefill(p, v, gpu, gpus, balance, o);
  m.gpus = gpus;
  m.one_gpu_ms = predict(make_schedule(p, v, gpu), gpu, o).time_ms;
  m = over_link(std::move(m), p.phase, link);
  if (gpus > 1)
    m.explain.push_back(fmt::format("{} at {:.0f} GB/s per direction (the spec's rate × its efficiency), {:.0f} µs per "
                                    "transfer; one GPU {:.3f} ms, {} GPUs {:.3f} ms: scaling efficiency {:.2f}",
                                    m.link, m.link_gbs, gpu.link_latency_us, m.one_gpu_ms, gpus, m.time_ms,
                                    m.scaling_efficiency));
  return m;
}

LinkCrossover link_crossover(const Problem& p, const VariantRequest& v, const GpuSpec& gpu, int gpus,
                             cp::Balance balance, const ModelOptions& o) {
  LinkCrossover c;
  if (gpus < 2) return c;  // one GPU sends nothing
  auto at = [&](int64_t n) {
    Problem x = p;
    x.kv_len = n;
    if (x.phase == Phase::prefill) x.q_len = n;
    return predict_context_parallel(x, v, gpu, gpus, balance, o).link_bound_steps > 0;
  };
  const int64_t shortest = 2 * gpus * cp::kShardAlign;
  int64_t bound = 0, hidden = 0;  // the last link-bound length scanned, the first hidden one after it
  // Doubling from the shortest split, and the scan's end itself as the last length (2·P·128 · 2^k need not reach it).
  std::vector<int64_t> lengths;
  for (int64_t n = shortest; n < kCrossoverScanTokens; n *= 2) lengths.push_back(n);
  lengths.push_back(kCrossoverScanTokens);
  for (const int64_t n : lengths) {
    if (at(n)) bound = n;
    else if (bound > 0) {
      hidden = n;
      break;
    }
  }
  if (bound == 0) return c;
  if (hidden == 0) return {bound, true};
  while (hidden - bound > cp::kShardAlign) {  // bound is link-bound, hidden is not
    const int64_t mid = (bound + hidden) / 2 / cp::kShardAlign * cp::kShardAlign;
    if (mid <= bound) break;
    (at(mid) ? bound : hidden) = mid;
  }
  c.tokens = bound;
  return c;
}

}  // namespace attnlab::sim
