// attnlab data: byte-level file access for the loaders and writers (internal).
//
// InFile knows the real file size before anything is read, so a loader can check every size a header
// claims against it and never allocate for bytes that are not there. OutFile writes to a temporary
// sibling and renames it into place on commit(), so a failed save never leaves a half-written file.
#pragma once

#include <cstdint>
#include <fstream>
#include <string>

namespace attnlab::data::detail {

class InFile {
 public:
  // Fails (InputError naming the path) when the path is missing, not a regular file, or unreadable.
  explicit InFile(const std::string& path);

  const std::string& path() const { return path_; }
  uint64_t size() const { return size_; }

  // Fails as "truncated" unless [offset, offset + n) lies inside the file; `what` names the part.
  void require(uint64_t offset, uint64_t n, const std::string& what) const;
  // Reads [offset, offset + n) into dst, after require().
  void read(uint64_t offset, void* dst, uint64_t n, const std::string& what);

 private:
  std::string path_;
  uint64_t size_ = 0;
  std::ifstream in_;
};

class OutFile {
 public:
  explicit OutFile(const std::string& path);  // fails when the temporary cannot be created
  ~OutFile();                                 // removes the temporary unless committed
  OutFile(const OutFile&) = delete;
  OutFile& operator=(const OutFile&) = delete;

  void write(const void* data, uint64_t n);
  void commit();  // flushes, closes and renames onto the final path

 private:
  std::string path_, tmp_;
  std::ofstream out_;
  bool committed_ = false;
};

}  // namespace attnlab::data::detail
