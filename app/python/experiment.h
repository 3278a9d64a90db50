// attnlab python: a config given to the module — a dict or the path of a config file — as an Experiment,
// through the same parser and checks as the CLI's --config.
#pragma once

#include "core/config.h"
#include "core/tensor.h"

#include <pybind11/pybind11.h>

#include <optional>

namespace attnlab::python {

// config: a dict (the JSON of a config file) or a path (str or os.PathLike). Given arrays fix the problem's
// shapes and replace the config's data section. Bad input throws InputError naming the field (and the file).
Experiment experiment_from(const pybind11::object& config, const std::optional<QKV>& arrays);

}  // namespace attnlab::python
