// attnlab kernels: the GPU's SM clock beside each timed launch, read from NVML (the driver's management library,
// opened at run time: a machine without it times as before, with no clock). Why: on a power-limited GPU the clock
// moves from one launch to the next — an H100 at d 128, N 8k gave one kernel's launches 3.33 and 3.85 ms, two
// populations 16% apart (kernels/PERF.md, "wgmma v5 and the dynamic order measured") — and a ratio between two rows
// timed one after another is then partly the clock's. The bench prints the clock each row ran at; a user sees when
// two rows did not share one.
#pragma once

#include <optional>
#include <string>

namespace attnlab::kernels {

// NVML's clocks event reasons were tried as a "held down by the power limit" flag and dropped: read after a run they
// said no limit for all 30 runs of a kernel whose clock read 1755 of 1980 MHz (H100, d 128, N 8k, 2026-12-06) — the
// flag is the GPU's state when read, and the run is over by then.
struct ClockSample {
  unsigned sm_mhz = 0;
};

// The SM clock of the CUDA device that was current at the first call, now; nullopt where NVML is missing or refuses
// (clock_unavailable() says why: the missing library, or the last failed read). NVML is opened and the device found
// once per process.
std::optional<ClockSample> sample_sm_clock();
std::string clock_unavailable();

}  // namespace attnlab::kernels
