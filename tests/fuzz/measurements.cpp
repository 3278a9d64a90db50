// libFuzzer target: a measurements file (what `attnlab bench --out` writes) through load_measurements
// (sim/calibrate.h), then what `attnlab calibrate` asks of each measurement before fitting: a schedule
// and a prediction on an H100 (model_checks.h; the first 8 entries, to keep each run short). An
// accepted measurement must carry a finite, positive time.
#include "sim/calibrate.h"
#include "tests/fuzz/fuzz_support.h"
#include "tests/fuzz/model_checks.h"

#include <algorithm>
#include <cmath>

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)attnlab::fuzz::reference_gpu();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace attnlab;
  const std::string path = fuzz::write_scratch("measurements.json", data, size);
  fuzz::refusals_allowed([&] {
    std::string gpu;
    const std::vector<sim::Measurement> ms = sim::load_measurements(path, &gpu);
    fuzz::check(!ms.empty(), "an accepted measurements file with no measurement");
    for (size_t i = 0; i < std::min<size_t>(ms.size(), 8); ++i) {
      fuzz::check(std::isfinite(ms[i].median_ms) && ms[i].median_ms > 0, "median_ms of " + ms[i].label);
      fuzz::check_prediction(ms[i].problem, ms[i].variant, fuzz::reference_gpu());
    }
  });
  return 0;
}
