#include "core/parallel.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace attnlab {

int worker_threads() {
  if (const char* env = std::getenv("ATTNLAB_THREADS")) {
    const int n = std::atoi(env);
    if (n >= 1) return n;
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

void parallel_for(int64_t n, const std::function<void(int64_t)>& fn) {
  const int64_t threads = std::min<int64_t>(worker_threads(), n);
  if (threads <= 1) {
    for (int64_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::atomic<int64_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error;
  std::mutex error_mutex;
  auto worker = [&] {
    for (int64_t i = next++; i < n && !failed; i = next++) {
      try {
        fn(i);
      } catch (...) {
        std::lock_guard lock(error_mutex);
        if (!error) error = std::current_exception();
        failed = true;
      }
    }
  };
  std::vector<std::thread> pool;
  for (int64_t t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace attnlab
