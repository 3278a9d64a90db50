// attnlab core: the two kinds of failure the tools distinguish (DESIGN.md, "Contracts").
//   InputError    — bad input the user can fix (config, parameter, data file): exit code 2, one line
//                   naming the field or file and the rule it broke.
//   anything else — an internal failure: exit code 1.
// A message is one line whatever the input held: values taken from the input are echoed through
// echo() (escaped, cut to about 80 characters), and the front ends print every message through
// one_line() as a last defence.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

namespace attnlab {

struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Throws InputError("<where>: <rule>"), e.g. fail_input("problem.kv_heads", "must divide q_heads (8)").
[[noreturn]] inline void fail_input(const std::string& where, const std::string& rule) {
  throw InputError(where + ": " + rule);
}

// A value from the input, safe to put in a one-line message: control characters, backslashes and bytes
// that are not printable ASCII or UTF-8 are escaped (\n, \t, \xNN), and anything past `max_chars`
// characters is cut and marked with "…(N bytes in all)". No quotes are added.
std::string echo(std::string_view value, std::size_t max_chars = 80);

// A file or folder path put in a message ("<path>: <rule>"): escaped as echo() does, but cut only past
// kMaxPathChars characters, so that the file name at the end of an ordinary deep path (a data folder some
// levels down, a scratch or build folder) is still in the message.
inline constexpr std::size_t kMaxPathChars = 200;
std::string echo_path(std::string_view path);

// A whole message made printable on one line: newlines and other control characters escaped as
// echo() does, and cut after `max_chars` (default 600) characters.
std::string one_line(std::string_view message, std::size_t max_chars = 600);

}  // namespace attnlab
