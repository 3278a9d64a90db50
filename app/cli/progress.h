// attnlab cli: the progress bar long runs show on stderr.
#pragma once

#include <chrono>
#include <string>

namespace attnlab::cli {

// "[#########-----------]  45%  flash2: reference" in `width` bar characters.
std::string progress_line(double fraction, const std::string& stage, int width = 30);

// Draws progress_line on stderr, only once a run has lasted ~1 s and only when stderr is a terminal.
class ProgressBar {
 public:
  ProgressBar();
  ~ProgressBar();  // clears the line if one was drawn
  void update(double fraction, const std::string& stage);

 private:
  std::chrono::steady_clock::time_point start_;
  bool tty_ = false;
  bool drawn_ = false;
};

}  // namespace attnlab::cli
