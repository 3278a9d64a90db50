#include "app/views/context_parallel_views.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>

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

// The kernels' traced ring of a variant (kernels/context_parallel/ring_backend.cpp's probe: [step, GPU, (compute,
// idle, exchange)] ms), or null.
const ProbeArray* measured_timeline(const VariantResult& v) {
  if (!v.kernel) return nullptr;
  const auto it = v.kernel->probes.find("kernel.context_parallel.timeline");
  if (it == v.kernel->probes.end() || it->second.shape.size() != 3 || it->second.shape[2] != 3) return nullptr;
  const std::vector<int64_t>& shape = it->second.shape;
  if (shape[0] < 1 || shape[1] < 1 || it->second.values.size() != size_t(shape[0] * shape[1] * 3)) return nullptr;
  return &it->second;
}

// A bar of the timeline: attention and merges, the wait for the step's end, the exchange beside them (none: no bar).
Bar slot_bar(std::string label, double compute, double idle, double exchange) {
  return {std::move(label), {compute, idle, exchange > 0 ? exchange : kNone}, false};
}

// One bar per (variant, step, GPU): its attention and merges, then the time it waits in the step — for the slowest
// GPU of the step, or for the shard it receives — so each step's bars stand equally tall; what it sends during the
// step beside them (the link works under the compute). Where the kernels ran the ring too, the traced run's bar
// ("measured") stands beside the model's ("model") for every slot.
View timeline_view(const Results& r) {
  BarChart c;
  c.y = {"time", "ms"};
  c.x_label = "variant · ring step · GPU";
  c.stacks = {"attention and merge", "waiting (slowest GPU or shard)", "sending its shard (under the rest)"};
  c.grouped = false;
  const nlohmann::json* first_model = nullptr;
  int measured_gpus = 0;
  for (const VariantResult& v : r.variants) {
    const nlohmann::json* model = nullptr;
    if (v.model && v.model->details.contains("context_parallel") && v.model->details["context_parallel"].is_object())
      model = &v.model->details["context_parallel"];
    const ProbeArray* measured = measured_timeline(v);
    if (!model && !measured) continue;
    if (model && !first_model) first_model = model;
    std::map<std::pair<int, int>, Bar> measured_bars;  // (step, GPU)
    if (measured) {
      const int64_t steps = measured->shape[0], gpus = measured->shape[1];
      measured_gpus = int(gpus);
      for (int64_t s = 0; s < steps; ++s)
        for (int64_t g = 0; g < gpus; ++g) {
          const size_t at = size_t((s * gpus + g) * 3);
          measured_bars[{int(s), int(g)}] =
              slot_bar(fmt::format("{} · step {} · GPU {}{}", v.label, s, g, model ? " · measured" : ""),
                       measured->values[at], measured->values[at + 1], measured->values[at + 2]);
        }
    }
    if (!model) {
      for (auto& [_, bar] : measured_bars) c.bars.push_back(std::move(bar));
      continue;
    }
    for (const auto& slot : (*model)["timeline"]) {
      const int step = slot.value("step", 0), gpu = slot.value("gpu", 0);
      c.bars.push_back(slot_bar(fmt::format("{} · step {} · GPU {}{}", v.label, step, gpu, measured ? " · model" : ""),
                                slot.value("compute_ms", 0.0), slot.value("idle_ms", 0.0), slot.value("send_ms", 0.0)));
      if (const auto it = measured_bars.find({step, gpu}); it != measured_bars.end()) c.bars.push_back(it->second);
    }
  }
  std::string note =
      first_model ? fmt::format("Context parallelism on {} GPUs over {} ({:.0f} GB/s per direction): ",
                                first_model->value("gpus", 0), first_model->value("link", std::string()),
                                first_model->value("link_gbs", 0.0))
                  : fmt::format("Context parallelism on {} GPUs: ", measured_gpus);
  note +=
      "at each ring step every GPU attends the K/V shard in hand and merges the partial result into its own, while it "
      "sends that shard on to the next GPU; a step lasts as long as its slowest GPU or its transfer. The third segment "
      "is the send, which runs under the first two: where it is taller than they are, the link binds that step. "
      "Decode has two steps: each GPU's shard of the cache, then the partials to GPU 0 and its merge.";
  std::string title = "Across GPUs: each GPU's ring steps (the cost model)";
  if (measured_gpus > 0) {
    note +=
        " The measured bars are one traced run of the kernels' ring after the timed ones (CUDA events on each GPU's "
        "streams); their third segment is the step's exchange — NCCL sends the shard and receives the next in one "
        "group, so the two finish together.";
    title = first_model ? "Across GPUs: each GPU's ring steps, the cost model beside the measurement"
                        : "Across GPUs: each GPU's ring steps (measured)";
  }
  return {"cp_timeline", "HBM traffic", title, note, c};
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

// Per variant: its link and bytes on it (beside FP16's, where flash2 ran too), whether this N waits on the link, and
// the model's crossover — the longest N at which a step still waits for its shard (sim/context_parallel_model.h
// link_crossover): where the links bind, and so where a compressed format pays on the wire.
View links_view(const std::vector<std::pair<const VariantResult*, const nlohmann::json*>>& runs) {
  Table t;
  t.title = "Across GPUs: where the links bind (the cost model)";
  t.columns = {{"variant", "variant", ""},
               {"link", "link", ""},
               {"link_gbs", "per direction", "GB/s"},
               {"link_bytes", "on the links, one run", "bytes"},
               {"link_bytes_over_fp16", "× FP16's", ""},
               {"link_bound_steps", "steps waiting on the link", ""},
               {"link_bound_up_to_tokens", "the links bind at N ≤", "tokens"},
               {"scaling_efficiency", "scaling efficiency", ""}};
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();  // a double default: json::value returns its type
  double fp16 = kNaN;
  for (const auto& [v, cp] : runs)
    if (v->id == "flash2") fp16 = cp->value("link_bytes", kNaN);
  auto text = [](const std::string& s) { return Cell{s, NAN}; };
  for (const auto& [v, cp] : runs) {
    const double bytes = cp->value("link_bytes", 0.0);
    const int64_t up_to = cp->value("link_bound_up_to_tokens", int64_t{0});
    Cell crossover = up_to > 0 ? number_cell(double(up_to), "{:.0f}") : text("never");
    if (cp->value("link_bound_whole_scan", false))
      crossover = text(fmt::format("every N to {}", cp->value("link_crossover_scanned_to", int64_t{0})));
    t.rows.push_back({text(v->label), text(cp->value("link", std::string())), number_cell(cp->value("link_gbs", kNaN), "{:.0f}"),
                      number_cell(bytes, "{:.3e}"), number_cell(bytes / fp16, "{:.2f}"),
                      number_cell(cp->value("link_bound_steps", 0), "{:.0f}"), crossover,
                      number_cell(cp->value("scaling_efficiency", kNaN), "{:.3f}")});
  }
  t.legend =
      "A ring step's transfer grows with N, its attention with N²: below the crossover a step waits for its shard, "
      "above it the transfer hides under the attention. A format with fewer bytes on the wire moves the crossover down "
      "— compression pays on the links only below FP16's crossover (and in HBM at every N). \"never\": no length from "
      "the shortest split (2 · GPUs · 128 tokens) to the longest the model scans waits on the link.";
  return {"cp_links", "HBM traffic", t.title, t.legend, t};
}

}  // namespace

std::vector<View> context_parallel_views(const Results& r) {
  std::vector<View> out;
  const auto runs = split_runs(r);
  const bool measured = std::any_of(r.variants.begin(), r.variants.end(),
                                    [](const VariantResult& v) { return measured_timeline(v) != nullptr; });
  if (!runs.empty() || measured) out.push_back(timeline_view(r));
  if (!runs.empty()) out.push_back(bytes_view(runs)), out.push_back(links_view(runs));
  return out;
}

}  // namespace attnlab::views
