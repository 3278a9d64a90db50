#include "core/data/attention_stats.h"

#include "core/parallel.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace attnlab::data {

RowStatistics row_statistics(const Problem& p, const QKV& in, int64_t b, int64_t h, int64_t row, int64_t visible) {
  const int64_t dim = p.head_dim;
  const float* q = in.q.data() + in.q.offset(b, h) + row * dim;
  const float* k = in.k.data() + in.k.offset(b, p.kv_head_of(h));
  const double scale = 1.0 / std::sqrt(double(dim));
  std::vector<double> s(static_cast<size_t>(visible));
  for (int64_t n = 0; n < visible; ++n) {
    double dot = 0.0;
    for (int64_t c = 0; c < dim; ++c) dot += double(q[c]) * double(k[n * dim + c]);
    s[n] = dot * scale;
  }
  const auto [lo, hi] = std::minmax_element(s.begin(), s.end());
  const double max_logit = *hi, min_logit = *lo;
  double sum = 0.0;
  for (double& x : s) sum += (x = std::exp(x - max_logit));  // unnormalized p
  RowStatistics r;
  r.logit_range = max_logit - min_logit;
  double entropy = 0.0;
  for (int64_t n = 0; n < visible; ++n) {
    const double pn = s[n] / sum;
    if (pn > 0.0) entropy -= pn * std::log(pn);
    if (n >= visible - kRecentWindow) r.recent_mass += pn;
  }
  r.sink_share = s[0] / sum;
  r.entropy = visible > 1 ? entropy / std::log(double(visible)) : 0.0;
  return r;
}

Probes attention_statistics(const Problem& p, const QKV& in) {
  Probes probes;
  if (p.q_len <= 0 || p.kv_len <= 0 || p.batch <= 0 || p.q_heads <= 0) return probes;
  const int64_t heads = p.batch * p.q_heads;
  std::vector<RowStatistics> rows(static_cast<size_t>(heads));
  // The last query sits at position kv_len − 1 (core/data/generators.h), so it sees every key, causal or not.
  parallel_for(heads, [&](int64_t bh) {
    rows[bh] = row_statistics(p, in, bh / p.q_heads, bh % p.q_heads, p.q_len - 1, p.kv_len);
  });
  auto add = [&](const std::string& name, double RowStatistics::*field, std::string unit, std::string help) {
    ProbeArray a;
    a.shape = {p.batch, p.q_heads};
    std::vector<double> v;
    for (const RowStatistics& r : rows) v.push_back(r.*field);
    a.values = ProbeValues(std::move(v));
    a.unit = std::move(unit);
    a.help = std::move(help);
    probes[name] = std::move(a);
  };
  add("attn.entropy", &RowStatistics::entropy, "of ln(keys)",
      "attention entropy of each head's last query row over ln(keys): 1 uniform, 0 one key");
  add("attn.sink_share", &RowStatistics::sink_share, "share",
      "attention of each head's last query row on the first key (a sink head: over 0.3, Gu et al. 2025)");
  add("attn.recent_mass", &RowStatistics::recent_mass, "share",
      "attention of each head's last query row within its last 64 keys");
  add("attn.logit_range", &RowStatistics::logit_range, "logit",
      "max - min of each head's last query row of q.k/sqrt(d)");
  return probes;
}

}  // namespace attnlab::data
