// attnlab cli: checks on command-line values, run while the command line is parsed, before anything is
// read or run. Each check_* returns "" for a good value, else the rule it breaks with the value echoed
// (core/error.h); CLI11 prefixes the option: "--context: 'abc' is not a whole number". Plain functions,
// without CLI11 (a header-only library that costs every file including it seconds to compile): the
// Python module checks its arguments with them too; arguments.h wraps them as CLI11 validators.
#pragma once

#include <string>

namespace attnlab::cli {

// An input file: not empty, existing, and a regular file once links are followed (not a folder, a
// FIFO, a socket or a device). Only stat(2): a FIFO is never opened.
std::string check_input_file(const std::string& value);
// A name looked up in a table of the tool (a GPU spec, a model): 1 to 64 letters, digits, '.', '-',
// '_', not starting with '.'. The message says what was expected ("a GPU id") and where to look.
std::string check_name(const std::string& value, const std::string& what, const std::string& listed);
// A whole number within the range of a 64-bit integer.
std::string check_whole_number(const std::string& value);
// --gpu and --model: a value ending in .json names a file (check_input_file), any other value must be an id
// (check_name), as sim/data_fields.h reads them (data_file_name); a path that does not end in .json is neither.
// The Python module checks its arguments with these too.
std::string check_gpu_id(const std::string& value);
std::string check_model_id(const std::string& value);

}  // namespace attnlab::cli
