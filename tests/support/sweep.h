// attnlab tests: the sequence lengths of the reference sweeps (each variant's test file sweeps d, N, causal
// and GQA against an FP64 truth).
//
// In the sanitizer build (make test-sanitize, which defines ATTNLAB_SANITIZED) the sweeps stop at N = 257.
// The longest rows cost most: N = 1024 is ~90% of a sweep's time, and under AddressSanitizer the suite
// ran 25 of CI's 73 minutes. What the sanitizers look for — out-of-bounds indexing, use after free, UB —
// lives in the code paths, and N ≤ 257 takes all of them: one key, fewer keys than a tile, partial last
// tiles, several tiles, causal rows that see no key. The full sweeps, N = 1024 included, run with every
// assertion in the plain build (make test).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <vector>

namespace attnlab::test {

#if defined(ATTNLAB_SANITIZED)
inline constexpr int64_t kSweepLongest = 257;
#else
inline constexpr int64_t kSweepLongest = INT64_MAX;
#endif

// The lengths of `all` this build sweeps.
inline std::vector<int64_t> sweep_lengths(std::initializer_list<int64_t> all) {
  std::vector<int64_t> kept;
  for (int64_t n : all)
    if (n <= kSweepLongest) kept.push_back(n);
  return kept;
}

}  // namespace attnlab::test
