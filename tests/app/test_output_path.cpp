// The output-folder rule (app/report/output_path.h): attnlab replaces only a folder it made itself (the
// marker inside), an empty folder or a new path; the working folder, the folders above it, /, $HOME, a
// foreign non-empty folder, a folder holding an input and a symbolic link are refused with nothing
// touched. Output files: new, or an existing file that is attnlab's own output of the option's kind
// (output_kinds.h); never someone else's file, a folder, link, FIFO or input. Each kind accepts what
// attnlab writes and refuses a foreign file, an empty, a binary, a truncated and a large one. Each
// refusal is checked through the writer too (write_report, write_output_file, write_results_file), with
// the files around it intact.
#include "app/report/atomic_dir.h"
#include "app/report/csv.h"
#include "app/report/output_path.h"
#include "app/report/png_text.h"
#include "app/report/report.h"
#include "app/report/results_file.h"
#include "app/views/sweep.h"
#include "core/error.h"
#include "core/json_input.h"
#include "core/results_sidecars.h"
#include "sim/measurements.h"
#include "tests/catch.h"
#include "tests/support/big_results.h"
#include "tests/support/input_error.h"
#include "tests/support/sample_results.h"

#include <fmt/format.h>

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

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
  touch(dir / "old.json", R"({"schema": "attnlab.results/2"})");
  const OutputRule json{"--json", {dir / "c.json", dir / "data"}, false};
  auto file_refusal = [&](const fs::path& p, const OutputRule& rule) {
    return input_error([&] { check_output_file(p, rule, OutputKind::results_json); });
  };
  CHECK(check_output_file(dir / "new.json", json, OutputKind::results_json) == dir / "new.json");
  CHECK(check_output_file(dir / "old.json", json, OutputKind::results_json) == dir / "old.json");
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
  CHECK(check_output_file(dir / "a" / "b" / "r.csv", created, OutputKind::sweep_csv) == dir / "a" / "b" / "r.csv");
  CHECK_FALSE(fs::exists(dir / "a"));  // checking creates nothing
  CHECK(file_refusal(dir / "c.json" / "r.csv", created).find("not a folder") != std::string::npos);
}

TEST_CASE("write_output_file: folders only at commit, removed again when the write fails", "[report]") {
  const fs::path dir = scratch("write");
  const OutputRule csv{"--csv", {}, true};
  write_output_file(dir / "out" / "sweep" / "s.csv", "a,b\n", csv, OutputKind::sweep_csv);
  CHECK(fs::file_size(dir / "out" / "sweep" / "s.csv") == 4);
  // A write that fails after the check (a name too long for the temporary file beside it): the folders
  // made for it must go again.
  const std::string long_name(250, 'n');
  CHECK_FALSE(input_error([&] { write_output_file(dir / "x" / "y" / long_name, "t", csv, OutputKind::sweep_csv); }).empty());
  CHECK_FALSE(fs::exists(dir / "x"));
  {
    CreatedFolders made(dir / "p" / "q", "--csv");
    touch(dir / "p" / "kept.txt");
  }
  CHECK(fs::exists(dir / "p" / "kept.txt"));  // removed only while empty
  CHECK_FALSE(fs::exists(dir / "p" / "q"));
}


std::string read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

void write_file(const fs::path& p, const std::string& bytes) { std::ofstream(p, std::ios::binary) << bytes; }

// A PNG's chunk structure with no picture worth decoding: the signature, IHDR (1 × 1, RGB), an IDAT and
// IEND. The chunk walk is all the rule reads; a real screenshot is checked by the [gui] test.
std::string png_without_text() {
  std::string s("\x89PNG\r\n\x1a\n", 8);
  s += std::string("\0\0\0\x0d" "IHDR" "\0\0\0\x01\0\0\0\x01\x08\x02\0\0\0" "\x90\x77\x53\xde", 25);
  s += std::string("\0\0\0\x02" "IDAT" "\x78\x9c" "\0\0\0\0", 14);
  s += std::string("\0\0\0\0" "IEND" "\xae\x42\x60\x82", 12);
  return s;
}

// One kind of output: what attnlab writes under it (made by attnlab's own writer where the test can call
// it), the file name, and where to cut it so that its signature is incomplete.
struct KindSample {
  OutputKind kind;
  std::string file_name;
  std::string own;
  std::string cut_before;  // the truncated file ends just before this text's first occurrence
  bool any_size;           // a large file of this kind is still attnlab's (the head alone is read)
};

std::vector<KindSample> kind_samples() {
  const fs::path dir = scratch("kinds-own");
  const Results r = test::small_results();
  write_results_file(r, dir / "run.json", OutputRule{"--json", {}});
  const std::string spec = read_file(fs::path(ATTNLAB_SOURCE_DIR) / "sim" / "specs" / "h200.json");
  REQUIRE(spec.size() > 100);
  return {
      {OutputKind::results_json, "run.json", read_file(dir / "run.json"), "\"schema\"", false},
      {OutputKind::measurements_json, "m.json", sim::measurements_json({r}).dump(1) + "\n", "\"schema\"", false},
      {OutputKind::sweep_csv, "sweep.csv", to_csv(views::sweep_table({"block_c"}, {{"16"}}, {r})), "backend", true},
      {OutputKind::gpu_spec, "h200.json", spec, "\"tensor_tflops\"", false},
      {OutputKind::screenshot_png, "shot.png", with_software_text(png_without_text()), "attnlab", true},
  };
}

TEST_CASE("output file: each kind accepts attnlab's own output and refuses a foreign, empty, binary, truncated or large file",
          "[report]") {
  std::string binary;
  for (int i = 0; i < 1024; ++i) binary += static_cast<char>(i % 256);
  for (const KindSample& k : kind_samples()) {
    const fs::path dir = scratch("kinds"), p = dir / k.file_name;
    const OutputRule rule{"--out", {}};
    INFO(kind_name(k.kind));
    auto refusal_of = [&](const std::string& bytes) {
      write_file(p, bytes);
      return input_error([&] { check_output_file(p, rule, k.kind); });
    };
    CHECK(refusal_of(k.own).empty());
    const std::string msg = refusal_of("my notes\n");
    CHECK(test::starts(msg, "--out"));
    CHECK(msg.find(fmt::format("exists and is not {}: give a new file name or remove it; nothing was changed",
                               kind_name(k.kind))) != std::string::npos);
    CHECK(read_file(p) == "my notes\n");  // checking changes nothing
    CHECK_FALSE(refusal_of("").empty());
    CHECK_FALSE(refusal_of(binary).empty());
    CHECK_FALSE(refusal_of(std::string(3000, '\0')).empty());
    const size_t cut = k.own.find(k.cut_before);
    REQUIRE(cut != std::string::npos);
    CHECK_FALSE(refusal_of(k.own.substr(0, cut)).empty());
    // Large: attnlab's own start followed by zeros (a sparse file), beyond what any attnlab JSON reader
    // reads; and a large foreign file. Only a bounded start is read either way.
    write_file(p, k.own);
    fs::resize_file(p, kMaxJsonFileBytes + 1);
    CHECK(input_error([&] { check_output_file(p, rule, k.kind); }).empty() == k.any_size);
    write_file(p, "");
    fs::resize_file(p, 2 * kMaxJsonFileBytes);
    CHECK_FALSE(input_error([&] { check_output_file(p, rule, k.kind); }).empty());
    // Another kind's output is not this kind's.
    for (const KindSample& other : kind_samples())
      if (other.kind != k.kind) CHECK_FALSE(refusal_of(other.own).empty());
  }
}

TEST_CASE("write_output_file: a foreign file is left as it was; attnlab's own is replaced by a new file", "[report]") {
  for (const KindSample& k : kind_samples()) {
    const fs::path dir = scratch("kinds-write"), p = dir / k.file_name;
    const OutputRule rule{"--out", {}};
    INFO(kind_name(k.kind));
    write_file(p, "my notes\n");
    CHECK(test::starts(input_error([&] { write_output_file(p, k.own, rule, k.kind); }), "--out"));
    CHECK(read_file(p) == "my notes\n");
    write_file(p, k.own);
    struct stat before {};
    REQUIRE(stat(p.c_str(), &before) == 0);
    write_output_file(p, k.own + " ", rule, k.kind);
    CHECK(read_file(p) == k.own + " ");
    struct stat after {};
    REQUIRE(stat(p.c_str(), &after) == 0);
    CHECK(after.st_ino != before.st_ino);  // a new file renamed over the old one, not the old one rewritten
    CHECK(std::distance(fs::directory_iterator(dir), fs::directory_iterator()) == 1);  // no temporary left
  }
}

TEST_CASE("run --json: the file and its FILE.arrays folder follow the rules, checked before anything is written",
          "[report]") {
  const fs::path dir = scratch("results-file");
  const OutputRule rule{"--json", {}};
  const Results r = test::big_results();
  write_file(dir / "notes.txt", "my notes\n");
  const std::string msg = input_error([&] { write_results_file(r, dir / "notes.txt", rule); });
  CHECK(msg.find("exists and is not attnlab results JSON") != std::string::npos);
  CHECK(read_file(dir / "notes.txt") == "my notes\n");
  CHECK_FALSE(fs::exists(dir / "notes.txt.arrays"));  // the arrays are not written either
  // A foreign folder where the arrays go: refused before the run, the file not written.
  touch(dir / "run.json.arrays" / "mine.txt");
  CHECK(input_error([&] { check_results_file(dir / "run.json", rule); }).find("did not create") != std::string::npos);
  CHECK(test::starts(input_error([&] { write_results_file(r, dir / "run.json", rule); }), "--json"));
  CHECK_FALSE(fs::exists(dir / "run.json"));
  fs::remove_all(dir / "run.json.arrays");
  // attnlab's own: written, then replaced with its arrays.
  write_results_file(r, dir / "run.json", rule);
  REQUIRE(fs::is_regular_file(dir / "run.json.arrays" / std::string(kOutputMarker)));
  CHECK(input_error([&] { check_results_file(dir / "run.json", rule); }).empty());
  write_results_file(r, dir / "run.json", rule);
  CHECK(read_file(dir / "run.json").find("\"schema\": \"attnlab.results/2\"") != std::string::npos);
}

TEST_CASE("png_text: the Software chunk is inserted after IHDR with its CRC, and read back", "[report]") {
  const std::string plain = png_without_text();
  CHECK_FALSE(has_attnlab_software(plain));
  const std::string marked = with_software_text(plain);
  // length 16, "tEXt", "Software\0attnlab", CRC-32 0x41401f71 (zlib.crc32 of type and data)
  const std::string chunk("\0\0\0\x10" "tEXt" "Software\0attnlab" "\x41\x40\x1f\x71", 4 + 4 + 16 + 4);
  CHECK(marked == plain.substr(0, 33) + chunk + plain.substr(33));
  CHECK(has_attnlab_software(marked));
  std::string bad_crc = marked;
  bad_crc[33 + 4 + 4 + 16] ^= 1;
  CHECK_FALSE(has_attnlab_software(bad_crc));
  // The text after the image data is not looked for; a chunk claiming more bytes than there are ends the walk.
  CHECK_FALSE(has_attnlab_software(plain.substr(0, plain.size() - 12) + chunk + plain.substr(plain.size() - 12)));
  std::string huge_length = marked;
  huge_length[33] = '\xff';
  CHECK_FALSE(has_attnlab_software(huge_length));
  CHECK(with_software_text("not a png") == "not a png");
}

TEST_CASE("output file: a JSON signature is found at any nesting, never with a stack overflow", "[report]") {
  const fs::path dir = scratch("deep");
  const fs::path p = dir / "r.json";
  const OutputRule rule{"--json", {}};
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  write_file(p, R"({"config": {"a": )" + deep + R"(}, "schema": "attnlab.results/2"})");
  CHECK(input_error([&] { check_output_file(p, rule, OutputKind::results_json); }).empty());
  write_file(p, R"({"config": )" + std::string(200000, '{'));  // cut short
  CHECK_FALSE(input_error([&] { check_output_file(p, rule, OutputKind::results_json); }).empty());
  write_file(p, R"({"config": {"schema": "attnlab.results/2"}})");  // not at the top level
  CHECK_FALSE(input_error([&] { check_output_file(p, rule, OutputKind::results_json); }).empty());
  write_file(p, R"(["schema", "attnlab.results/2"])");
  CHECK_FALSE(input_error([&] { check_output_file(p, rule, OutputKind::results_json); }).empty());
  write_file(p, R"({"schema": "attnlab.results-fake"})");
  CHECK_FALSE(input_error([&] { check_output_file(p, rule, OutputKind::results_json); }).empty());
}

}  // namespace
}  // namespace attnlab::report
