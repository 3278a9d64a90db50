// The output-folder rule (app/report/output_path.h): attnlab replaces only a folder it made itself (the
// marker inside), an empty folder or a new path; the working folder, the folders above it, /, $HOME, a
// foreign non-empty folder, a folder holding an input and a symbolic link are refused with nothing
// touched. Output files: new or regular files, never a folder, link, FIFO or input. Each refusal is
// checked through the writer too (write_report, write_output_file), with the files around it intact.
#include "app/report/atomic_dir.h"
#include "app/report/output_path.h"
#include "app/report/report.h"
#include "core/error.h"
#include "tests/catch.h"
#include "tests/support/input_error.h"
#include "tests/support/sample_results.h"

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

namespace attnlab::report {
namespace ATTNLAB_FILE_LOCAL {

namespace fs = std::filesystem;
using test::input_error;

// A fresh scratch folder per test.
fs::path scratch(const std::string& name) {
  const fs::path dir = fs::path(ATTNLAB_TEST_TMP) / "output_path" / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return fs::canonical(dir);
}

void touch(const fs::path& p, const std::string& text = "x\n") {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

// Runs a test with `dir` as the working folder, restoring the previous one (tests run one at a time).
struct InFolder {
  explicit InFolder(const fs::path& dir) : before(fs::current_path()) { fs::current_path(dir); }
  ~InFolder() { fs::current_path(before); }
  fs::path before;
};

// Sets an environment variable for one test.
struct Env {
  Env(const char* name, const std::string& value) : name(name) {
    if (const char* v = std::getenv(name)) before = v;
    setenv(name, value.c_str(), 1);
  }
  ~Env() { before ? setenv(name, before->c_str(), 1) : unsetenv(name); }
  const char* name;
  std::optional<std::string> before;
};

const OutputRule out{"--out", {}, true};

std::string refusal(const fs::path& target, const OutputRule& rule = out) {
  return input_error([&] { check_output_folder(target, rule); });
}

TEST_CASE("output folder: the working folder and every folder above it are refused, nothing touched", "[report]") {
  const fs::path work = scratch("cwd") / "work";
  touch(work / "c.json");
  touch(work / "sub" / "keep.txt");
  InFolder in(work / "sub");
  for (const fs::path& p : {fs::path("."), fs::path("./"), fs::path(".."), fs::path("../sub/.."), work / "sub", work,
                            work.parent_path(), fs::path("../..")}) {
    INFO(p);
    const std::string msg = refusal(p);
    CHECK(test::starts(msg, "--out"));
    CHECK(msg.find("working folder or a folder above it") != std::string::npos);
  }
  CHECK(refusal("/").find("root folder") != std::string::npos);
  // The writer itself refuses too (the data loss of `report --out .`): the files are still there.
  const Results r = test::small_results();
  CHECK(test::starts(input_error([&] { write_report(r, ".", ReportRequest{false, "--out", {}}); }), "--out"));
  CHECK(test::starts(input_error([&] { write_report(r, "..", ReportRequest{false, "--out", {}}); }), "--out"));
  CHECK(fs::exists(work / "c.json"));
  CHECK(fs::exists(work / "sub" / "keep.txt"));
  CHECK(std::distance(fs::directory_iterator(work), fs::directory_iterator()) == 2);  // no staging left
}

TEST_CASE("output folder: $HOME is refused, even when empty", "[report]") {
  const fs::path home = scratch("home") / "home";
  fs::create_directories(home);
  Env env("HOME", home.string());
  CHECK(refusal(home).find("home folder") != std::string::npos);
  CHECK(refusal(home / "report").empty());  // a new folder inside it is fine
}

TEST_CASE("output folder: a foreign non-empty folder is refused; new, empty and marked folders are accepted", "[report]") {
  const fs::path dir = scratch("foreign");
  touch(dir / "notes" / "todo.txt");
  const std::string msg = refusal(dir / "notes");
  CHECK(test::starts(msg, "--out"));
  CHECK(msg.find("did not create") != std::string::npos);
  touch(dir / "hidden" / ".profile");  // a hidden file counts: the folder is not empty
  CHECK_FALSE(refusal(dir / "hidden").empty());

  CHECK(check_output_folder(dir / "new", out) == dir / "new");
  CHECK(check_output_folder(dir / "a" / "b" / "c", out) == dir / "a" / "b" / "c");
  CHECK_FALSE(fs::exists(dir / "a"));  // checking creates nothing
  fs::create_directories(dir / "empty");
  CHECK(check_output_folder(dir / "empty", out) == dir / "empty");
  touch(dir / "marked" / std::string(kOutputMarker), "");
  touch(dir / "marked" / "index.html");
  CHECK(check_output_folder(dir / "marked/", out) == dir / "marked");
  // A marker that is a folder or a link is no marker.
  fs::create_directories(dir / "fake" / std::string(kOutputMarker));
  CHECK_FALSE(refusal(dir / "fake").empty());
}

TEST_CASE("output folder: a symbolic link is refused, links above it are followed", "[report]") {
  const fs::path dir = scratch("links");
  touch(dir / "data" / "keep.txt");
  fs::create_directory_symlink(dir / "data", dir / "link");
  CHECK(refusal(dir / "link").find("symbolic link") != std::string::npos);
  fs::create_directories(dir / "real");
  fs::create_directory_symlink(dir / "real", dir / "above");
  CHECK(refusal(dir / "above" / "report").empty());
  fs::create_directory_symlink(dir / "nowhere", dir / "dangling");
  CHECK(refusal(dir / "dangling").find("symbolic link") != std::string::npos);
}

TEST_CASE("output folder: a file, a folder holding an input, a missing parent are refused", "[report]") {
  const fs::path dir = scratch("misc");
  touch(dir / "c.json");
  CHECK(refusal(dir / "c.json").find("not a folder") != std::string::npos);
  touch(dir / "r" / std::string(kOutputMarker), "");
  touch(dir / "r" / "c.json");
  CHECK(refusal(dir / "r", {"--out", {dir / "r" / "c.json"}, true}).find("input") != std::string::npos);
  CHECK(refusal(dir / "r", {"--out", {dir / "c.json"}, true}).empty());
  CHECK(refusal(dir / "missing" / "r", {"--out", {}, false}).find("does not exist") != std::string::npos);
  CHECK(refusal(dir / "c.json" / "r").find("not a folder") != std::string::npos);
  CHECK(refusal("").find("empty") != std::string::npos);
  const std::string msg = refusal("a\n" + std::string(300, 'x'));  // too long a name: echoed on one line, cut
  CHECK(msg.find("a\\nxxx") != std::string::npos);
  CHECK(msg.find('\n') == std::string::npos);
  CHECK(msg.find("…(302 bytes in all)") != std::string::npos);  // a path is cut after kMaxPathChars
  CHECK(msg.size() < kMaxPathChars + 100);
}

TEST_CASE("StagedDir: commit makes a marked folder; a marked folder is replaced whole; a failure leaves nothing", "[report]") {
  const fs::path dir = scratch("staged");
  {
    StagedDir s(dir / "out" / "report", out);
    touch(s.path() / "index.html", "one");
    s.commit();
  }
  CHECK(fs::is_regular_file(dir / "out" / "report" / std::string(kOutputMarker)));
  touch(dir / "out" / "report" / "extra.txt");
  {
    StagedDir s(dir / "out" / "report", out);
    touch(s.path() / "index.html", "two");
    s.commit();
  }
  CHECK_FALSE(fs::exists(dir / "out" / "report" / "extra.txt"));
  std::ifstream f(dir / "out" / "report" / "index.html");
  std::string text;
  f >> text;
  CHECK(text == "two");
  { StagedDir s(dir / "new" / "deeper" / "report", out); }  // not committed
  CHECK_FALSE(fs::exists(dir / "new"));                     // the folders made for it went too
  CHECK(std::distance(fs::directory_iterator(dir / "out"), fs::directory_iterator()) == 1);  // no staging left
}

TEST_CASE("output file: new and regular files are accepted; folders, links, FIFOs and inputs refused", "[report]") {
  const fs::path dir = scratch("files");
  touch(dir / "c.json");
  touch(dir / "old.json");
  const OutputRule json{"--json", {dir / "c.json", dir / "data"}, false};
  auto file_refusal = [&](const fs::path& p, const OutputRule& rule) {
    return input_error([&] { check_output_file(p, rule); });
  };
  CHECK(check_output_file(dir / "new.json", json) == dir / "new.json");
  CHECK(check_output_file(dir / "old.json", json) == dir / "old.json");
  for (const fs::path& p : {dir, dir / ".", dir / "..", dir / "sub/"}) CHECK(file_refusal(p, json).find("folder") != std::string::npos);
  CHECK(file_refusal(dir / "c.json", json).find("input") != std::string::npos);
  fs::create_hard_link(dir / "c.json", dir / "hard.json");
  CHECK(file_refusal(dir / "hard.json", json).find("input") != std::string::npos);
  fs::create_directories(dir / "data");
  CHECK(file_refusal(dir / "data" / "q.npy", json).find("input") != std::string::npos);
  fs::create_symlink(dir / "old.json", dir / "link.json");
  CHECK(file_refusal(dir / "link.json", json).find("symbolic link") != std::string::npos);
  REQUIRE(mkfifo((dir / "fifo").c_str(), 0600) == 0);
  CHECK(file_refusal(dir / "fifo", json).find("not a regular file") != std::string::npos);
  CHECK(file_refusal(dir / "missing" / "r.json", json).find("does not exist") != std::string::npos);
  CHECK(file_refusal("", json).find("empty") != std::string::npos);
  const OutputRule created{"--csv", {}, true};
  CHECK(check_output_file(dir / "a" / "b" / "r.csv", created) == dir / "a" / "b" / "r.csv");
  CHECK_FALSE(fs::exists(dir / "a"));  // checking creates nothing
  CHECK(file_refusal(dir / "c.json" / "r.csv", created).find("not a folder") != std::string::npos);
}

TEST_CASE("write_output_file: folders only at commit, removed again when the write fails", "[report]") {
  const fs::path dir = scratch("write");
  const OutputRule csv{"--csv", {}, true};
  write_output_file(dir / "out" / "sweep" / "s.csv", "a,b\n", csv);
  CHECK(fs::file_size(dir / "out" / "sweep" / "s.csv") == 4);
  // A write that fails after the check (a name too long for the temporary file beside it): the folders
  // made for it must go again.
  const std::string long_name(250, 'n');
  CHECK_FALSE(input_error([&] { write_output_file(dir / "x" / "y" / long_name, "t", csv); }).empty());
  CHECK_FALSE(fs::exists(dir / "x"));
  {
    CreatedFolders made(dir / "p" / "q", "--csv");
    touch(dir / "p" / "kept.txt");
  }
  CHECK(fs::exists(dir / "p" / "kept.txt"));  // removed only while empty
  CHECK_FALSE(fs::exists(dir / "p" / "q"));
}

}  // namespace
}  // namespace attnlab::report
