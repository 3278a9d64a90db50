#include "app/report/atomic_dir.h"

#include "core/error.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <stdio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>

namespace attnlab::report {

namespace fs = std::filesystem;

namespace {

std::string random_suffix() {
  std::random_device rd;
  return fmt::format("{}-{}", rd() % 1000000, getpid());
}

}  // namespace

StagedDir::StagedDir(const fs::path& target) : target_(fs::absolute(target).lexically_normal()) {
  if (target_.filename().empty()) target_ = target_.parent_path();
  std::error_code ec;
  fs::create_directories(target_.parent_path(), ec);
  if (ec) fail_input(target.string(), "cannot create the parent folder: " + ec.message());
  if (fs::exists(target_) && !fs::is_directory(target_)) fail_input(target.string(), "exists and is not a folder");
  staging_ = target_.parent_path() / fmt::format(".{}.staging-{}", target_.filename().string(), random_suffix());
  fs::create_directory(staging_, ec);
  if (ec) fail_input(target.string(), "cannot create a staging folder beside it: " + ec.message());
}

StagedDir::~StagedDir() {
  std::error_code ec;
  if (!committed_) fs::remove_all(staging_, ec);
}

void StagedDir::commit() {
  if (fs::exists(target_)) {
    // Linux renameat2(RENAME_EXCHANGE): the target switches to the new content in one step; the old
    // content ends up under the staging name and is removed afterwards.
    if (renameat2(AT_FDCWD, staging_.c_str(), AT_FDCWD, target_.c_str(), RENAME_EXCHANGE) != 0)
      fail_input(target_.string(), std::string("cannot replace the folder: ") + std::strerror(errno));
    std::error_code ec;
    fs::remove_all(staging_, ec);
  } else if (std::rename(staging_.c_str(), target_.c_str()) != 0) {
    fail_input(target_.string(), std::string("cannot create the folder: ") + std::strerror(errno));
  }
  committed_ = true;
}

void write_file_atomically(const fs::path& path, const std::string& text) {
  const fs::path tmp = fmt::format("{}.tmp-{}", path.string(), random_suffix());
  {
    std::ofstream f(tmp, std::ios::binary);
    if (!f) fail_input(path.string(), "cannot write here");
    f << text;
    f.close();
    if (!f) {
      std::error_code ec;
      fs::remove(tmp, ec);
      fail_input(path.string(), "write failed (disk full?)");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::error_code ec;
    fs::remove(tmp, ec);
    fail_input(path.string(), std::string("cannot move the file into place: ") + std::strerror(errno));
  }
}

}  // namespace attnlab::report
