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

[[noreturn]] void refuse(const OutputRule& rule, const fs::path& given, const std::string& why) {
  fail_input(rule.where, fmt::format("'{}': {}", echo_path(given.string()), why));
}

bool marked(const fs::path& folder) { return fs::is_regular_file(fs::symlink_status(folder / kOutputMarker)); }

}  // namespace

StagedDir::StagedDir(const fs::path& target, const OutputRule& rule)
    : given_(target), rule_(rule), target_(check_output_folder(target, rule)) {
  if (rule.create_folders) parents_.emplace(target_.parent_path(), rule.where);
  staging_ = target_.parent_path() / fmt::format(".{}.staging-{}", target_.filename().string(), random_suffix());
  std::error_code ec;
  if (!fs::create_directory(staging_, ec) || ec)
    refuse(rule_, given_, "cannot create a staging folder beside it: " + (ec ? ec.message() : "it exists"));
  std::ofstream marker(staging_ / kOutputMarker);
  marker << "Written by attnlab, which replaces this folder whole when it writes here again.\n";
  marker.close();
  if (!marker) {
    fs::remove_all(staging_, ec);
    refuse(rule_, given_, "cannot write into a staging folder beside it");
  }
}

StagedDir::~StagedDir() {
  std::error_code ec;
  if (!committed_) fs::remove_all(staging_, ec);
}  // parents_ then removes the folders made for it, if still empty

void StagedDir::commit() {
  check_output_folder(given_, rule_);  // nothing may have turned it into a foreign folder since
  if (fs::is_directory(fs::symlink_status(target_)) && marked(target_)) {
    // Linux renameat2(RENAME_EXCHANGE): the target switches to the new content in one step; the old
    // content ends up under the staging name and is removed afterwards.
    if (renameat2(AT_FDCWD, staging_.c_str(), AT_FDCWD, target_.c_str(), RENAME_EXCHANGE) != 0)
      refuse(rule_, given_, std::string("cannot replace the folder: ") + std::strerror(errno));
    std::error_code ec;
    fs::remove_all(staging_, ec);
  } else if (std::rename(staging_.c_str(), target_.c_str()) != 0) {  // a new path, or an empty folder
    refuse(rule_, given_, std::string("cannot create the folder: ") + std::strerror(errno));
  }
  committed_ = true;
  if (parents_) parents_->keep();
}

void write_output_file(const fs::path& target, const std::string& text, const OutputRule& rule, OutputKind kind) {
  const fs::path path = check_output_file(target, rule, kind);  // again at commit: it may have changed meanwhile
  std::optional<CreatedFolders> folders;
  if (rule.create_folders) folders.emplace(path.parent_path(), rule.where);
  const fs::path tmp = path.parent_path() / fmt::format(".{}.tmp-{}", path.filename().string(), random_suffix());
  std::error_code ec;
  {
    std::ofstream f(tmp, std::ios::binary);
    if (!f) refuse(rule, target, "cannot write here");
    f << text;
    f.close();
    if (!f) {
      fs::remove(tmp, ec);
      refuse(rule, target, "write failed (disk full?)");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    fs::remove(tmp, ec);
    refuse(rule, target, std::string("cannot move the file into place: ") + std::strerror(err));
  }
  if (folders) folders->keep();
}

}  // namespace attnlab::report
