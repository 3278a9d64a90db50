// attnlab core: run independent work items (heads) across the machine's cores.
#pragma once

#include <cstdint>
#include <functional>

namespace attnlab {

// Threads used by parallel_for: ATTNLAB_THREADS if set (≥ 1), else the hardware's count.
int worker_threads();

// Calls fn(i) for i in [0, n) on up to worker_threads() threads. Items must be independent. The first
// exception thrown by any item is rethrown here after all threads have stopped.
void parallel_for(int64_t n, const std::function<void(int64_t)>& fn);

}  // namespace attnlab
