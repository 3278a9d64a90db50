// The layout of a Q/K/V file before its data: safetensors data_offsets must tile the data section (the
// spec: "entirely indexed, and cannot contain holes"), header-only shape reads check everything but read no
// data, and the runner refuses a problem too large for the memory limit from the headers alone — an
// 8 GiB sparse file costs no allocation.
#include "core/config.h"
#include "core/data/loaders.h"
#include "core/runner.h"
#include "tests/catch.h"
#include "tests/core/data/data_files.h"
#include "tests/support/scoped_env.h"

#include <sys/resource.h>

#include <fstream>

namespace attnlab::data {
namespace ATTNLAB_FILE_LOCAL {

using namespace attnlab::test;
using nlohmann::json;

std::string st_file(const fs::path& dir, const std::string& name, const std::vector<StEntry>& entries,
                    const std::string& tail = "") {
  const fs::path path = dir / name;
  write_bytes(path, safetensors_bytes(entries) + tail);
  return path.string();
}

// A safetensors file of zeros (a sparse hole) with these F16 entries laid out back to back.
std::string sparse_f16(const fs::path& path, const std::vector<std::pair<std::string, std::vector<uint64_t>>>& shapes) {
  json header = json::object();
  uint64_t offset = 0;
  for (const auto& [name, shape] : shapes) {
    uint64_t bytes = 2;
    for (uint64_t x : shape) bytes *= x;
    header[name] = {{"dtype", "F16"}, {"shape", shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  write_bytes(path, le(text.size(), 8) + text);
  fs::resize_file(path, 8 + text.size() + offset);  // the data: a hole that reads as zeros
  return path.string();
}

long peak_rss_kib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

TEST_CASE("safetensors data_offsets must tile the data section exactly", "[data]") {
  const fs::path dir = fresh_dir("layout_tiles");
  CHECK_NOTHROW(load_qkv(st_file(dir, "good.safetensors", good_entries())));

  auto entries = good_entries();  // v the same bytes as k
  const std::string overlap =
      st_file(dir, "overlap.safetensors", {entries[0], entries[1], {"v", "F32", {1, 2, 5, 2}, "", json{96, 176}}});
  require_input_error([&] { load_qkv(overlap); }, {named(overlap), "overlap tensor", "must not share bytes"});
  require_input_error([&] { read_qkv_shapes(overlap); }, {named(overlap), "overlap"});

  entries = good_entries();  // 8 bytes nobody indexes between q and k
  entries[0].data += std::string(8, '\0');
  entries[0].offsets = {0, 96};
  require_input_error([&] { load_qkv(st_file(dir, "gap.safetensors", entries)); },
                      {named(dir / "gap.safetensors") + "bytes [96, 104)", "belong to no tensor"});
  require_input_error([&] { load_qkv(st_file(dir, "tail.safetensors", good_entries(), "polyglot")); },
                      {named(dir / "tail.safetensors") + "bytes [256, 264)", "belong to no tensor"});

  // An extra tensor (ignored otherwise) still takes part: overlapping q is refused, indexing the tail is fine.
  entries = good_entries();
  entries.push_back({"extra", "I32", {2}, "", json{0, 8}});
  require_input_error([&] { load_qkv(st_file(dir, "extra.safetensors", entries)); }, {"tensor 'extra'", "overlap"});
  entries = good_entries();
  entries.push_back({"extra", "I32", {2}, std::string(8, '\0')});
  CHECK_NOTHROW(load_qkv(st_file(dir, "extra_ok.safetensors", entries)));

  // The header goes through the guarded parser: a NUL inside it, or nesting past 64.
  const std::string nul("{\"q\": 1}\0  ", 11);
  write_bytes(dir / "nul.safetensors", le(nul.size(), 8) + nul);
  require_input_error([&] { load_qkv((dir / "nul.safetensors").string()); },
                      {named(dir / "nul.safetensors") + "header", "NUL byte"});
  const std::string deep = "{\"q\": " + std::string(100, '[') + std::string(100, ']') + "}";
  write_bytes(dir / "deep.safetensors", le(deep.size(), 8) + deep);
  require_input_error([&] { load_qkv((dir / "deep.safetensors").string()); },
                      {named(dir / "deep.safetensors") + "header", "deeper than 64"});
}

TEST_CASE("shapes come from the headers alone, with every check the loaders make", "[data]") {
  const fs::path dir = fresh_dir("layout_shapes");
  const QkvShapes s = read_qkv_shapes(st_file(dir, "good.safetensors", good_entries()));
  CHECK(s.q == Shape4{1, 4, 3, 2});
  CHECK(s.k == Shape4{1, 2, 5, 2});
  CHECK(s.v == s.k);
  fs::create_directories(dir / "npy");
  write_good_npy_folder(dir / "npy");
  CHECK(read_qkv_shapes((dir / "npy").string()).q == Shape4{1, 4, 3, 2});

  // Truncation and header/data disagreement are found without reading the data.
  const std::string full = safetensors_bytes(good_entries());
  write_bytes(dir / "cut.safetensors", full.substr(0, full.size() - 4));
  require_input_error([&] { read_qkv_shapes((dir / "cut.safetensors").string()); },
                      {named(dir / "cut.safetensors"), "truncated"});
  write_bytes(dir / "npy" / "k.npy", npy_bytes(npy_dict("<f4", "(1, 2, 5, 2)"), f32_bytes(iota_values(21))));
  require_input_error([&] { read_qkv_shapes((dir / "npy").string()); },
                      {named(dir / "npy" / "k.npy"), "follow the data"});
  write_bytes(dir / "npy" / "k.npy", npy_bytes(npy_dict("<f4", "(1, 3, 5, 2)"), f32_bytes(iota_values(30))));
  require_input_error([&] { read_qkv_shapes((dir / "npy").string()); },
                      {named(dir / "npy"), "k and v must have the same shape"});
}

TEST_CASE("a data file too large for the memory limit is refused before its data is read", "[data][runner]") {
  const fs::path dir = fresh_dir("layout_memory");
  // k and v (1, 64, 131072, 256) F16: 4 GiB each on disk (a hole), 8 GiB each as FP32 tensors.
  const std::string path = sparse_f16(dir / "big.safetensors", {{"q", {1, 64, 1, 256}},
                                                                {"k", {1, 64, 131072, 256}},
                                                                {"v", {1, 64, 131072, 256}}});
  ScopedEnv limit("ATTNLAB_MAX_MEMORY_GB", "0.25");
  const long before = peak_rss_kib();
  const Experiment e = parse_experiment(json{{"data", {{"file", path}}}, {"variants", {"naive"}}});
  CHECK(e.problem.kv_len == 131072);
  require_input_error([&] { Runner().run(e); },
                      {"problem: needs about", "0.25 GiB allowed", "data.file " + echo_path(path)});
  // Nothing of the tensors was allocated: the process's peak grew by far less than one of them.
  CHECK(peak_rss_kib() - before < 100 * 1024);
}

}  // namespace
}  // namespace attnlab::data
