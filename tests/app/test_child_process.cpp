// Child processes (app/report/child_process.h): started from an argument vector, never a shell — an
// argument full of shell syntax reaches the program as one literal argument and runs nothing; the program
// is found on $PATH without a shell (the working folder never searched); a child that hangs is killed,
// with what it started, at the time limit.
#include "app/report/child_process.h"
#include "app/report/report.h"
#include "tests/catch.h"

#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

namespace attnlab::report {
namespace ATTNLAB_FILE_LOCAL {

namespace fs = std::filesystem;

fs::path scratch(const std::string& name) {
  const fs::path dir = fs::path(ATTNLAB_TEST_TMP) / "child_process" / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return fs::canonical(dir);
}

std::string read(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

struct Env {  // sets an environment variable for one test
  Env(const char* name, const std::string& value) : name(name) {
    if (const char* v = std::getenv(name)) before = v;
    setenv(name, value.c_str(), 1);
  }
  ~Env() { before ? setenv(name, before->c_str(), 1) : unsetenv(name); }
  const char* name;
  std::optional<std::string> before;
};

TEST_CASE("run_child: shell syntax in an argument is one literal argument", "[report][process]") {
  const fs::path dir = scratch("literal");
  const fs::path echo = find_program("echo");
  REQUIRE_FALSE(echo.empty());
  const std::string arg = "a';touch " + (dir / "INJECTED").string() + ";' $(touch " + (dir / "INJECTED2").string() + ") `id`";
  const ChildResult c = run_child({echo.string(), arg}, std::chrono::seconds(30), dir / "log");
  CHECK(c.started);
  CHECK(c.exit_code == 0);
  CHECK(read(dir / "log") == arg + "\n");
  CHECK_FALSE(fs::exists(dir / "INJECTED"));
  CHECK_FALSE(fs::exists(dir / "INJECTED2"));
}

TEST_CASE("run_child: exit codes, a program that cannot start", "[report][process]") {
  CHECK(run_child({find_program("true").string()}, std::chrono::seconds(30)).exit_code == 0);
  CHECK(run_child({find_program("false").string()}, std::chrono::seconds(30)).exit_code == 1);
  const ChildResult c = run_child({"/nonexistent/attnlab-no-such-program"}, std::chrono::seconds(30));
  CHECK_FALSE(c.started);
  CHECK_FALSE(c.error.empty());
  CHECK_FALSE(run_child({}, std::chrono::seconds(1)).started);
}

TEST_CASE("run_child: a hanging child and what it started are killed at the time limit", "[report][process]") {
  const fs::path dir = scratch("timeout");
  const fs::path sh = find_program("sh");
  REQUIRE_FALSE(sh.empty());
  const auto start = std::chrono::steady_clock::now();
  // The shell starts a grandchild (sleep) and waits: both must go.
  const ChildResult c = run_child({sh.string(), "-c", "sleep 60 & echo $! > " + (dir / "pid").string() + "; wait"},
                                  std::chrono::milliseconds(500), dir / "log");
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(c.timed_out);
  CHECK(took < 10);  // the limit, not the 60 s sleep
  const pid_t grandchild = std::atoi(read(dir / "pid").c_str());
  REQUIRE(grandchild > 0);
  // Killed: gone, or a zombie waiting for whoever adopted it to reap it.
  bool alive = true;
  for (int i = 0; i < 100 && alive; ++i) {
    const std::string stat = read("/proc/" + std::to_string(grandchild) + "/stat");
    alive = !stat.empty() && stat.find(") Z ") == std::string::npos;
    if (alive) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  CHECK_FALSE(alive);
}

TEST_CASE("find_program: $PATH searched without a shell; empty entries (the working folder) skipped", "[report][process]") {
  CHECK(fs::path(find_program("sh")).is_absolute());
  CHECK(find_program("attnlab-no-such-program").empty());
  CHECK(find_program("").empty());
  const fs::path dir = scratch("path");
  const fs::path prog = dir / "attnlab-test-program";
  std::ofstream(prog) << "#!/bin/sh\n";
  fs::permissions(prog, fs::perms::owner_all);
  {
    Env path("PATH", "/nonexistent:" + dir.string());
    CHECK(find_program("attnlab-test-program") == prog);
  }
  {
    const fs::path before = fs::current_path();
    fs::current_path(dir);
    Env path("PATH", ":/nonexistent:");
    CHECK(find_program("attnlab-test-program").empty());
    fs::current_path(before);
  }
  std::ofstream(dir / "not-executable") << "#!/bin/sh\n";
  Env path("PATH", dir.string());
  CHECK(find_program("not-executable").empty());
  CHECK(find_program(prog.string()) == prog);  // a name with '/' is a path
}

TEST_CASE("file_url: every byte but unreserved ones and '/' percent-encoded", "[report]") {
  CHECK(file_url("/tmp/r/index.html") == "file:///tmp/r/index.html");
  CHECK(file_url("/a b/c';#?%$(x)\n") == "file:///a%20b/c%27%3B%23%3F%25%24%28x%29%0A");
  CHECK(file_url("/é") == "file:///%C3%A9");
}

}  // namespace
}  // namespace attnlab::report
