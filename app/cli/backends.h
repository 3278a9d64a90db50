// attnlab cli: the Runner with every backend this build has (kernel when CUDA was found, model when
// the cost model exists). Front ends get their Runner here, so they all see the same backends.
#pragma once

#include "core/runner.h"

namespace attnlab::cli {

Runner make_runner();

}  // namespace attnlab::cli
