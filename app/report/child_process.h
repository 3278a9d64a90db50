// attnlab report: child processes (headless Chromium for --pdf) started from an argument vector with
// posix_spawn, never through a shell, so no path or value is ever read as shell syntax. The program is
// looked up on $PATH here, and a time limit ends a child that hangs together with everything it started.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace attnlab::report {

// The executable file `name` in the folders of $PATH (as execvp searches, but empty entries — the
// working folder — are skipped); a name holding '/' is taken as a path. Empty when there is none.
std::filesystem::path find_program(std::string_view name);

struct ChildResult {
  bool started = false;    // false: it could not be started (`error` says why)
  bool timed_out = false;  // it ran past the time limit and was killed
  int exit_code = -1;      // its exit status; -1 when a signal ended it
  std::string error;
};

// Runs argv[0] (a path: see find_program) with the arguments argv, stdin from /dev/null, stdout and
// stderr into `log` (discarded when empty). Waits at most `timeout`; then kills the child's process
// group (it runs in its own) and reports timed_out.
ChildResult run_child(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                      const std::filesystem::path& log = {});

}  // namespace attnlab::report
