#include "app/views/stepper.h"

#include <algorithm>

namespace attnlab::views {

namespace {

const ProbeArray* probe(const VariantResult& v, const std::string& name) {
  if (!v.reference) return nullptr;
  const auto it = v.reference->probes.find(name);
  return it == v.reference->probes.end() ? nullptr : &it->second;
}

bool has_trace(const VariantResult& v) {
  return probe(v, "trace.m") && probe(v, "trace.l") && probe(v, "trace.hbm_bytes") && probe(v, "trace.block");
}

// The scale(s) covering tile `index` of `span` rows from a [B, heads, n] scale probe: one per block
// (n blocks) or one per token (n = len): then the range over the tile's tokens.
std::optional<StepperScale> tile_scale(const ProbeArray* a, const std::string& name, int64_t b, int64_t head,
                                       int64_t heads, int64_t index, int64_t span, int64_t len) {
  if (!a || a->shape.size() != 3 || b >= a->shape[0] || head >= heads) return std::nullopt;
  const int64_t n = a->shape[2];
  const double* row = a->values.data() + (b * heads + head) * n;
  if (n == len && len != 1) {
    const int64_t lo = index * span, hi = std::min(len, lo + span);
    if (lo >= hi) return std::nullopt;
    const auto [mn, mx] = std::minmax_element(row + lo, row + hi);
    return StepperScale{name, *mn, *mx, true};
  }
  if (index >= n) return std::nullopt;
  return StepperScale{name, row[index], row[index], false};
}

}  // namespace

std::vector<std::string> traced_variants(const Results& r) {
  std::vector<std::string> out;
  for (const auto& v : r.variants)
    if (has_trace(v)) out.push_back(v.label);
  return out;
}

std::optional<StepperView> stepper_view(const Results& r, const std::string& label, int step) {
  const auto it = std::find_if(r.variants.begin(), r.variants.end(), [&](const VariantResult& v) { return v.label == label; });
  if (it == r.variants.end() || !has_trace(*it)) return std::nullopt;
  const VariantResult& v = *it;
  const ProbeArray &m = *probe(v, "trace.m"), &l = *probe(v, "trace.l"), &bytes = *probe(v, "trace.hbm_bytes");
  const ProbeArray& block = *probe(v, "trace.block");
  StepperView s;
  s.steps = int(m.shape.at(0));
  const int64_t rows = m.shape.at(1);
  if (s.steps == 0 || rows == 0 || block.values.size() < 7) return std::nullopt;
  s.step = std::clamp(step, 0, s.steps - 1);
  const int j = s.step;
  s.batch = int64_t(block.values[0]), s.head = int64_t(block.values[1]), s.row_block = int64_t(block.values[2]);
  s.first_row = int64_t(block.values[3]), s.rows = int64_t(block.values[4]);
  s.block_r = int64_t(block.values[5]), s.block_c = int64_t(block.values[6]);
  const ProbeArray* tiles = probe(v, "trace.kv_tile");
  s.kv_tile = tiles ? int64_t(tiles->values.at(size_t(j))) : j;
  for (int64_t row : {int64_t(0), rows / 2, rows - 1}) {
    const double mj = m.values[size_t(j * rows + row)];
    s.rows_shown.push_back({row, mj, l.values[size_t(j * rows + row)], j > 0 && m.values[size_t((j - 1) * rows + row)] != mj});
  }
  const int64_t q_heads = r.problem.value("q_heads", int64_t(1)), kv_heads = r.problem.value("kv_heads", int64_t(1));
  const int64_t q_len = r.problem.value("q_len", int64_t(1)), kv_len = r.problem.value("kv_len", int64_t(1));
  const int64_t kv_head = s.head / std::max<int64_t>(1, q_heads / kv_heads);  // notes §3.1
  for (auto scale : {tile_scale(probe(v, "scales.q"), "scales.q", s.batch, s.head, q_heads, s.row_block, s.block_r, q_len),
                     tile_scale(probe(v, "scales.k"), "scales.k", s.batch, kv_head, kv_heads, s.kv_tile, s.block_c, kv_len),
                     tile_scale(probe(v, "scales.v"), "scales.v", s.batch, kv_head, kv_heads, s.kv_tile, s.block_c, kv_len)})
    if (scale) s.scales.push_back(*scale);
  const size_t at = std::min(size_t(j), bytes.values.size() - 1);
  s.bytes_so_far = bytes.values[at];
  s.bytes_this_step = at == 0 ? bytes.values[0] : bytes.values[at] - bytes.values[at - 1];
  if (v.model && v.model->details.contains("per_tile")) {
    const nlohmann::json& d = v.model->details;
    const nlohmann::json& t = d["per_tile"];
    s.model_gpu = v.model->gpu, s.model_bound = v.model->bound;
    s.model_tiles_from = d.value("tiles_from", std::string());
    s.model_block_c = d.value("block_c", 0);
    double kv = 0;
    for (const auto& [_, b] : t["bytes"].items()) kv += b.get<double>();
    s.model_tile.push_back({"K/V bytes", kv});
    s.model_tile.push_back({"Q_i bytes", t.value("q_block_bytes", 0.0)});
    for (const auto& [unit, n] : t["ops"].items()) s.model_tile.push_back({unit, n.get<double>()});
  }
  return s;
}

}  // namespace attnlab::views
