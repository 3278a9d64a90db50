// attnlab core: round a whole array to a storage format in place (the emulation of a kernel's
// conversions). Vectorized with F16C where the CPU has it; identical results either way (both are
// IEEE round-to-nearest-even, tested in tests/core/formats).
#pragma once

#include <cstdint>

namespace attnlab::formats {

void round_fp16_inplace(float* x, int64_t n);
void round_fp16_inplace_scalar(float* x, int64_t n);  // the portable path, kept for the test

}  // namespace attnlab::formats
