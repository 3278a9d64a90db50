// attnlab fuzzing: what every libFuzzer target (tests/fuzz/<target>.cpp) shares.
//
// The rule each target enforces is the input contract (docs/input-contract.md): an input is either
// accepted or refused with an InputError. Anything else is a finding, and libFuzzer reports it as a
// crash: a sanitizer report, a signal, any other exception escaping (std::terminate), a hang
// (-timeout), an allocation beyond -rss_limit_mb, or a broken invariant (check() below) — an accepted
// input whose result is not a finite, consistent value is a silently wrong number.
//
// Parsers that only take a path are fed through a file in a private scratch folder (one per process,
// removed at exit; a crashing run leaves it behind in $TMPDIR, a few bytes).
#pragma once

#include "core/error.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace attnlab::fuzz {

// The process's scratch folder (created on first use), an absolute path.
const std::string& scratch_dir();

// Writes `bytes` to scratch_dir()/name (replacing it) and returns the full path.
std::string write_scratch(const std::string& name, const uint8_t* data, size_t size);

// The input as text.
inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// An invariant of an accepted input: prints `what` and aborts (a finding) when `ok` is false.
void check(bool ok, const std::string& what);

// Whether ATTNLAB_FUZZ_VERBOSE is set: refusals are then printed (to see what a seed or input reaches).
bool verbose();

// Runs `f`; an InputError is the documented refusal and ends the input quietly; everything else
// propagates to libFuzzer.
template <class F>
void refusals_allowed(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    if (verbose()) std::fprintf(stderr, "refused: %s\n", e.what());
  }
}

}  // namespace attnlab::fuzz
