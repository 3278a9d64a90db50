// attnlab tests: a hand-made Results of a kernel + model run on an H100 (no reference backend), as
// configs/bench-gpu.json makes one: flash2 and four int_flash-family variants (int_flash and int_half,
// each on wgmma and on mma.sync). The int_flash family's GPU-quantized Q and K scales are identical, as
// the kernels compute them from the same Q and K; int_half has no S_V (its V stays FP16). B = 1, two
// heads, N = 4096, d = 128: prefill at an arithmetic intensity past the H100's knees.
#pragma once

#include "core/results.h"

namespace attnlab::test {

Results kernel_results();

}  // namespace attnlab::test
