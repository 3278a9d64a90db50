// attnlab data: load_qkv, which picks the reader from what the path is (see loaders.h).
#include "core/data/loaders.h"

#include <filesystem>
#include <system_error>

namespace attnlab::data {

QKV load_qkv(const std::string& path) {
  std::error_code ec;
  // A missing path (or a symlink loop) goes to load_safetensors, whose InFile reports it.
  if (std::filesystem::is_directory(path, ec)) return load_npy_folder(path);
  return load_safetensors(path);
}

QkvShapes read_qkv_shapes(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return read_npy_folder_shapes(path);
  return read_safetensors_shapes(path);
}

}  // namespace attnlab::data
