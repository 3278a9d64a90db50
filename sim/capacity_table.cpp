#include "sim/capacity_table.h"

#include "core/error.h"
#include "core/registry.h"

#include <fmt/format.h>

#include <algorithm>

namespace attnlab::sim {

std::vector<VariantRequest> default_capacity_variants(const LlmConfig& m, const std::string& where) {
  std::vector<VariantRequest> variants;
  for (const auto& v : variant_registry()) variants.push_back({v.id, ParamValues::defaults(v.params), ""});
  if (const VariantSpec* t = find_variant("turbo")) {
    VariantRequest mixed{"turbo", ParamValues::defaults(t->params), "turbo 2/4-bit mix"};
    mixed.params.set(t->params, "two_bit_heads", m.kv_heads / 2, where + ": kv_heads / 2 as turbo");
    variants.push_back(mixed);
  }
  return variants;
}

std::vector<CapacityRow> capacity_table(const LlmConfig& m, const GpuSpec& g, int64_t context,
                                        const std::vector<VariantRequest>& variants) {
  std::vector<CapacityRow> rows;
  for (const auto& v : variants) {
    CapacityRow row;
    row.format = cache_format(m, v);
    row.capacity = capacity(m, row.format, g, context);
    row.bytes_per_token = row.format.bytes_per_token * double(m.layers);
    rows.push_back(row);
  }
  const auto smallest = std::min_element(rows.begin(), rows.end(), [](const CapacityRow& a, const CapacityRow& b) {
    return a.capacity.seq_bytes < b.capacity.seq_bytes;
  });
  if (smallest != rows.end() && !smallest->fits())
    fail_input("--context", fmt::format("one sequence of {} tokens of {} needs {:.1f} GB even as {}, more than the "
                                        "{:.1f} GB the {} has left for the cache",
                                        context, echo(m.id), smallest->capacity.seq_bytes / 1e9,
                                        echo(smallest->format.variant), smallest->capacity.free_bytes / 1e9, echo(g.id)));
  // Speedups are over the first row that fits (a row before it that does not fit has none).
  double first = 0;
  for (CapacityRow& row : rows) {
    if (!row.fits()) continue;
    if (first == 0) first = row.capacity.tokens_per_s;
    row.speedup = row.capacity.tokens_per_s / first;
  }
  return rows;
}

}  // namespace attnlab::sim
