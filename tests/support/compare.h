// attnlab tests: the one comparator every numerical check uses (STYLE.md, example 4).
//
//   |ref − out| ≤ atol_i + rtol·|ref|      for every element i
//
// atol may be a single number or one per element (a bound derived per output element from the rounding
// that causes the error). A failure names the first mismatches: flat index, (b, h, n, c), ref, out, bound.
#pragma once

#include "core/tensor.h"

#include <cstdint>
#include <string>
#include <vector>

namespace attnlab::test {

struct CloseReport {
  bool ok = true;
  int64_t failures = 0;
  double worst_ratio = 0.0;  // max |ref − out| / bound; < 1 when ok
  std::string message;       // the first mismatches, or a one-line summary when ok
};

CloseReport check_close(const TensorF64& ref, const Tensor& out, double atol, double rtol);
CloseReport check_close(const TensorF64& ref, const Tensor& out, const std::vector<double>& atol_per_element,
                        double rtol);

}  // namespace attnlab::test

// Use as: CHECK_CLOSE(ref, out, atol, rtol); — fails the test with the first mismatches in the message.
#define CHECK_CLOSE(ref, out, atol, rtol)                                   \
  do {                                                                      \
    const auto attnlab_report_ = ::attnlab::test::check_close(ref, out, atol, rtol); \
    INFO(attnlab_report_.message);                                          \
    CHECK(attnlab_report_.ok);                                              \
  } while (0)
