// attnlab fuzzing: the scratch folder and invariant checks shared by the targets (fuzz_support.h).
#include "tests/fuzz/fuzz_support.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <system_error>

namespace attnlab::fuzz {

namespace fs = std::filesystem;

namespace {

struct Scratch {
  std::string path;
  Scratch() {
    std::string pattern = (fs::temp_directory_path() / "attnlab-fuzz-XXXXXX").string();
    if (!::mkdtemp(pattern.data())) {
      std::perror("attnlab fuzz: mkdtemp");
      std::abort();
    }
    path = pattern;
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

}  // namespace

const std::string& scratch_dir() {
  static const Scratch s;
  return s.path;
}

std::string write_scratch(const std::string& name, const uint8_t* data, size_t size) {
  const std::string path = scratch_dir() + "/" + name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  out.close();
  if (!out) {
    std::fprintf(stderr, "attnlab fuzz: cannot write %s\n", path.c_str());
    std::abort();
  }
  return path;
}

bool verbose() {
  static const bool on = std::getenv("ATTNLAB_FUZZ_VERBOSE") != nullptr;
  return on;
}

void check(bool ok, const std::string& what) {
  if (ok) return;
  std::fprintf(stderr, "attnlab fuzz: invariant broken: %s\n", what.c_str());
  std::abort();
}

}  // namespace attnlab::fuzz
