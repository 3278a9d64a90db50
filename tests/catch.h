// One include for every test file: Catch2 v3 where it is installed (the GPU machine), v2 otherwise
// (Debian bookworm). ATTNLAB_SKIP(reason) skips the current test with a printed reason on both.
#pragma once

#if __has_include(<catch2/catch_test_macros.hpp>)
#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#define ATTNLAB_SKIP(reason) SKIP(reason)
using Catch::Approx;
#else
#include <catch2/catch.hpp>
// Catch2 v2 has no SKIP: print the reason and leave the test (it counts as passed, with a warning).
#define ATTNLAB_SKIP(reason) \
  do {                       \
    WARN("skipped: " << reason); \
    return;                  \
  } while (0)
#endif
