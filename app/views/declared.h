// attnlab views: a variant's parameter as the run used it — its value in the results, else the default its
// VariantSpec declares — so that no view carries a second copy of a default (a view that took n_r = 0
// where turbo declares −6 mislabelled every SAS bar of an older results file without n_r).
#pragma once

#include "core/results.h"

#include <nlohmann/json.hpp>

#include <string>

namespace attnlab::views {

// v.params[name], else the declared default of that parameter of variant v.id; null when neither (a
// results file from a build with other variants): the caller then leaves its view out.
nlohmann::json declared_param(const VariantResult& v, const std::string& name);

}  // namespace attnlab::views
