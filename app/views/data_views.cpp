// attnlab views: the Data panel — attention statistics per head, and the one line naming the data.
#include "app/views/data_views.h"

#include "core/data/attention_stats.h"
#include "core/error.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

namespace attnlab::views {

namespace {

const ProbeArray* find(const Probes& p, const std::string& name) {
  const auto it = p.find(name);
  return it == p.end() ? nullptr : &it->second;
}

// What the papers measured on real models, where one gives a number to hold a statistic against.
const std::map<std::string, std::string> kPublished = {
    {"attn.sink_share",
     "most heads beyond the first two layers put most attention on the first token (StreamingLLM Fig. 2); "
     "a sink head: over 0.3 (Gu et al. 2025)"},
    {"attn.recent_mass", "streaming heads attend to the sinks and the recent tokens (DuoAttention)"},
};

}  // namespace

std::vector<View> data_views(const Results& r) {
  std::vector<View> out;
  const Probes& p = r.data_probes;
  const ProbeArray *sink = find(p, "attn.sink_share"), *recent = find(p, "attn.recent_mass"),
                   *entropy = find(p, "attn.entropy"), *range = find(p, "attn.logit_range");
  if (!sink || !recent || !entropy || !range || sink->shape.size() != 2) return out;
  const int64_t heads = sink->shape[1], n = int64_t(sink->values.size());

  BarChart chart;
  chart.y = {"share of the last query's attention", ""};
  chart.x_label = "query head";
  chart.stacks = {"first key (sink)", "last 64 keys", "entropy / ln(keys)"};
  chart.grouped = true;
  chart.mark_meaning = fmt::format("sink head: over {} of the attention on the first key (Gu et al. 2025)",
                                   data::kSinkHeadThreshold);
  for (int64_t i = 0; i < n; ++i)
    chart.bars.push_back({fmt::format("b{} h{}", i / heads, i % heads),
                          {sink->values[size_t(i)], recent->values[size_t(i)], entropy->values[size_t(i)]},
                          sink->values[size_t(i)] > data::kSinkHeadThreshold});
  out.push_back({"data.attention", "Data", "What the data does to attention, per head",
                 "The last query row of every head (decode's query; under a causal mask the one that sees every "
                 "key). Real models: most heads are sink heads, some local, a few diffuse (StreamingLLM Fig. 2, "
                 "DuoAttention). A quantizer's error follows what a head attends to.",
                 chart});

  Table t;
  t.title = "Attention statistics across heads, beside real models";
  t.columns = {{"statistic", "statistic", ""}, {"unit", "unit", ""}, {"min", "min", ""}, {"median", "median", ""},
               {"max", "max", ""}, {"published", "real models (source)", ""}};
  for (const char* name : {"attn.sink_share", "attn.recent_mass", "attn.entropy", "attn.logit_range"}) {
    const ProbeArray* a = find(p, name);
    std::vector<double> v(a->values.begin(), a->values.end());
    std::sort(v.begin(), v.end());
    const auto pub = kPublished.find(name);
    t.rows.push_back({{name, NAN}, {a->unit, NAN}, number_cell(v.front(), "{:.3g}"), number_cell(v[v.size() / 2], "{:.3g}"),
                      number_cell(v.back(), "{:.3g}"), {pub == kPublished.end() ? "-" : pub->second, NAN}});
  }
  out.push_back({"data.attention.summary", "Data", t.title, "Each statistic's help: core/data/attention_stats.h.", t});
  return out;
}

namespace {

std::string named_data(const Results& r, bool with_parameters) {
  const nlohmann::json data = r.config.value("data", nlohmann::json::object());
  if (data.contains("file")) return fmt::format("data from {}", echo_path(data["file"].is_string() ? data["file"].get<std::string>() : data["file"].dump()));
  if (!data.contains("generator")) return "";
  std::vector<std::string> params;
  for (const auto& [k, v] : data.items())
    if (with_parameters && k != "generator" && k != "seed") params.push_back(fmt::format("{} {}", k, v.dump()));
  return fmt::format("synthetic data: {} (seed {}{}{})", data["generator"].get<std::string>(), data.value("seed", 0),
                     params.empty() ? "" : "; ", fmt::join(params, ", "));
}

}  // namespace

// A model-only run made none of that data: the line says so (Environment::data_note).
std::string data_line(const Results& r, bool with_parameters) {
  const std::string named = named_data(r, with_parameters);
  if (named.empty() || r.environment.data_note.empty()) return named;
  return named + " — " + r.environment.data_note;
}

}  // namespace attnlab::views
