#include "tests/support/run_program.h"

#include "app/report/child_process.h"

#include <fstream>
#include <sstream>

namespace attnlab::test {

ProgramRun run_program(const std::vector<std::string>& argv, const std::filesystem::path& log, int timeout_s) {
  ProgramRun run;
  const std::filesystem::path program = report::find_program(argv.at(0));
  if (program.empty()) {
    run.output = argv[0] + ": not found on the PATH";
    return run;
  }
  std::vector<std::string> args = argv;
  args[0] = program.string();
  const report::ChildResult c = report::run_child(args, std::chrono::seconds(timeout_s), log);
  std::ifstream f(log);
  std::stringstream ss;
  ss << f.rdbuf();
  run.output = ss.str();
  if (!c.started) run.output += argv[0] + ": could not start: " + c.error;
  if (c.timed_out) run.output += argv[0] + ": killed after " + std::to_string(timeout_s) + " s";
  run.exit_code = c.exit_code;
  return run;
}

}  // namespace attnlab::test
