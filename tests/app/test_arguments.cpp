// Command-line values checked while parsing (app/cli/arguments.h): input files must be regular files
// (a folder, FIFO or missing path is refused by stat alone), names of GPUs and models are short plain
// names, numbers are whole and within 64 bits; every message echoes the value on one line, cut.
#include "app/cli/arguments.h"
#include "tests/catch.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>

namespace attnlab::cli {
namespace ATTNLAB_FILE_LOCAL {

namespace fs = std::filesystem;

bool has(const std::string& msg, const std::string& part) {
  INFO(msg);
  return msg.find(part) != std::string::npos;
}

TEST_CASE("check_input_file: regular files only", "[cli]") {
  const fs::path dir = fs::path(ATTNLAB_TEST_TMP) / "arguments";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "c.json") << "{}";
  CHECK(check_input_file((dir / "c.json").string()).empty());
  fs::create_symlink(dir / "c.json", dir / "link.json");
  CHECK(check_input_file((dir / "link.json").string()).empty());  // an input may be reached through a link
  CHECK(has(check_input_file("."), "is a folder"));
  CHECK(has(check_input_file(dir.string()), "is a folder"));
  CHECK(has(check_input_file(""), "is empty"));
  CHECK(has(check_input_file((dir / "missing.json").string()), "No such file"));
  REQUIRE(mkfifo((dir / "fifo").c_str(), 0600) == 0);
  CHECK(has(check_input_file((dir / "fifo").string()), "not a regular file"));  // and it did not block
  const std::string long_path = "a\n" + std::string(100000, 'x');
  const std::string msg = check_input_file(long_path);
  CHECK(has(msg, "a\\nxxx"));
  CHECK(has(msg, "bytes in all"));
  CHECK(msg.size() < 300);
}

TEST_CASE("check_name: GPU and model names", "[cli]") {
  CHECK(check_name("h100-sxm5", "a GPU id", "").empty());
  CHECK(check_name("llama-3-8b", "a model name", "").empty());
  CHECK(check_name("A_b.1", "a GPU id", "").empty());
  CHECK(check_name(std::string(64, 'a'), "a GPU id", "").empty());
  CHECK(has(check_name(std::string(65, 'a'), "a GPU id", "attnlab gpus lists them"), "attnlab gpus lists them"));
  CHECK(has(check_name(std::string(300, 'a'), "a GPU id", ""), "bytes in all"));
  CHECK(has(check_name("h100\nsxm5", "a GPU id", ""), "'h100\\nsxm5'"));
  for (const char* bad : {"", ".hidden", "..", "../specs/h100", "a/b", "a b", "é"}) CHECK_FALSE(check_name(bad, "a GPU id", "").empty());
}

TEST_CASE("check_gpu_id, check_model_id: an id, or a path to a .json file, nothing else", "[cli]") {
  const fs::path dir = fs::path(ATTNLAB_TEST_TMP) / "arguments_ids";
  fs::create_directories(dir);
  std::ofstream(dir / "mine.json") << "{}";
  CHECK(check_gpu_id("h100-sxm5").empty());
  CHECK(check_gpu_id("auto").empty());
  CHECK(check_gpu_id((dir / "mine.json").string()).empty());  // read, and checked as a spec, later
  CHECK(has(check_gpu_id((dir / "missing.json").string()), "No such file"));
  // A path that does not end in .json is neither: refused here, before anything is opened.
  for (const char* climbs : {"../../../../etc/passwd", "/etc/passwd", "specs/../../x"}) {
    CHECK(has(check_gpu_id(climbs), "is neither a GPU id"));
    CHECK(has(check_gpu_id(climbs), "nor a path to a .json file"));
    CHECK(has(check_model_id(climbs), "is neither a model id"));
  }
  CHECK(has(check_gpu_id("a..b"), "is neither a GPU id"));  // a name that passes check_name but is no id
  CHECK(has(check_model_id("a b"), "is not a model name"));
}

TEST_CASE("check_whole_number: digits within 64 bits", "[cli]") {
  for (const char* good : {"0", "4096", "-3", "+7", "9223372036854775807"}) CHECK(check_whole_number(good).empty());
  for (const char* bad : {"", "abc", "12abc", "1e3", "1.5", " 1", "+", "-"}) CHECK(has(check_whole_number(bad), "not a whole number"));
  CHECK(has(check_whole_number("99999999999999999999"), "beyond the range"));
  CHECK(has(check_whole_number("9223372036854775808"), "beyond the range"));
}

}  // namespace
}  // namespace attnlab::cli
