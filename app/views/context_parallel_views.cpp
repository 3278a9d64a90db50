#include "app/views/context_parallel_views.h"

#include <fmt/format.h>

namespace attnlab::views {

namespace {

// The variants whose model ran across GPUs, with their details.
std::vector<std::pair<const VariantResult*, const nlohmann::json*>> split_runs(const Results& r) {
  std::vector<std::pair<const VariantResult*, const nlohmann::json*>> out;
  for (const auto& v : r.variants)
    if (v.model && v.model->details.contains("context_parallel") && v.model->details["context_parallel"].is_object())
      out.emplace_back(&v, &v.model->details["context_parallel"]);
  return out;
}

// One bar per (variant, step, GPU): its attention and merges, then the time it waits in the step — for the slowest
// GPU of the step, or for the shard it receives — so each step's bars stand equally tall; what it sends during the
// step beside them (the link works under the compute).
View timeline_view(const std::vector<std::pair<const VariantResult*, const nlohmann::json*>>& runs) {
  BarChart c;
  c.y = {"time", "ms"};
  c.x_label = "variant · ring step · GPU";
  c.stacks = {"attention and merge", "waiting (slowest GPU or shard)", "sending its shard (under the rest)"};
  c.grouped = false;
  for (const auto& [v, cp] : runs)
    for (const auto& slot : (*cp)["timeline"]) {
      const double send = slot.value("send_ms", 0.0);
      c.bars.push_back({fmt::format("{} · step {} · GPU {}", v->label, slot.value("step", 0), slot.value("gpu", 0)),
                        {slot.value("compute_ms", 0.0), slot.value("idle_ms", 0.0), send > 0 ? send : kNone},
                        false});
    }
  const nlohmann::json& first = *runs.front().second;
  const std::string note = fmt::format(
      "Context parallelism on {} GPUs over {} ({:.0f} GB/s per direction): at each ring step every GPU attends the K/V "
      "shard in hand and merges the partial result into its own, while it sends that shard on to the next GPU; a step "
      "lasts as long as its slowest GPU or its transfer. The third segment is the send, which runs under the first "
      "two: where it is taller than they are, the link binds that step. Decode has two steps: each GPU's shard of "
      "the cache, then the partials to GPU 0 and its merge.",
      first.value("gpus", 0), first.value("link", std::string()), first.value("link_gbs", 0.0));
  return {"cp_timeline", "HBM traffic", "Across GPUs: each GPU's ring steps (the cost model)", note, c};
}

// Grouped per variant: the bytes on every link over the whole run, and the DRAM bytes of the busiest GPU.
View bytes_view(const std::vector<std::pair<const VariantResult*, const nlohmann::json*>>& runs) {
  BarChart c;
  c.y = {"bytes", "bytes"};
  c.x_label = "variant";
  c.grouped = true;
  c.stacks = {"on the links (all GPUs)", "HBM, busiest GPU"};
  for (const auto& [v, cp] : runs)
    c.bars.push_back({v->label, {cp->value("link_bytes", 0.0), cp->value("hbm_bytes_per_gpu", 0.0)}, false});
  const std::string note =
      "What crosses the links is K and V as each variant stores them (FP16, INT8 tiles with their scales, FP8, the "
      "INT4 and TurboAttention caches), so a compressed format divides the link bytes as it divides the HBM bytes; "
      "beside them, the DRAM bytes of the busiest GPU.";
  return {"cp_bytes", "HBM traffic", "Across GPUs: bytes on the links beside HBM bytes (the cost model)", note, c};
}

}  // namespace

std::vector<View> context_parallel_views(const Results& r) {
  const auto runs = split_runs(r);
  if (runs.empty()) return {};
  return {timeline_view(runs), bytes_view(runs)};
}

}  // namespace attnlab::views
