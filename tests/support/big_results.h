// attnlab tests: a hand-made Results the size of a kernel + model run of configs/bench-gpu.json at its
// largest shape — B = 4, H = 16, N = 16384, d = 128 — with probes of the real shapes, built directly (no
// reference run at that size): per-token S_Q and S_K [4, 16, 16384] and S_V [4, 16, 1] of the int_flash
// family (the same for its four kernels, as the GPU quantizes the same Q and K), the logsumexp [4, 16, 16384] of every kernel, and, for flash2, a reference with the channel
// ranges [4, 16, 128], the tile stepper's trace (256 steps × 64 rows) and its own logsumexp. Scales hold
// float32 values (their sidecars are '<f4'), logsumexp values that float32 cannot hold (sidecars '<f8').
#pragma once

#include "core/results.h"

namespace attnlab::test {

Results big_results();

}  // namespace attnlab::test
