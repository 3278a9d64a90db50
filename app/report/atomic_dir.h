// attnlab report: write a folder or a file all at once, only where output_path.h allows. Files go into a
// hidden staging folder (or temporary file) beside the target; commit() swaps it into place in one
// rename, so a failure or an interruption at any moment leaves the previous content (if any) intact and
// never a half-written one under the target's name. Folders created above the target for it are removed
// again when the write fails.
#pragma once

#include "app/report/output_path.h"

#include <filesystem>
#include <optional>
#include <string>

namespace attnlab::report {

class StagedDir {
 public:
  // Checks `target` (check_output_folder), creates the missing folders above it when the rule allows,
  // the staging folder and the marker inside it. Throws InputError, having changed nothing.
  StagedDir(const std::filesystem::path& target, const OutputRule& rule);
  ~StagedDir();  // removes the staging folder (and the folders made for it) unless committed
  StagedDir(const StagedDir&) = delete;
  StagedDir& operator=(const StagedDir&) = delete;

  const std::filesystem::path& path() const { return staging_; }   // write files here
  const std::filesystem::path& target() const { return target_; }  // absolute
  // Checks the target again, then replaces it in one step: rename(2) over a new path or an empty folder
  // (which fails if the folder filled up meanwhile), renameat2(RENAME_EXCHANGE) with a marked folder.
  void commit();

 private:
  std::filesystem::path given_;
  OutputRule rule_;
  std::filesystem::path target_, staging_;
  std::optional<CreatedFolders> parents_;
  bool committed_ = false;
};

// Writes `text`, output of `kind`, to `target` through a temporary file renamed over it, after checking
// the target again (check_output_file: new, or attnlab's own output of that kind); creates the missing
// folders above it only when the rule allows, and removes them again if the write fails.
void write_output_file(const std::filesystem::path& target, const std::string& text, const OutputRule& rule,
                       OutputKind kind);

}  // namespace attnlab::report
