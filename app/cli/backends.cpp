#include "app/cli/backends.h"

#include "sim/model_backend.h"

#include <memory>

namespace attnlab::cli {

Runner make_runner() {
  Runner runner;
  runner.add_backend(std::make_unique<sim::ModelBackend>());
  return runner;
}

}  // namespace attnlab::cli
