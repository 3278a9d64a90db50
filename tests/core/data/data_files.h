// attnlab tests: helpers that compose Q/K/V files byte by byte, so the data tests control every header
// field (including broken ones) independently of the writers under test.
#pragma once

#include "core/error.h"
#include "core/formats/half.h"
#include "core/tensor.h"
#include "tests/catch.h"

#include <nlohmann/json.hpp>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace attnlab::test {

namespace fs = std::filesystem;

// An empty folder of its own under the build's temp folder (pid-suffixed: ctest runs cases in parallel).
inline fs::path fresh_dir(const std::string& name) {
  const fs::path d = fs::path(ATTNLAB_TEST_TMP) / "data" / (name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// How a loader's message names `path`: echo_path (core/error.h: escaped, cut after 200 characters), then
// ": ". Tests look for this rather than for the bare file name, which the cut would drop were the build
// folder deeper still.
inline std::string named(const fs::path& path) { return echo_path(path.string()) + ": "; }

inline void write_bytes(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out.good());
}

inline std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline std::string le(uint64_t v, int bytes) {
  std::string s;
  for (int i = 0; i < bytes; ++i) s += static_cast<char>((v >> (8 * i)) & 0xff);
  return s;
}

inline std::string f32_bytes(const std::vector<float>& v) {
  std::string s(v.size() * 4, '\0');
  std::memcpy(s.data(), v.data(), s.size());  // little-endian host, as the loaders assume
  return s;
}

inline std::string u16_bytes(const std::vector<uint16_t>& v) {
  std::string s;
  for (uint16_t x : v) s += le(x, 2);
  return s;
}

inline std::vector<float> iota_values(size_t n, float scale = 0.25f) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = scale * static_cast<float>(i) - 1.0f;
  return v;
}

// One safetensors entry; offsets default to the next free bytes, `offsets` overrides them.
struct StEntry {
  std::string name, dtype;
  nlohmann::json shape;
  std::string data;
  nlohmann::json offsets = nullptr;
};

inline std::string safetensors_bytes(const std::vector<StEntry>& entries, const nlohmann::json& metadata = nullptr) {
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.is_null()) header["__metadata__"] = metadata;
  std::string data;
  for (const StEntry& e : entries) {
    const nlohmann::json offsets =
        e.offsets.is_null() ? nlohmann::json{data.size(), data.size() + e.data.size()} : e.offsets;
    header[e.name] = {{"dtype", e.dtype}, {"shape", e.shape}, {"data_offsets", offsets}};
    data += e.data;
  }
  const std::string text = header.dump();
  return le(text.size(), 8) + text + data;
}

// A well-formed F32 q (1, 4, 3, 2), k and v (1, 2, 5, 2); tests then break one thing.
inline std::vector<StEntry> good_entries() {
  return {{"q", "F32", {1, 4, 3, 2}, f32_bytes(iota_values(24))},
          {"k", "F32", {1, 2, 5, 2}, f32_bytes(iota_values(20, 0.5f))},
          {"v", "F32", {1, 2, 5, 2}, f32_bytes(iota_values(20, -0.125f))}};
}

// An .npy file: magic, version, header length, `dict` padded to 64 bytes with '\n' last, then data.
inline std::string npy_bytes(const std::string& dict, const std::string& data, int major = 1) {
  const size_t prefix = major == 1 ? 10 : 12;
  std::string header = dict;
  while ((prefix + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  return std::string("\x93NUMPY", 6) + static_cast<char>(major) + '\0' + le(header.size(), major == 1 ? 2 : 4) +
         header + data;
}

inline std::string npy_dict(const std::string& descr, const std::string& shape, const char* fortran = "False") {
  return "{'descr': '" + descr + "', 'fortran_order': " + fortran + ", 'shape': " + shape + ", }";
}

// Writes a well-formed f32 npy folder matching good_entries().
inline void write_good_npy_folder(const fs::path& dir) {
  write_bytes(dir / "q.npy", npy_bytes(npy_dict("<f4", "(1, 4, 3, 2)"), f32_bytes(iota_values(24))));
  write_bytes(dir / "k.npy", npy_bytes(npy_dict("<f4", "(1, 2, 5, 2)"), f32_bytes(iota_values(20, 0.5f))));
  write_bytes(dir / "v.npy", npy_bytes(npy_dict("<f4", "(1, 2, 5, 2)"), f32_bytes(iota_values(20, -0.125f))));
}

// Requires f() to throw an InputError whose one-line message contains every one of `parts`.
template <class F>
void require_input_error(F&& f, const std::vector<std::string>& parts) {
  REQUIRE_THROWS_AS(f(), InputError);
  try {
    f();
  } catch (const InputError& e) {
    const std::string msg = e.what();
    INFO("message: " << msg);
    for (const std::string& p : parts) CHECK(msg.find(p) != std::string::npos);
    CHECK(msg.find('\n') == std::string::npos);
  }
}

}  // namespace attnlab::test
