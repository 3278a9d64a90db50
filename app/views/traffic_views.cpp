// attnlab views: HBM traffic per tensor (reference accounting and model).
#include "app/views/traffic_views.h"

#include <fmt/format.h>

#include <set>

namespace attnlab::views {

namespace {

// Stacked bars: one per variant, one segment per tensor (the union of the variants' labels).
BarChart bytes_chart(const std::vector<std::pair<std::string, std::map<std::string, double>>>& rows) {
  BarChart c;
  c.y = {"HBM traffic", "bytes"};
  c.x_label = "variant";
  std::set<std::string> names;
  for (const auto& [label, bytes] : rows)
    for (const auto& [name, b] : bytes)
      if (name != "total") names.insert(name);
  c.stacks.assign(names.begin(), names.end());
  for (const auto& [label, bytes] : rows) {
    Bar bar{label, {}, false};
    for (const auto& name : c.stacks) bar.segments.push_back(bytes.count(name) ? bytes.at(name) : 0.0);
    c.bars.push_back(bar);
  }
  return c;
}

}  // namespace

std::vector<View> traffic_views(const Results& r) {
  std::vector<View> out;
  std::vector<std::pair<std::string, std::map<std::string, double>>> reference, model;
  for (const auto& v : r.variants) {
    if (v.reference && v.reference->probes.count("hbm_bytes")) {
      const ProbeArray& a = v.reference->probes.at("hbm_bytes");
      std::map<std::string, double> bytes;
      for (size_t i = 0; i < a.values.size() && i < a.labels.size(); ++i) bytes[a.labels[i]] = a.values[i];
      reference.emplace_back(v.label, bytes);
    }
    if (v.model) model.emplace_back(v.label, v.model->hbm_bytes);
  }
  if (!reference.empty())
    out.push_back({"hbm.reference", "HBM traffic", "HBM bytes per tensor (the reference's accounting)",
                   "What each schedule moves between HBM and the chip: the unfused naive passes write and re-read "
                   "S and P; the tiled ones read Q once and K/V once per row block.",
                   bytes_chart(reference)});
  if (!model.empty())
    out.push_back({"hbm.model", "HBM traffic", "HBM bytes per tensor (cost model, after L2 reuse)",
                   "The cost model's DRAM bytes: K/V re-reads of one head that L2 serves are not counted.",
                   bytes_chart(model)});
  return out;
}

}  // namespace attnlab::views
