// attnlab report: may the tool write here? The one rule every command applies to the paths it writes
// (docs/results.md, "Outputs never destroy inputs"), checked before any work starts and again at commit time.
//
// An output folder (report --out) is replaced whole, so it must be a folder attnlab made itself (the
// marker file kOutputMarker inside), an empty folder, or a path that does not exist yet. Refused: an
// existing non-empty folder without the marker, the working folder or any folder above it (`/`
// included), $HOME, a folder holding one of the command's inputs, and a symbolic link as the last
// component (links above it are followed).
// An output file (run --json, sweep --csv, bench --out, the spec calibrate writes, attnlab-gui
// --screenshot) may be new, or an existing file that is attnlab's own output of the kind the option
// writes (output_kinds.h: results JSON by its schema, a sweep CSV by its header, a PNG by its Software
// text, …), which is replaced atomically. Refused: any other existing file (someone's notes.txt), a
// folder, a link, a FIFO or device, one of the command's inputs or a path inside an input folder, and a
// path whose folder is missing (unless the command creates it: a default path such as out/sweep/).
// Every refusal is an InputError "<where>: '<path>': <rule>" with the path echoed (core/error.h).
#pragma once

#include "app/report/output_kinds.h"

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace attnlab::report {

// The file that marks a folder attnlab created (and may therefore replace).
inline constexpr std::string_view kOutputMarker = ".attnlab-report";

struct OutputRule {
  std::string where;                          // the option that named the path, for messages ("--out")
  std::vector<std::filesystem::path> inputs;  // files the command reads: never overwritten, never inside
  bool create_folders = false;                // missing folders above the path may be created (at commit)
};

// Checks an output folder; returns its absolute, lexically normal path (what the writer acts on).
std::filesystem::path check_output_folder(const std::filesystem::path& target, const OutputRule& rule);

// Checks an output file that will hold output of `kind`; returns its absolute, lexically normal path.
std::filesystem::path check_output_file(const std::filesystem::path& target, const OutputRule& rule, OutputKind kind);

// Creates a folder and the missing ones above it; removes every folder it created again (deepest first,
// only while empty) unless keep() was called: a failure leaves nothing behind.
class CreatedFolders {
 public:
  CreatedFolders(const std::filesystem::path& folder, const std::string& where);  // throws InputError
  ~CreatedFolders();
  CreatedFolders(const CreatedFolders&) = delete;
  CreatedFolders& operator=(const CreatedFolders&) = delete;
  void keep() { created_.clear(); }

 private:
  void remove_created();
  std::vector<std::filesystem::path> created_;  // outermost first
};

}  // namespace attnlab::report
