#include "core/variants/shared_probes.h"

#include "core/parallel.h"
#include "core/quant/head_priority.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace attnlab::variants {

ProbeArray per_head(const Problem& p, int64_t heads, int64_t n, const std::vector<const std::vector<float>*>& rows,
                    std::string unit, std::string help) {
  if (static_cast<int64_t>(rows.size()) != p.batch * heads)
    throw std::logic_error(fmt::format("per_head: {} rows for {} (batch, head) pairs", rows.size(), p.batch * heads));
  ProbeArray a{{p.batch, heads, n}, {}, {}, std::move(unit), std::move(help)};
  a.values.reserve(static_cast<size_t>(p.batch * heads * n));
  for (const auto* r : rows) {
    if (static_cast<int64_t>(r->size()) != n)
      throw std::logic_error(fmt::format("per_head: a row of {} values where {} are declared", r->size(), n));
    a.values.insert(a.values.end(), r->begin(), r->end());
  }
  return a;
}

ProbeArray per_head(const Problem& p, int64_t heads, const std::vector<std::vector<float>>& rows, std::string help) {
  std::vector<const std::vector<float>*> ptrs;
  for (const auto& r : rows) ptrs.push_back(&r);
  const int64_t n = rows.empty() ? 0 : static_cast<int64_t>(rows[0].size());
  return per_head(p, heads, n, ptrs, "", std::move(help));
}

void add_key_channel_probes(Probes& probes, const Problem& p, const Tensor& k, const std::string& prefix,
                            const std::string& help) {
  const int64_t heads = p.batch * p.kv_heads;
  std::vector<quant::HeadRange> r(static_cast<size_t>(heads));
  parallel_for(heads, [&](int64_t bh) {
    r[bh] = quant::head_range(k.head(bh / p.kv_heads, bh % p.kv_heads).data(), p.kv_len, p.head_dim);
  });
  std::vector<const std::vector<float>*> lo, hi;
  for (const auto& x : r) lo.push_back(&x.channel_min), hi.push_back(&x.channel_max);
  probes[prefix + ".min"] = per_head(p, p.kv_heads, p.head_dim, lo, "", "minimum " + help);
  probes[prefix + ".max"] = per_head(p, p.kv_heads, p.head_dim, hi, "", "maximum " + help);
}

void add_channel_probes(Probes& probes, const Problem& p, const QKV& in) {
  const int64_t heads = p.batch * p.kv_heads;
  std::vector<quant::HeadRange> k(static_cast<size_t>(heads)), v(static_cast<size_t>(heads));
  parallel_for(heads, [&](int64_t bh) {
    const int64_t b = bh / p.kv_heads, h = bh % p.kv_heads;
    k[bh] = quant::head_range(in.k.head(b, h).data(), p.kv_len, p.head_dim);
    v[bh] = quant::head_range(in.v.head(b, h).data(), p.kv_len, p.head_dim);
  });
  const auto field = [&](const std::vector<quant::HeadRange>& r, bool max) {
    std::vector<const std::vector<float>*> rows;
    for (const auto& x : r) rows.push_back(max ? &x.channel_max : &x.channel_min);
    return rows;
  };
  const char* what = " of each channel over tokens, as the variant receives it (TurboAttention Fig. 4)";
  probes["channels.k.min"] = per_head(p, p.kv_heads, p.head_dim, field(k, false), "", fmt::format("K: minimum{}", what));
  probes["channels.k.max"] = per_head(p, p.kv_heads, p.head_dim, field(k, true), "", fmt::format("K: maximum{}", what));
  probes["channels.v.min"] = per_head(p, p.kv_heads, p.head_dim, field(v, false), "", fmt::format("V: minimum{}", what));
  probes["channels.v.max"] = per_head(p, p.kv_heads, p.head_dim, field(v, true), "", fmt::format("V: maximum{}", what));
}

void add_trace_probes(Probes& probes, const Problem& p, const ProbeRequest& req, const TraceProbes& t) {
  const int64_t steps = static_cast<int64_t>(t.kv_tile.size());
  const int64_t rows = std::min(t.block_r, p.q_len - t.trace_block * t.block_r);
  probes["trace.kv_tile"] = {{steps}, t.kv_tile, {}, "tile",
                             "index j of the K/V tile on chip at each step of the traced row block"};
  probes["trace.m"] = {{steps, rows}, t.m, {}, "logit", "running max m after each KV tile"};
  probes["trace.l"] = {{steps, rows}, t.l, {}, "", t.l_help};
  probes["trace.hbm_bytes"] = {{steps}, t.bytes, {}, "bytes", t.bytes_help};
  probes["trace.block"] = labelled({"batch", "head", "row_block", "first_row", "rows", "block_r", "block_c"},
                                   {double(req.batch), double(req.head), double(t.trace_block),
                                    double(t.trace_block * t.block_r), double(rows), double(t.block_r),
                                    double(t.block_c)},
                                   "", "which row block the trace follows and the tile sizes");
}

void add_lse_probe(Probes& probes, const Problem& p, const Tensor& lse, std::string help) {
  probes["lse"] = {{p.batch, p.q_heads, p.q_len}, std::vector<double>(lse.values().begin(), lse.values().end()), {},
                   "logit", std::move(help)};
}

}  // namespace attnlab::variants
