// The SM clock beside the timed launches (kernels/common/sm_clock.h, timing.h): clock_stats' lowest, median, highest
// from samples (CPU), and on a GPU machine the clock read after every timed run ([gpu]: the driver
// that runs the GPU installs NVML, so a usable GPU without a clock is a failure, not a skip).
#include "kernels/common/device.h"
#include "kernels/common/timing.h"
#include "tests/catch.h"

#include <cuda_runtime.h>

namespace attnlab::kernels {
namespace ATTNLAB_FILE_LOCAL {

TEST_CASE("clock_stats: lowest, median and highest of the runs' clocks", "[kernels]") {
  CHECK_FALSE(clock_stats({}).has_value());
  const auto c = clock_stats({{1980}, {1590}, {1755}, {1980}, {1700}});
  REQUIRE(c.has_value());
  CHECK(c->min_mhz == 1590);
  CHECK(c->median_mhz == 1755);  // percentile's rank ⌊0.5·5⌋ = 2 of 1590, 1700, 1755, 1980, 1980
  CHECK(c->max_mhz == 1980);
  CHECK(c->runs == 5);
}

TEST_CASE("time_launches reads the SM clock after every timed run", "[gpu][kernels]") {
  const DeviceInfo dev = probe_device();
  if (!dev.usable) ATTNLAB_SKIP(dev.reason);
  INFO("NVML: " << clock_unavailable());
  REQUIRE(clock_unavailable().empty());
  void* buffer = nullptr;
  REQUIRE(cudaMalloc(&buffer, 64 << 20) == cudaSuccess);
  const Timings t = time_launches([&](size_t) { REQUIRE(cudaMemsetAsync(buffer, 1, 64 << 20) == cudaSuccess); }, 1);
  cudaFree(buffer);
  REQUIRE(t.ms.size() == size_t(kTimedRuns));
  REQUIRE(t.clocks.size() == t.ms.size());
  for (const ClockSample& s : t.clocks) {
    INFO("SM clock " << s.sm_mhz << " MHz");
    CHECK(s.sm_mhz >= 100);  // any GPU this runs on clocks its SMs between 0.1 and 5 GHz
    CHECK(s.sm_mhz <= 5000);
  }
}

}  // namespace ATTNLAB_FILE_LOCAL
}  // namespace attnlab::kernels
