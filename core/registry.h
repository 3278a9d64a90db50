// attnlab core: the variant registry — the one table every front end reads.
#pragma once

#include "core/variant.h"

#include <string>
#include <vector>

namespace attnlab {

const std::vector<VariantSpec>& variant_registry();
const VariantSpec* find_variant(const std::string& id);  // nullptr when unknown

}  // namespace attnlab
