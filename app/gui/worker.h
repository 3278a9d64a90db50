// attnlab gui: runs an experiment on a background thread so the window stays live — progress, cancel,
// and the finished Results (or the error) handed back to the UI thread.
#pragma once

#include "core/config.h"
#include "core/results.h"

#include <atomic>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace attnlab::gui {

class Worker {
 public:
  ~Worker();
  bool busy() const { return busy_; }
  void start(const Experiment& e);  // only when not busy
  void cancel() { cancel_ = true; }
  double progress() const { return progress_; }
  std::string stage() const;
  // The finished run, once: Results, or the one-line error that stopped it ("cancelled" when asked to).
  struct Outcome {
    std::optional<Results> results;
    std::string error;
  };
  std::optional<Outcome> take();

 private:
  std::thread thread_;
  std::atomic<bool> busy_{false}, cancel_{false};
  std::atomic<double> progress_{0};
  mutable std::mutex mutex_;
  std::string stage_;
  std::optional<Outcome> done_;
};

}  // namespace attnlab::gui
