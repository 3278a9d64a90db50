// attnlab sim: the config's report.baselines — times other implementations took on the run's problem (PyTorch SDPA's
// cuDNN and FlashAttention-2 backends, FlashAttention-3, SageAttention2), read from attnlab.measurements/1 files, so
// that a speedup is stated over the best FP16 kernel measured and not only over attnlab's own.
#pragma once

#include "core/config.h"
#include "core/results.h"

#include <vector>

namespace attnlab::sim {

// The rows of e.baselines' files that carry an `implementation` and whose problem is e's (batch, heads, lengths,
// head dim, causal, phase), one per implementation — the first row met, in file order — with the file's GPU.
// Throws InputError naming report.baselines[i] for a file that is missing or not a valid measurements file.
std::vector<ExternalTiming> external_timings(const Experiment& e);

}  // namespace attnlab::sim
