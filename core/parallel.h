// attnlab core: run independent work items (heads) across the machine's cores.
#pragma once

#include <cstdint>
#include <functional>

namespace attnlab {

// ATTNLAB_THREADS must be a whole number in [1, kMaxThreads] when set (an InputError naming it
// otherwise): the thread count is an input, and the memory estimate multiplies by it.
inline constexpr int kMaxThreads = 4096;

// Threads used by parallel_for: ATTNLAB_THREADS if set (and not empty), else the hardware's count.
int worker_threads();

// Calls fn(i) for i in [0, n) on up to worker_threads() threads. Items must be independent. The first
// exception thrown by any item is rethrown here after all threads have stopped.
void parallel_for(int64_t n, const std::function<void(int64_t)>& fn);

}  // namespace attnlab
