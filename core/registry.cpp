#include "core/registry.h"

#include "core/variants/variants.h"

#include <algorithm>

namespace attnlab {

bool VariantSpec::supports(Phase p) const {
  return std::find(phases.begin(), phases.end(), p) != phases.end();
}

const std::vector<VariantSpec>& variant_registry() {
  static const std::vector<VariantSpec> table = {
      variants::naive(),
      variants::flash2(),
      variants::flash3_fp8(),
      variants::int_flash(),
      variants::turbo(),
      variants::kivi(),
      variants::fireq(),
  };
  return table;
}

const VariantSpec* find_variant(const std::string& id) {
  for (const auto& v : variant_registry())
    if (v.id == id) return &v;
  return nullptr;
}

}  // namespace attnlab
