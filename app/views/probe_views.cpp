// attnlab views: the charts built from the references' (and the kernels') probes — block scales, channel
// outliers, head priorities, SAS, and the online-softmax trace of one row block.
#include "app/views/probe_views.h"

#include "app/views/declared.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace attnlab::views {

namespace {

const ProbeArray* probe(const Probes& probes, const std::string& name) {
  const auto it = probes.find(name);
  return it == probes.end() ? nullptr : &it->second;
}

// A [B, H, n...] probe as a heads × columns heatmap (trailing axes flattened), binned to ≤ max_cols
// columns by the largest value in each bin: a scale heatmap's story is its outliers.
Heatmap per_head_heatmap(const ProbeArray& a, int64_t max_cols) {
  Heatmap h;
  const int64_t batch = a.shape.at(0), heads = a.shape.at(1);
  const int64_t n = static_cast<int64_t>(a.values.size()) / (batch * heads);
  h.col_bin = std::max<int64_t>(1, (n + max_cols - 1) / max_cols);
  h.cols = (n + h.col_bin - 1) / h.col_bin;
  h.rows = batch * heads;
  h.values.assign(size_t(h.rows * h.cols), -INFINITY);
  for (int64_t r = 0; r < h.rows; ++r) {
    h.row_names.push_back(fmt::format("b{} h{}", r / heads, r % heads));
    for (int64_t c = 0; c < n; ++c) {
      double& cell = h.values[size_t(r * h.cols + c / h.col_bin)];
      cell = std::max(cell, a.values[size_t(r * n + c)]);
    }
  }
  if (h.col_bin > 1) h.bin_rule = fmt::format("each cell is the largest of {} columns", h.col_bin);
  h.value_label = "scale";
  h.value_unit = a.unit;
  return h;
}

std::string column_kind(const Results& r, int64_t n, const std::string& tensor) {
  const int64_t len = tensor == "q" ? r.problem.value("q_len", int64_t(0)) : r.problem.value("kv_len", int64_t(0));
  return n == len ? "token" : "block";
}

void scale_views(const Results& r, const VariantResult& v, int64_t max_cols, std::vector<View>& out) {
  struct Source {
    const char* backend;
    const Probes* probes;
  };
  std::vector<Source> sources;
  if (v.reference) sources.push_back({"reference", &v.reference->probes});
  if (v.kernel) sources.push_back({"kernel", &v.kernel->probes});
  for (const auto& [backend, probes] : sources)
    for (const std::string t : {"q", "k", "v", "p"}) {
      const ProbeArray* a = probe(*probes, "scales." + t);
      if (!a || a->shape.size() < 3) continue;
      Heatmap h = per_head_heatmap(*a, max_cols);
      const int64_t n = h.cols * h.col_bin;
      h.x = {t == "p" ? "tile (row block, KV block), row-major" : column_kind(r, n, t), ""};
      h.y = {"batch, head", ""};
      std::string upper = t;
      upper[0] = char(std::toupper(upper[0]));
      out.push_back({fmt::format("scales.{}.{}.{}", t, v.label, backend), "Block scales",
                     fmt::format("{}: {} scales ({})", v.label, upper, backend),
                     a->help + (h.bin_rule.empty() ? "" : "; " + h.bin_rule) +
                         ". Bright cells are the blocks an outlier forces to a coarse grid.",
                     h});
    }
}

// Channel min/max of K and V for one (batch, KV head) (TurboAttention Fig. 4), and |K| per head × channel.
void channel_views(const VariantResult& v, bool first, int64_t head, std::vector<View>& out) {
  if (!v.reference) return;
  const Probes& p = v.reference->probes;
  struct Pair {
    const char* prefix;
    const char* name;
  };
  const std::vector<Pair> pairs = first ? std::vector<Pair>{{"channels.k", "K"}, {"channels.v", "V"},
                                                             {"channels.k_pre_rope", "K before RoPE"}}
                                        : std::vector<Pair>{{"channels.k_smoothed", "K smoothed"}};
  LineChart chart;
  chart.x = {"channel", ""};
  chart.y = {"value (min and max over tokens)", ""};
  const ProbeArray* k_max = nullptr;
  const ProbeArray* k_min = nullptr;
  for (const auto& [prefix, name] : pairs) {
    const ProbeArray* lo = probe(p, std::string(prefix) + ".min");
    const ProbeArray* hi = probe(p, std::string(prefix) + ".max");
    if (!lo || !hi || lo->shape.size() != 3) continue;
    if (!k_max) k_max = hi, k_min = lo;
    const int64_t d = lo->shape[2], at = std::clamp<int64_t>(head, 0, lo->shape[0] * lo->shape[1] - 1) * d;
    Series smax{fmt::format("{} max", name), {}, {}}, smin{fmt::format("{} min", name), {}, {}};
    for (int64_t c = 0; c < d; ++c) {
      smax.x.push_back(double(c)), smax.y.push_back(hi->values[size_t(at + c)]);
      smin.x.push_back(double(c)), smin.y.push_back(lo->values[size_t(at + c)]);
    }
    chart.series.push_back(smax);
    chart.series.push_back(smin);
  }
  if (chart.series.empty()) return;
  const std::string id = first ? "channels" : "channels.smoothed." + v.label;
  const int64_t kv_heads = k_max->shape[1], shown = std::clamp<int64_t>(head, 0, k_max->shape[0] * kv_heads - 1);
  const std::string which = fmt::format("batch {}, KV head {}", shown / kv_heads, shown % kv_heads);
  out.push_back({id, "Channel outliers",
                 first ? fmt::format("K and V channel ranges ({})", which)
                       : fmt::format("{}: K channel ranges after smoothing ({})", v.label, which),
                 first ? "Per-channel min and max over tokens of the attention inputs, as TurboAttention Fig. 4 "
                         "plots them: a few key channels reach far beyond the rest, which is what per-token "
                         "INT8/INT4 scales pay for. Where the data applies RoPE, K before it is drawn too: the "
                         "rotation mixes each outlier channel with its pair partner, spreading it over two."
                       : "FireQ's RPN/CRS smoothing divides the outlier channels down before quantization.",
                 chart});
  if (!first || !k_max) return;
  Heatmap h;
  h.rows = k_max->shape[0] * k_max->shape[1];
  h.cols = k_max->shape[2];
  h.x = {"channel", ""};
  h.y = {"batch, KV head", ""};
  h.value_label = "max |K| over tokens";
  for (int64_t r = 0; r < h.rows; ++r) {
    h.row_names.push_back(fmt::format("b{} h{}", r / k_max->shape[1], r % k_max->shape[1]));
    for (int64_t c = 0; c < h.cols; ++c) {
      const size_t i = size_t(r * h.cols + c);
      h.values.push_back(std::max(std::abs(k_max->values[i]), std::abs(k_min->values[i])));
    }
  }
  out.push_back({"channels.k.abs", "Channel outliers", "max |K| per KV head and channel",
                 "Outlier channels show as bright columns: the same few channels in every head.", h});
}

// TurboAttention §3.3: the KV heads ranked by the chosen priority metric, the 2-bit ones marked, and
// all four metrics side by side.
void priority_views(const VariantResult& v, std::vector<View>& out) {
  if (!v.reference) return;
  const Probes& p = v.reference->probes;
  const ProbeArray* bits = probe(p, "kv_bits");
  if (!bits) return;
  const nlohmann::json metric_param = declared_param(v, "priority"), lo_param = declared_param(v, "bits_lo");
  if (!metric_param.is_string() || !lo_param.is_number()) return;
  const std::string metric = metric_param.get<std::string>();
  const ProbeArray* chosen = probe(p, "priority." + metric);
  if (!chosen) return;
  const int64_t heads = bits->shape.at(1), n = static_cast<int64_t>(bits->values.size());
  const double lo = lo_param.get<double>();
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return chosen->values[size_t(a)] > chosen->values[size_t(b)]; });
  BarChart chart;
  chart.y = {fmt::format("priority ({})", metric), ""};
  chart.x_label = "KV head, highest priority first";
  chart.stacks = {metric};
  chart.mark_meaning = fmt::format("stored at {} bits", int(lo));
  for (int64_t i : order)
    chart.bars.push_back({fmt::format("b{} h{}", i / heads, i % heads), {chosen->values[size_t(i)]},
                          bits->values[size_t(i)] == lo});
  out.push_back({"priority." + v.label, "Head priority", fmt::format("{}: KV heads by {}", v.label, metric),
                 "Eq. 11–12: the lowest-priority heads get the 2-bit cache; TurboAttention Fig. 7b compares the "
                 "metrics by the error they leave.",
                 chart});
  Table t;
  t.title = fmt::format("{}: all priority metrics per KV head", v.label);
  t.columns = {{"head", "KV head", ""}, {"bits", "bits", "bits"}};
  const std::vector<std::string> metrics = {"gap_std", "entropy", "min_max", "variation"};
  for (const auto& m : metrics) t.columns.push_back({m, m, ""});
  for (int64_t i = 0; i < n; ++i) {
    std::vector<Cell> row = {{fmt::format("b{} h{}", i / heads, i % heads), NAN},
                             {fmt::format("{}", bits->values[size_t(i)]), bits->values[size_t(i)]}};
    for (const auto& m : metrics) {
      const ProbeArray* a = probe(p, "priority." + m);
      const double x = a ? a->values[size_t(i)] : NAN;
      row.push_back(a ? number_cell(x, "{:.4g}") : Cell{"", NAN});
    }
    t.rows.push_back(row);
  }
  out.push_back({"priority.metrics." + v.label, "Head priority", t.title,
                 "The four metrics of the paper's Fig. 7b, beside the bits each head got.", t});
}

// SAS (TurboAttention §3.2): e^t and its polynomial stand-in over [n_r, 0], and their difference.
void sas_views(const VariantResult& v, std::vector<View>& out) {
  if (!v.reference) return;
  const Probes& p = v.reference->probes;
  const ProbeArray* t = probe(p, "sas.curve.t");
  const ProbeArray* e = probe(p, "sas.curve.exp");
  const ProbeArray* s = probe(p, "sas.curve.sas");
  if (!t || !e || !s) return;
  LineChart curve;
  curve.x = {"t = S − m", ""};
  curve.y = {"weight", ""};
  curve.series = {{"exp(t)", t->values, e->values}, {"SAS(t)", t->values, s->values}};
  out.push_back({"sas.curve." + v.label, "SAS", fmt::format("{}: exp vs SAS", v.label),
                 "Below the threshold n_r SAS returns 0; above it, 2^integer part from a table times a "
                 "polynomial of the fraction.",
                 curve});
  LineChart err;
  err.x = curve.x;
  err.y = {"SAS(t) − exp(t)", ""};
  Series d{"difference", t->values, {}};
  for (size_t i = 0; i < e->values.size(); ++i) d.y.push_back(s->values[i] - e->values[i]);
  err.series = {d};
  out.push_back({"sas.error." + v.label, "SAS", fmt::format("{}: SAS error", v.label),
                 "The step at n_r is the truncation; the ripple beyond it is the polynomial's error.", err});
}

// The share of visible scores whose weight is exactly 0, one bar per variant that records it: SAS zeroes
// everything below n_r on purpose, exact exp only what underflows — the sparsity SAS buys (§4).
void zeroed_view(const Results& r, std::vector<View>& out) {
  BarChart c;
  c.y = {"visible scores with P̃ = 0", "%"};
  c.x_label = "variant (n_r)";
  c.stacks = {"zeroed"};
  for (const auto& v : r.variants) {
    if (!v.reference || !v.reference->probes.count("sas.zeroed_fraction")) continue;
    const ProbeArray& a = v.reference->probes.at("sas.zeroed_fraction");
    const nlohmann::json exact = declared_param(v, "exact_exp"), n_r = declared_param(v, "n_r");
    const std::string setting = exact.is_boolean() && exact.get<bool>() ? "exact exp" : n_r.is_null() ? "n_r ?" : n_r.dump();
    c.bars.push_back({fmt::format("{} ({})", v.label, setting), {100.0 * a.values.at(2)}, false});
  }
  if (c.bars.empty()) return;
  out.push_back({"sas.zeroed", "SAS", "Scores SAS sets to zero",
                 "Eq. 14: SAS keeps only scores within n_r of the row max; lowering n_r keeps more and costs more "
                 "polynomial work (configs/papers/turbo-sas-threshold.json sweeps it).",
                 c});
}

// The online-softmax trace of the traced row block: running max and sum of three rows, bytes so far.
void trace_views(const VariantResult& v, std::vector<View>& out) {
  if (!v.reference) return;
  const Probes& p = v.reference->probes;
  const ProbeArray* m = probe(p, "trace.m");
  const ProbeArray* l = probe(p, "trace.l");
  const ProbeArray* bytes = probe(p, "trace.hbm_bytes");
  if (!m || !l || !bytes || m->shape.size() != 2 || m->shape[0] == 0) return;
  const int64_t steps = m->shape[0], rows = m->shape[1];
  auto rows_chart = [&](const ProbeArray& a, const std::string& label) {
    LineChart c;
    c.x = {"KV tile step", ""};
    c.y = {label, a.unit};
    for (int64_t row : {int64_t(0), rows / 2, rows - 1}) {
      Series s{fmt::format("row {}", row), {}, {}};
      for (int64_t j = 0; j < steps; ++j) s.x.push_back(double(j)), s.y.push_back(a.values[size_t(j * rows + row)]);
      c.series.push_back(s);
    }
    return c;
  };
  out.push_back({"trace.m." + v.label, "Tile stepper", fmt::format("{}: running max m after each KV tile", v.label),
                 "App. D: m only grows; each increase rescales ℓ and O by e^{m_old − m_new}.",
                 rows_chart(*m, "running max m")});
  out.push_back({"trace.l." + v.label, "Tile stepper", fmt::format("{}: running sum ℓ after each KV tile", v.label),
                 l->help, rows_chart(*l, "running sum ℓ")});
  LineChart b;
  b.x = {"KV tile step", ""};
  b.y = {"bytes loaded so far", "bytes"};
  Series s{"HBM bytes", {}, {}};
  for (int64_t j = 0; j < int64_t(bytes->values.size()); ++j) s.x.push_back(double(j)), s.y.push_back(bytes->values[size_t(j)]);
  b.series = {s};
  out.push_back({"trace.bytes." + v.label, "Tile stepper", fmt::format("{}: HBM bytes of the traced CTA", v.label),
                 bytes->help, b});
}

}  // namespace

std::vector<View> probe_views(const Results& r, int64_t max_heatmap_cols, int64_t channel_head) {
  std::vector<View> scales, channels, priority, sas, trace;
  bool have_channels = false;
  // The views of one variant's data name it (View::variants), so that identical ones can be drawn once.
  auto of_variant = [](const VariantResult& v, std::vector<View>& group, size_t from) {
    for (size_t i = from; i < group.size(); ++i) group[i].variants = {v.label};
  };
  for (const auto& v : r.variants) {
    const size_t n_scales = scales.size(), n_priority = priority.size(), n_sas = sas.size(), n_trace = trace.size();
    scale_views(r, v, max_heatmap_cols, scales);
    if (!have_channels && v.reference && v.reference->probes.count("channels.k.max")) {
      channel_views(v, true, channel_head, channels);  // the input's channels, not this variant's: no name
      have_channels = true;
    }
    if (v.reference && v.reference->probes.count("channels.k_smoothed.max")) {
      const size_t n_channels = channels.size();
      channel_views(v, false, channel_head, channels);
      of_variant(v, channels, n_channels);
    }
    priority_views(v, priority);
    sas_views(v, sas);
    trace_views(v, trace);
    of_variant(v, scales, n_scales), of_variant(v, priority, n_priority), of_variant(v, sas, n_sas),
        of_variant(v, trace, n_trace);
  }
  zeroed_view(r, sas);
  std::vector<View> out;
  for (auto* group : {&scales, &channels, &priority, &sas, &trace})
    out.insert(out.end(), std::make_move_iterator(group->begin()), std::make_move_iterator(group->end()));
  return out;
}

}  // namespace attnlab::views
