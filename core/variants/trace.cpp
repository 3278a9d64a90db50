#include "core/variants/trace.h"

#include <algorithm>

namespace attnlab::variants {

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
