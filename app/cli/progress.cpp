#include "app/cli/progress.h"

#include "core/error.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace attnlab::cli {

std::string progress_line(double fraction, const std::string& stage, int width) {
  fraction = std::clamp(fraction, 0.0, 1.0);
  const int filled = static_cast<int>(fraction * width + 0.5);
  return fmt::format("[{}{}] {:3.0f}%  {}", std::string(filled, '#'), std::string(width - filled, '-'),
                     fraction * 100.0, one_line(stage, 80));  // a label from the config cannot break the line
}

ProgressBar::ProgressBar() : start_(std::chrono::steady_clock::now()), tty_(isatty(STDERR_FILENO) != 0) {}

ProgressBar::~ProgressBar() {
  if (drawn_) std::fprintf(stderr, "\r\033[K");
}

void ProgressBar::update(double fraction, const std::string& stage) {
  if (!tty_ || std::chrono::steady_clock::now() - start_ < std::chrono::seconds(1)) return;
  std::fprintf(stderr, "\r\033[K%s", progress_line(fraction, stage).c_str());
  std::fflush(stderr);
  drawn_ = true;
}

}  // namespace attnlab::cli
