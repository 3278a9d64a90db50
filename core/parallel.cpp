#include "core/parallel.h"

#include "core/error.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace attnlab {

int worker_threads() {
  const char* env = std::getenv("ATTNLAB_THREADS");
  if (!env || !*env) return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  // Digits only, read with a cap, so no value can wrap into a plausible count (atoi would).
  int64_t n = 0;
  const char* c = env;
  for (; *c >= '0' && *c <= '9' && n <= kMaxThreads; ++c) n = n * 10 + (*c - '0');
  if (*c != '\0' || n < 1 || n > kMaxThreads)
    fail_input("ATTNLAB_THREADS", fmt::format("'{}' is not a whole number in [1, {}]", echo(env), kMaxThreads));
  return static_cast<int>(n);
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
