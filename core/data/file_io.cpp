// attnlab data: byte-level file access for the loaders and writers (see file_io.h).
#include "core/data/file_io.h"

#include "core/error.h"

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <system_error>

namespace attnlab::data::detail {

namespace fs = std::filesystem;

InFile::InFile(const std::string& path) : path_(echo_path(path)) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (st.type() == fs::file_type::not_found) fail_input(path_, "file not found");
  if (ec == std::errc::too_many_symbolic_link_levels)
    fail_input(path_, "is a symbolic link loop (too many levels of symbolic links), not a file");
  if (ec) fail_input(path_, "cannot be read (" + ec.message() + ")");
  if (st.type() == fs::file_type::directory) fail_input(path_, "is a folder, expected a file");
  if (st.type() != fs::file_type::regular)
    fail_input(path_, "is not a regular file (a FIFO, socket or device is never read: it could block)");
  size_ = fs::file_size(path, ec);
  if (ec) fail_input(path_, "cannot be read (" + ec.message() + ")");
  in_.open(path, std::ios::binary);
  if (!in_) fail_input(path_, "cannot be opened for reading (check permissions)");
}

void InFile::require(uint64_t offset, uint64_t n, const std::string& what) const {
  // Written so that no sum can wrap: offset and n come from untrusted headers.
  if (offset > size_ || n > size_ - offset)
    fail_input(path_, fmt::format("file is truncated: {} needs bytes [{}, {}) but the file has {} bytes", what, offset,
                                  n > UINT64_MAX - offset ? UINT64_MAX : offset + n, size_));
}

void InFile::read(uint64_t offset, void* dst, uint64_t n, const std::string& what) {
  require(offset, n, what);
  if (n == 0) return;
  in_.clear();
  in_.seekg(static_cast<std::streamoff>(offset));
  in_.read(static_cast<char*>(dst), static_cast<std::streamsize>(n));
  // Only reachable when the file shrinks or fails underneath us after the size check.
  if (!in_ || static_cast<uint64_t>(in_.gcount()) != n)
    fail_input(path_, fmt::format("read of {} failed (file changed or unreadable)", what));
}

OutFile::OutFile(const std::string& path)
    : path_(path), tmp_(fmt::format("{}.tmp{}", path, static_cast<long>(::getpid()))) {
  out_.open(tmp_, std::ios::binary | std::ios::trunc);
  if (!out_) fail_input(path, "cannot be written (does the folder exist and is it writable?)");
}

OutFile::~OutFile() {
  if (committed_) return;
  out_.close();
  std::error_code ec;
  fs::remove(tmp_, ec);  // best effort: a destructor must not throw
}

void OutFile::write(const void* data, uint64_t n) {
  out_.write(static_cast<const char*>(data), static_cast<std::streamsize>(n));
  if (!out_) fail_input(path_, "write failed (disk full?)");
}

void OutFile::commit() {
  out_.close();
  if (!out_) fail_input(path_, "write failed (disk full?)");
  std::error_code ec;
  fs::rename(tmp_, path_, ec);
  if (ec) fail_input(path_, "cannot be written (" + ec.message() + ")");
  committed_ = true;
}

}  // namespace attnlab::data::detail
