// attnlab core: the two kinds of failure the tools distinguish (DESIGN.md, "Contracts").
//   InputError    — bad input the user can fix (config, parameter, data file): exit code 2, one line
//                   naming the field or file and the rule it broke.
//   anything else — an internal failure: exit code 1.
#pragma once

#include <stdexcept>
#include <string>

namespace attnlab {

struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Throws InputError("<where>: <rule>"), e.g. fail_input("problem.kv_heads", "must divide q_heads (8)").
[[noreturn]] inline void fail_input(const std::string& where, const std::string& rule) {
  throw InputError(where + ": " + rule);
}

}  // namespace attnlab
