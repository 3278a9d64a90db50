#include "app/report/output_path.h"

#include "core/error.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

namespace attnlab::report {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void refuse(const OutputRule& rule, const fs::path& given, const std::string& why) {
  fail_input(rule.where, fmt::format("'{}': {}", echo_path(given.string()), why));
}

// The path as the writer will use it: absolute, lexically normal ("a/./b/../c" is "a/c"), no trailing
// separator except for the root.
fs::path normal_absolute(const fs::path& target, const OutputRule& rule) {
  if (target.empty()) fail_input(rule.where, "is empty: give a path");
  std::error_code ec;
  fs::path p = fs::absolute(target, ec).lexically_normal();
  if (ec) refuse(rule, target, "cannot be made absolute: " + ec.message());
  return p;
}

fs::path without_trailing_separator(const fs::path& p) {
  return !p.has_filename() && p != p.root_path() ? p.parent_path() : p;
}

// Where a path really is: the folders above it resolved (links followed, "." and ".." removed), the last
// component kept as it is. Folders that do not exist yet are kept lexically.
fs::path real_location(const fs::path& p) {
  if (p == p.root_path()) return p;
  std::error_code ec;
  const fs::path parent = fs::weakly_canonical(p.parent_path(), ec);
  return (ec ? p.parent_path() : parent) / p.filename();
}

fs::path real_input(const fs::path& input) {
  std::error_code ec;
  const fs::path p = fs::weakly_canonical(fs::absolute(input, ec), ec);
  return ec ? fs::path() : p;
}

bool within(const fs::path& inner, const fs::path& outer) {  // inner is outer or below it
  auto i = inner.begin();
  for (auto o = outer.begin(); o != outer.end(); ++o, ++i) {
    if (o->empty()) continue;  // a trailing separator
    if (i == inner.end() || *i != *o) return false;
  }
  return true;
}

fs::file_status link_status(const fs::path& p, const fs::path& given, const OutputRule& rule) {
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(p, ec);
  if (ec && st.type() != fs::file_type::not_found) refuse(rule, given, "cannot be read: " + ec.message());
  return st;
}

// The folder a new output goes into: it exists (or, when the rule allows, the nearest existing folder
// above it does), it is a folder, and it is writable.
void check_destination(const fs::path& folder, const fs::path& given, const OutputRule& rule) {
  fs::path p = folder;
  std::error_code ec;
  for (;;) {
    const fs::file_status st = fs::status(p, ec);
    if (fs::exists(st)) {
      if (!fs::is_directory(st)) refuse(rule, given, fmt::format("'{}' is not a folder", echo_path(p.string())));
      break;
    }
    if (ec && st.type() != fs::file_type::not_found) refuse(rule, given, "cannot be read: " + ec.message());
    if (!rule.create_folders)
      refuse(rule, given, fmt::format("the folder '{}' does not exist", echo_path(folder.string())));
    p = p.parent_path();
  }
  if (access(p.c_str(), W_OK) != 0)
    refuse(rule, given, fmt::format("the folder '{}' is not writable", echo_path(p.string())));
}

void check_not_protected(const fs::path& real, const fs::path& given, const OutputRule& rule) {
  if (real == real.root_path()) refuse(rule, given, "is the root folder: give a new folder");
  std::error_code ec;
  const fs::path cwd = fs::canonical(fs::current_path(ec), ec);
  if (ec) refuse(rule, given, "the working folder cannot be read: " + ec.message());
  if (within(cwd, real)) refuse(rule, given, "is the working folder or a folder above it: give a new folder");
  if (const char* home = std::getenv("HOME"); home && *home) {
    const fs::path h = real_input(home);
    if (!h.empty() && h == real) refuse(rule, given, "is the home folder: give a new folder");
  }
  for (const auto& input : rule.inputs) {
    const fs::path in = real_input(input);
    if (!in.empty() && within(in, real))
      refuse(rule, given,
             fmt::format("holds '{}', an input of this command: give another folder", echo_path(input.string())));
  }
}

bool is_empty_folder(const fs::path& p, const fs::path& given, const OutputRule& rule) {
  std::error_code ec;
  const fs::directory_iterator it(p, ec);
  if (ec) refuse(rule, given, "cannot be listed: " + ec.message());
  return it == fs::directory_iterator();
}

}  // namespace

fs::path check_output_folder(const fs::path& target, const OutputRule& rule) {
  const fs::path path = without_trailing_separator(normal_absolute(target, rule));
  const fs::file_status st = link_status(path, target, rule);
  if (fs::is_symlink(st))
    refuse(rule, target, "is a symbolic link: give the folder it points to (an output is never reached through a link)");
  if (fs::exists(st) && !fs::is_directory(st)) refuse(rule, target, "exists and is not a folder");
  check_not_protected(real_location(path), target, rule);
  if (!fs::exists(st)) {
    check_destination(path.parent_path(), target, rule);
    return path;
  }
  if (fs::is_regular_file(fs::symlink_status(path / kOutputMarker))) return path;  // made by attnlab
  if (is_empty_folder(path, target, rule)) return path;
  refuse(rule, target,
         fmt::format("is a folder attnlab did not create (no {} in it) and is not empty: give a new or empty folder; "
                     "nothing was changed",
                     kOutputMarker));
}

fs::path check_output_file(const fs::path& target, const OutputRule& rule, OutputKind kind) {
  const fs::path path = normal_absolute(target, rule);
  if (!path.has_filename()) refuse(rule, target, "names a folder: give a file path");
  const fs::file_status st = link_status(path, target, rule);
  if (fs::is_symlink(st)) refuse(rule, target, "is a symbolic link: give the file itself (an output is never written through a link)");
  if (fs::is_directory(st)) refuse(rule, target, "is a folder: give a file path");
  if (fs::exists(st) && !fs::is_regular_file(st)) refuse(rule, target, "is not a regular file (a FIFO, socket or device)");
  for (const auto& input : rule.inputs) {
    std::error_code ec;
    if (fs::exists(st) && fs::equivalent(path, input, ec))
      refuse(rule, target,
             fmt::format("is '{}', an input of this command: give another file", echo_path(input.string())));
    const fs::path in = real_input(input);
    if (!in.empty() && fs::is_directory(in, ec) && within(real_location(path), in))
      refuse(rule, target,
             fmt::format("is inside '{}', an input of this command: give another file", echo_path(input.string())));
  }
  check_destination(path.parent_path(), target, rule);
  if (fs::exists(st) && !is_own_output(path, kind))
    refuse(rule, target,
           fmt::format("exists and is not {}: give a new file name or remove it; nothing was changed", kind_name(kind)));
  return path;
}

CreatedFolders::CreatedFolders(const fs::path& folder, const std::string& where) {
  std::vector<fs::path> missing;  // deepest first
  std::error_code ec;
  for (fs::path p = folder; !p.empty() && !fs::exists(fs::status(p, ec)); p = p.parent_path()) {
    missing.push_back(p);
    if (p == p.root_path()) break;
  }
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    if (fs::create_directory(*it, ec)) {
      created_.push_back(*it);
    } else if (ec) {
      remove_created();  // the ones made so far go again
      fail_input(where, fmt::format("'{}': cannot create the folder: {}", echo_path(it->string()), ec.message()));
    }
  }
}

CreatedFolders::~CreatedFolders() { remove_created(); }

void CreatedFolders::remove_created() {
  std::error_code ec;
  for (auto it = created_.rbegin(); it != created_.rend(); ++it) fs::remove(*it, ec);  // fails while not empty
  created_.clear();
}

}  // namespace attnlab::report
