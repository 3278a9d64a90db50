// attnlab data: load_qkv, which picks the reader from what the path is (see loaders.h).
#include "core/data/loaders.h"

#include <filesystem>
#include <system_error>

namespace attnlab::data {

QKV load_qkv(const std::string& path) {
  std::error_code ec;
  // A missing path goes to load_safetensors, which reports it as a missing file.
  if (std::filesystem::is_directory(path, ec)) return load_npy_folder(path);
  return load_safetensors(path);
}

}  // namespace attnlab::data
