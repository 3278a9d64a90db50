// attnlab fuzzing: what a loaded tensor must be when a loader accepts it (core/data/loaders.h): 4-D
// with no zero dimension, exactly shape.count() values, every value finite.
#pragma once

#include "core/tensor.h"
#include "tests/fuzz/fuzz_support.h"

#include <cmath>

namespace attnlab::fuzz {

inline void check_loaded(const Tensor& t, const char* name) {
  const Shape4& s = t.shape();
  check(s.batch > 0 && s.heads > 0 && s.len > 0 && s.dim > 0, std::string(name) + ": accepted a zero dimension " + s.str());
  check(t.size() == s.count(), std::string(name) + ": value count disagrees with shape " + s.str());
  for (float x : t.values()) check(std::isfinite(x), std::string(name) + ": accepted a NaN or Inf value");
}

}  // namespace attnlab::fuzz
