// attnlab report: write a folder all at once. Files go into a hidden staging folder beside the target;
// commit() swaps it into place in one rename, so a failure or an interruption at any moment leaves the
// previous folder (if any) intact and never a half-written one under the target's name.
#pragma once

#include <filesystem>
#include <string>

namespace attnlab::report {

class StagedDir {
 public:
  explicit StagedDir(const std::filesystem::path& target);  // throws InputError if it cannot stage
  ~StagedDir();                                              // removes the staging folder unless committed
  StagedDir(const StagedDir&) = delete;
  StagedDir& operator=(const StagedDir&) = delete;

  const std::filesystem::path& path() const { return staging_; }  // write files here
  void commit();                                                   // atomically replaces the target

 private:
  std::filesystem::path target_, staging_;
  bool committed_ = false;
};

// Writes `text` to `path` through a temporary file renamed over it.
void write_file_atomically(const std::filesystem::path& path, const std::string& text);

}  // namespace attnlab::report
