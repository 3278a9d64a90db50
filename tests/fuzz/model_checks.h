// attnlab fuzzing: the cost model on an accepted input, as `attnlab run --backend model` and
// `attnlab calibrate` use it: a schedule and a prediction for each variant. The model may refuse
// (InputError: no schedule for the variant, a CTA that does not fit the GPU); when it answers, the
// predicted time must be a finite, positive number.
#pragma once

#include "core/config.h"
#include "sim/cost_model.h"
#include "sim/gpu_spec.h"
#include "sim/schedule.h"
#include "tests/fuzz/fuzz_support.h"

#include <cmath>

namespace attnlab::fuzz {

// The H100 spec from the source tree, read once (the targets fuzz the config, not this file).
inline const sim::GpuSpec& reference_gpu() {
  static const sim::GpuSpec g = sim::load_gpu_spec_file(std::string(ATTNLAB_SOURCE_DIR) + "/sim/specs/h100-sxm5.json");
  return g;
}

inline void check_prediction(const Problem& p, const VariantRequest& v, const sim::GpuSpec& gpu) {
  refusals_allowed([&] {
    const sim::Prediction pred = sim::predict(sim::make_schedule(p, v, gpu), gpu);
    check(std::isfinite(pred.time_ms) && pred.time_ms > 0,
          "model predicted a time that is not finite and positive for variant " + v.id);
  });
}

}  // namespace attnlab::fuzz
