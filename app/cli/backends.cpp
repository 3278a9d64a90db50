#include "app/cli/backends.h"

#include "sim/baselines.h"
#include "sim/model_backend.h"
#if defined(ATTNLAB_HAVE_CUDA)
#include "kernels/common/backend.h"
#endif

#include <memory>

namespace attnlab::cli {

Runner make_runner() {
  Runner runner;
#if defined(ATTNLAB_HAVE_CUDA)
  runner.add_backend(std::make_unique<kernels::KernelBackend>());
#endif
  runner.add_backend(std::make_unique<sim::ModelBackend>());
  runner.set_baseline_reader(sim::external_timings);
  return runner;
}

}  // namespace attnlab::cli
