// attnlab python: nlohmann::json → Python objects, as json.loads would give for the text results.json
// holds: objects become dicts, arrays lists, and NaN or ±Inf None (results.json writes them as null).
#pragma once

#include <nlohmann/json.hpp>
#include <pybind11/pybind11.h>

namespace attnlab::python {

pybind11::object to_python(const nlohmann::json& j);

}  // namespace attnlab::python
