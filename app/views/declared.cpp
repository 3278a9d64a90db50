#include "app/views/declared.h"

#include "core/params.h"
#include "core/registry.h"

namespace attnlab::views {

nlohmann::json declared_param(const VariantResult& v, const std::string& name) {
  if (const auto it = v.params.find(name); it != v.params.end()) return *it;
  if (const VariantSpec* spec = find_variant(v.id))
    for (const ParamSpec& p : spec->params)
      if (p.name == name) return to_json(p.default_value);
  return nullptr;
}

}  // namespace attnlab::views
