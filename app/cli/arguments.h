// attnlab cli: the value checks of value_checks.h as CLI11 validators, run while the command line is
// parsed; CLI11 prefixes the option to the check's message: "--context: 'abc' is not a whole number".
#pragma once

#include "app/cli/value_checks.h"

#include <CLI/CLI.hpp>

#include <string>

namespace attnlab::cli {

CLI::Validator input_file();
CLI::Validator not_empty(const std::string& expected);  // "is empty: give <expected>"
CLI::Validator gpu_id();
CLI::Validator model_id();
CLI::Validator whole_number();

}  // namespace attnlab::cli
