// One include for every test file: Catch2 v3 where it is installed (the GPU machine), v2 otherwise
// (Debian bookworm). ATTNLAB_SKIP(reason) skips the current test with a printed reason on both, and tells
// tests/main.cpp, which exits with CTest's skip code when every case it ran was skipped (tests/CMakeLists.txt:
// the [gpu] cases of a file are their own CTest test, shown as skipped on a machine without a GPU).
#pragma once

#if __has_include(<catch2/catch_test_macros.hpp>)
#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
using Catch::Approx;
#define ATTNLAB_SKIP(reason)           \
  do {                                 \
    ::attnlab::test::note_skip();      \
    SKIP(reason);                      \
  } while (0)
#else
#include <catch2/catch.hpp>
// Catch2 v2 has no SKIP: print the reason and leave the test (Catch2 counts it as passed, with a warning;
// main.cpp's count makes the CTest test a skipped one).
#define ATTNLAB_SKIP(reason)           \
  do {                                 \
    ::attnlab::test::note_skip();      \
    WARN("skipped: " << reason);       \
    return;                            \
  } while (0)
#endif

namespace attnlab::test {
// Marks the running test case as skipped (tests/main.cpp counts them).
void note_skip();
}  // namespace attnlab::test
