#include "core/formats/round.h"

#include "core/formats/half.h"

#if defined(__F16C__)
#include <immintrin.h>
#endif

namespace attnlab::formats {

void round_fp16_inplace_scalar(float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = round_fp16(x[i]);
}

void round_fp16_inplace(float* x, int64_t n) {
  int64_t i = 0;
#if defined(__F16C__)
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT);
    _mm256_storeu_ps(x + i, _mm256_cvtph_ps(h));
  }
#endif
  round_fp16_inplace_scalar(x + i, n - i);
}

}  // namespace attnlab::formats
