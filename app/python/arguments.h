// attnlab python: the model functions' arguments, read and checked as the CLI reads its options
// (app/cli/arguments.h), so that a bad value fails as an InputError (ValueError in Python) with the CLI's
// one-line message.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>

namespace attnlab::python {

// An id or a path, as `option` takes it on the command line: a str or os.PathLike, checked by `check`
// (cli::check_gpu_id, cli::check_model_id); a refusal reads "<option>: <rule>".
std::string id_or_path(const pybind11::object& value, const std::string& option,
                       std::string (*check)(const std::string&));

// A whole number, as `option` takes it: an int (or NumPy integer; not a bool) whose decimal text passes
// cli::check_whole_number — the CLI's check of the option's text, so 2**64 fails as the CLI says.
int64_t whole_number(const pybind11::object& value, const std::string& option);

}  // namespace attnlab::python
