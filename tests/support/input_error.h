// attnlab tests: helpers for the bad-input tests — what InputError a call throws, and whether its
// one-line message names the expected field first ("<where>: <rule>").
#pragma once

#include "core/error.h"
#include "tests/catch.h"

#include <string>

namespace attnlab::test {

template <class F>
std::string input_error(F&& f) {  // the message of the InputError f throws, "" if none
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

inline bool starts(const std::string& msg, const std::string& where) {
  INFO(msg);
  return msg.rfind(where + ": ", 0) == 0;
}

}  // namespace attnlab::test
