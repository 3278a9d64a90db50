#include "app/cli/backends.h"

namespace attnlab::cli {

Runner make_runner() {
  Runner runner;
  return runner;
}

}  // namespace attnlab::cli
