// attnlab tests: run a program the way the tool runs Chromium (app/report/child_process.h): from an
// argument vector, never through a shell, its output into a log, with a time limit. Used by the tests
// that drive attnlab-gui under Xvfb and headless Chromium.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace attnlab::test {

struct ProgramRun {
  int exit_code = -1;  // -1: not found, not started, killed by a signal or by the time limit
  std::string output;  // stdout and stderr together, and why it did not run or finish
};

// argv[0] is looked up on $PATH. The log file keeps the output for a look after a failure.
ProgramRun run_program(const std::vector<std::string>& argv, const std::filesystem::path& log, int timeout_s);

}  // namespace attnlab::test
