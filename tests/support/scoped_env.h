// attnlab tests: set (or unset) one environment variable for a scope, restoring what was there before, so
// tests of ATTNLAB_THREADS and ATTNLAB_MAX_MEMORY_GB leave the process as they found it.
#pragma once

#include <cstdlib>
#include <optional>
#include <string>

namespace attnlab::test {

class ScopedEnv {
 public:
  ScopedEnv(std::string name, const char* value) : name_(std::move(name)) {
    if (const char* old = std::getenv(name_.c_str())) old_ = old;
    if (value) setenv(name_.c_str(), value, 1);
    else unsetenv(name_.c_str());
  }
  ~ScopedEnv() {
    if (old_) setenv(name_.c_str(), old_->c_str(), 1);
    else unsetenv(name_.c_str());
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

}  // namespace attnlab::test
