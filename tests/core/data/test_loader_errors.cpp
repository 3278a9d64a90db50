// Q/K/V loaders and writers on bad input: every class of problem is an InputError whose one-line
// message names the file (and tensor) and the rule, never a crash, an out-of-bounds read or a huge
// allocation driven by a lying header.
#include "core/data/loaders.h"
#include "tests/catch.h"
#include "tests/core/data/data_files.h"

#include <sys/stat.h>

#include <cmath>
#include <limits>

namespace attnlab::data {
namespace ATTNLAB_FILE_LOCAL {

using namespace attnlab::test;
using nlohmann::json;

// Writes `entries` to <dir>/<name> and returns the path.
std::string st_file(const fs::path& dir, const std::string& name, const std::vector<StEntry>& entries) {
  const fs::path path = dir / name;
  write_bytes(path, safetensors_bytes(entries));
  return path.string();
}

QKV small_qkv() { return {Tensor({1, 4, 3, 2}, 0.5f), Tensor({1, 2, 5, 2}, 1.0f), Tensor({1, 2, 5, 2}, -1.0f)}; }

TEST_CASE("missing or unreadable files and folders", "[data]") {
  const fs::path dir = fresh_dir("err_missing");
  const std::string nofile = (dir / "nope.safetensors").string();
  require_input_error([&] { load_safetensors(nofile); }, {named(nofile), "not found"});
  require_input_error([&] { load_qkv(nofile); }, {named(nofile), "not found"});
  require_input_error([&] { load_safetensors(dir.string()); }, {named(dir), "is a folder"});

  const std::string nodir = (dir / "no_folder").string();
  require_input_error([&] { load_npy_folder(nodir); }, {named(nodir), "folder not found"});
  write_bytes(dir / "plain.txt", "hello");
  require_input_error([&] { load_npy_folder((dir / "plain.txt").string()); },
                      {named(dir / "plain.txt"), "not a folder"});

  const fs::path locked = dir / "locked.safetensors";
  write_bytes(locked, safetensors_bytes(good_entries()));
  ::chmod(locked.c_str(), 0);
  if (std::ifstream(locked).is_open()) {
    WARN("running with privileges that ignore file permissions: unreadable-file case not exercised");
  } else {
    require_input_error([&] { load_safetensors(locked.string()); }, {named(locked), "cannot be opened"});
  }
  ::chmod(locked.c_str(), 0600);
}

TEST_CASE("truncated safetensors files", "[data]") {
  const fs::path dir = fresh_dir("err_st_trunc");
  const std::string full = safetensors_bytes(good_entries());

  write_bytes(dir / "tiny.safetensors", full.substr(0, 5));
  require_input_error([&] { load_qkv((dir / "tiny.safetensors").string()); },
                      {named(dir / "tiny.safetensors"), "truncated"});

  write_bytes(dir / "head.safetensors", full.substr(0, 20));  // header cut off
  require_input_error([&] { load_qkv((dir / "head.safetensors").string()); },
                      {named(dir / "head.safetensors"), "truncated"});

  write_bytes(dir / "data.safetensors", full.substr(0, full.size() - 3));  // v's last value cut off
  require_input_error([&] { load_qkv((dir / "data.safetensors").string()); },
                      {named(dir / "data.safetensors"), "tensor 'v'", "truncated"});

  // A header length of 2^63 must be refused before any allocation.
  write_bytes(dir / "liar.safetensors", le(uint64_t{1} << 63, 8) + "{}");
  require_input_error([&] { load_qkv((dir / "liar.safetensors").string()); },
                      {named(dir / "liar.safetensors"), "truncated"});

  // A consistent header promising 16 GiB of q in a file of a few hundred bytes.
  auto entries = good_entries();
  entries[0].shape = {1, 1, 1 << 20, 1 << 12};
  entries[0].offsets = {0, uint64_t{1} << 34};
  const std::string big = st_file(dir, "big.safetensors", entries);
  require_input_error([&] { load_qkv(big); }, {named(big) + "tensor 'q'", "truncated"});
}

TEST_CASE("truncated npy files", "[data]") {
  const fs::path dir = fresh_dir("err_npy_trunc");
  write_good_npy_folder(dir);
  const std::string q = read_bytes(dir / "q.npy");

  write_bytes(dir / "q.npy", q.substr(0, 4));  // a prefix of the magic
  require_input_error([&] { load_npy_folder(dir.string()); }, {named(dir / "q.npy"), "truncated"});

  write_bytes(dir / "q.npy", q.substr(0, 9));  // inside the header length
  require_input_error([&] { load_npy_folder(dir.string()); }, {named(dir / "q.npy"), "truncated"});

  write_bytes(dir / "q.npy", q.substr(0, 40));  // inside the header
  require_input_error([&] { load_npy_folder(dir.string()); }, {named(dir / "q.npy"), "truncated"});

  write_bytes(dir / "q.npy", q.substr(0, q.size() - 1));  // data one byte short
  require_input_error([&] { load_npy_folder(dir.string()); }, {named(dir / "q.npy"), "truncated"});

  // A header promising 2^40 values over a few bytes of data.
  write_bytes(dir / "q.npy", npy_bytes(npy_dict("<f4", "(1024, 1024, 1024, 1024)"), f32_bytes({1.0f})));
  require_input_error([&] { load_npy_folder(dir.string()); }, {named(dir / "q.npy"), "truncated"});

  // The other way round: more data than the shape implies.
  write_bytes(dir / "q.npy", q + "abcd");
  require_input_error([&] { load_npy_folder(dir.string()); }, {named(dir / "q.npy"), "follow the data"});
}

TEST_CASE("malformed safetensors headers", "[data]") {
  const fs::path dir = fresh_dir("err_st_header");
  const auto with_header = [&](const std::string& name, const std::string& text) {
    write_bytes(dir / name, le(text.size(), 8) + text + std::string(64, '\0'));
    return (dir / name).string();
  };
  require_input_error([&] { load_qkv(with_header("a.safetensors", "{\"q\": {\"dtype\": ")); },
                      {named(dir / "a.safetensors"), "not valid JSON"});
  require_input_error([&] { load_qkv(with_header("b.safetensors", "not json at all")); },
                      {named(dir / "b.safetensors"), "not valid JSON"});
  require_input_error([&] { load_qkv(with_header("c.safetensors", "[1, 2, 3]")); },
                      {named(dir / "c.safetensors"), "JSON object"});
  require_input_error([&] { load_qkv(with_header("d.safetensors", R"({"q": [1, 2]})")); },
                      {named(dir / "d.safetensors"), "tensor 'q'", "dtype"});

  auto entries = good_entries();
  entries[1].shape = {1, -2, 5, 2};
  require_input_error([&] { load_qkv(st_file(dir, "e.safetensors", entries)); },
                      {named(dir / "e.safetensors"), "tensor 'k'", "non-negative integers"});
  entries = good_entries();
  entries[1].shape = {1, 2.5, 5, 2};
  require_input_error([&] { load_qkv(st_file(dir, "f.safetensors", entries)); },
                      {named(dir / "f.safetensors"), "tensor 'k'", "non-negative integers"});
}

TEST_CASE("malformed npy preambles and dicts", "[data]") {
  const fs::path dir = fresh_dir("err_npy_header");
  write_good_npy_folder(dir);
  const auto bad_k = [&](const std::string& bytes, const std::vector<std::string>& parts) {
    write_bytes(dir / "k.npy", bytes);
    std::vector<std::string> all = parts;
    all.push_back(named(dir / "k.npy"));
    require_input_error([&] { load_npy_folder(dir.string()); }, all);
  };
  const std::string data = f32_bytes(iota_values(20));
  bad_k("this is a text file, not an array", {"bad magic"});
  bad_k(std::string("\x93NUMPZ\x01\x00", 8).append(100, ' '), {"bad magic"});
  std::string v4 = npy_bytes(npy_dict("<f4", "(1, 2, 5, 2)"), data);
  v4[6] = 4;
  bad_k(v4, {"version 4.0"});

  bad_k(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2, 5, 2), ", data), {"not a valid dict"});
  bad_k(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': [1, 2, 5, 2]}", data),
        {"not a valid dict", "'('"});
  bad_k(npy_bytes("{'descr': '<f4', 'fortran_order': 0, 'shape': (1, 2, 5, 2)}", data), {"True or False"});
  bad_k(npy_bytes("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1, 2, 5, 2)}", data),
        {"not a valid dict", "quoted string"});
  bad_k(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2, 5, 2), 'extra': 1}", data),
        {"unexpected key 'extra'"});
  bad_k(npy_bytes("{'descr': '<f4', 'shape': (1, 2, 5, 2)}", data), {"lacks the 'fortran_order' key"});
  bad_k(npy_bytes("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1, 2, 5, 2)}", data),
        {"duplicate key"});
  bad_k(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2, 5, 2)} trailing", data),
        {"unexpected text after the dict"});
  bad_k(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 99999999999999999999999, 5, 2)}", data),
        {"too large"});
  bad_k(npy_bytes("{'descr: '<f4', 'fortran_order': False, 'shape': (1, 2, 5, 2)}", data), {"not a valid dict"});
}

// The path as echo_path() shows it, then the tensor or file that is missing: the second part comes after the
// (possibly cut) path, so the check holds wherever the build folder lies and still fails if another
// tensor or file were blamed.
TEST_CASE("a missing tensor", "[data]") {
  const fs::path dir = fresh_dir("err_missing_tensor");
  auto entries = good_entries();
  entries.pop_back();
  require_input_error([&] { load_qkv(st_file(dir, "nov.safetensors", entries)); },
                      {named(dir / "nov.safetensors") + "tensor 'v': is missing", "it holds: k, q)"});
  write_good_npy_folder(dir);
  fs::remove(dir / "k.npy");
  require_input_error([&] { load_qkv(dir.string()); },
                      {named(dir / "k.npy") + "file not found: the folder holds no k.npy"});
}

TEST_CASE("unsupported dtypes and layouts", "[data]") {
  const fs::path dir = fresh_dir("err_dtype");
  auto entries = good_entries();
  entries[1].dtype = "I32";
  require_input_error([&] { load_qkv(st_file(dir, "i32.safetensors", entries)); },
                      {named(dir / "i32.safetensors"), "tensor 'k'", "dtype \"I32\" is not supported"});
  entries = good_entries();
  entries[2].dtype = "F64";
  entries[2].data += entries[2].data;  // F64 needs twice the bytes: the dtype is what must be refused
  require_input_error([&] { load_qkv(st_file(dir, "f64.safetensors", entries)); },
                      {named(dir / "f64.safetensors"), "tensor 'v'", "dtype \"F64\" is not supported"});

  write_good_npy_folder(dir);
  const std::string data = f32_bytes(iota_values(20));
  const auto bad_v = [&](const std::string& bytes, const std::vector<std::string>& parts) {
    write_bytes(dir / "v.npy", bytes);
    std::vector<std::string> all = parts;
    all.push_back(named(dir / "v.npy"));
    require_input_error([&] { load_npy_folder(dir.string()); }, all);
  };
  bad_v(npy_bytes(npy_dict("<i4", "(1, 2, 5, 2)"), data), {"'<i4' is not supported"});
  bad_v(npy_bytes(npy_dict("<f8", "(1, 2, 5, 2)"), data + data), {"'<f8' is not supported"});
  bad_v(npy_bytes(npy_dict(">f4", "(1, 2, 5, 2)"), data), {"big-endian"});
  bad_v(npy_bytes(npy_dict("<f4", "(1, 2, 5, 2)", "True"), data), {"fortran_order is True"});
}

TEST_CASE("shapes that are not 4-D", "[data]") {
  const fs::path dir = fresh_dir("err_rank");
  auto entries = good_entries();
  entries[0].shape = {4, 6};
  require_input_error([&] { load_qkv(st_file(dir, "rank2.safetensors", entries)); },
                      {named(dir / "rank2.safetensors"), "tensor 'q'", "must be 4-D"});
  entries[0].shape = {1, 1, 4, 3, 2};
  require_input_error([&] { load_qkv(st_file(dir, "rank5.safetensors", entries)); },
                      {named(dir / "rank5.safetensors"), "tensor 'q'", "must be 4-D"});

  write_good_npy_folder(dir);
  write_bytes(dir / "q.npy", npy_bytes(npy_dict("<f4", "(24,)"), f32_bytes(iota_values(24))));
  require_input_error([&] { load_npy_folder(dir.string()); }, {named(dir / "q.npy"), "must be 4-D", "[24]"});
  write_bytes(dir / "q.npy", npy_bytes(npy_dict("<f4", "()"), f32_bytes({1.0f})));
  require_input_error([&] { load_npy_folder(dir.string()); }, {named(dir / "q.npy"), "must be 4-D"});
}

TEST_CASE("data_offsets that disagree with dtype and shape", "[data]") {
  const fs::path dir = fresh_dir("err_offsets");
  auto entries = good_entries();
  entries[1].offsets = {96, 96 + 76};  // k needs 80 bytes
  require_input_error([&] { load_qkv(st_file(dir, "short.safetensors", entries)); },
                      {named(dir / "short.safetensors"), "tensor 'k'", "span 76 bytes", "need 80"});
  entries[1].dtype = "F16";  // 80 bytes of data but F16 (1, 2, 5, 2) needs 40
  entries[1].offsets = nullptr;
  require_input_error([&] { load_qkv(st_file(dir, "dtype.safetensors", entries)); },
                      {named(dir / "dtype.safetensors"), "tensor 'k'", "span 80 bytes", "need 40"});
  entries = good_entries();
  entries[1].offsets = {96};
  require_input_error([&] { load_qkv(st_file(dir, "one.safetensors", entries)); },
                      {named(dir / "one.safetensors"), "tensor 'k'", "[begin, end]"});
  entries[1].offsets = {176, 96};
  require_input_error([&] { load_qkv(st_file(dir, "reversed.safetensors", entries)); },
                      {named(dir / "reversed.safetensors"), "tensor 'k'", "end before they begin"});
  // dims whose product overflows 64 bits, with offsets that wrap to look plausible.
  entries = good_entries();
  entries[1].shape = {uint64_t{1} << 40, uint64_t{1} << 40, 1, 16};
  entries[1].offsets = {96, 96};
  require_input_error([&] { load_qkv(st_file(dir, "overflow.safetensors", entries)); },
                      {named(dir / "overflow.safetensors"), "tensor 'k'", "overflows 64 bits"});
}

TEST_CASE("q, k and v that do not fit together", "[data]") {
  const fs::path dir = fresh_dir("err_mismatch");
  struct Case {
    const char* name;
    json q, k, v;
    const char* rule;
  };
  const std::vector<Case> cases = {
      {"batch", {2, 4, 3, 2}, {1, 2, 5, 2}, {1, 2, 5, 2}, "same batch size"},
      {"dim", {1, 4, 3, 4}, {1, 2, 5, 2}, {1, 2, 5, 2}, "same head dimension"},
      {"kv", {1, 4, 3, 2}, {1, 2, 5, 2}, {1, 2, 4, 2}, "k and v must have the same shape"},
      {"heads", {1, 4, 3, 2}, {1, 3, 5, 2}, {1, 3, 5, 2}, "q heads (4) must be a multiple of k/v heads (3)"},
  };
  const auto filled = [](const json& shape) {
    size_t n = 1;
    for (const auto& d : shape) n *= d.get<size_t>();
    return f32_bytes(iota_values(n));
  };
  for (const Case& c : cases) {
    INFO("case " << c.name);
    const std::string file = std::string(c.name) + ".safetensors";
    const std::string path = st_file(
        dir, file, {{"q", "F32", c.q, filled(c.q)}, {"k", "F32", c.k, filled(c.k)}, {"v", "F32", c.v, filled(c.v)}});
    require_input_error([&] { load_qkv(path); }, {named(path), c.rule});
  }
  // The same check guards the npy folder.
  write_good_npy_folder(dir);
  write_bytes(dir / "k.npy", npy_bytes(npy_dict("<f4", "(1, 3, 5, 2)"), f32_bytes(iota_values(30))));
  write_bytes(dir / "v.npy", npy_bytes(npy_dict("<f4", "(1, 3, 5, 2)"), f32_bytes(iota_values(30))));
  require_input_error([&] { load_qkv(dir.string()); }, {named(dir), "multiple of k/v heads"});
}

TEST_CASE("zero-sized dimensions", "[data]") {
  const fs::path dir = fresh_dir("err_zero");
  auto entries = good_entries();
  entries[2].shape = {1, 2, 0, 2};
  entries[2].data.clear();
  require_input_error([&] { load_qkv(st_file(dir, "zero.safetensors", entries)); },
                      {named(dir / "zero.safetensors"), "tensor 'v'", "zero-sized dimension"});
  write_good_npy_folder(dir);
  write_bytes(dir / "q.npy", npy_bytes(npy_dict("<f4", "(1, 0, 3, 2)"), ""));
  require_input_error([&] { load_npy_folder(dir.string()); }, {named(dir / "q.npy"), "zero-sized dimension"});
}

TEST_CASE("NaN or Inf anywhere in the data", "[data]") {
  const fs::path dir = fresh_dir("err_nonfinite");
  auto entries = good_entries();
  std::vector<float> k = iota_values(20, 0.5f);
  k[5] = std::numeric_limits<float>::quiet_NaN();
  k[9] = std::numeric_limits<float>::infinity();
  entries[1].data = f32_bytes(k);
  require_input_error([&] { load_qkv(st_file(dir, "nan.safetensors", entries)); },
                      {named(dir / "nan.safetensors"), "tensor 'k'", "flat index 5 ", "NaN"});

  entries = good_entries();
  entries[2].dtype = "F16";
  std::vector<uint16_t> v(20, 0x3c00);
  v[13] = 0xfc00;  // FP16 -Inf
  entries[2].data = u16_bytes(v);
  require_input_error([&] { load_qkv(st_file(dir, "inf16.safetensors", entries)); },
                      {named(dir / "inf16.safetensors"), "tensor 'v'", "flat index 13 ", "-Inf"});

  entries = good_entries();
  entries[0].dtype = "BF16";
  std::vector<uint16_t> q(24, 0x3f80);
  q[23] = 0x7fc0;  // BF16 NaN, the very last value
  entries[0].data = u16_bytes(q);
  require_input_error([&] { load_qkv(st_file(dir, "nan16.safetensors", entries)); },
                      {named(dir / "nan16.safetensors"), "tensor 'q'", "flat index 23 ", "NaN"});

  write_good_npy_folder(dir);
  std::vector<float> vv = iota_values(20);
  vv[0] = std::numeric_limits<float>::infinity();
  write_bytes(dir / "v.npy", npy_bytes(npy_dict("<f4", "(1, 2, 5, 2)"), f32_bytes(vv)));
  require_input_error([&] { load_npy_folder(dir.string()); }, {named(dir / "v.npy"), "flat index 0 ", "+Inf"});
}

TEST_CASE("writers refuse what could not be read back, and leave no file behind", "[data]") {
  const fs::path dir = fresh_dir("err_writers");
  const auto empty = [&](const fs::path& d) { return fs::is_empty(d); };

  QKV t = small_qkv();
  t.v.values()[7] = std::numeric_limits<float>::quiet_NaN();
  const std::string st = (dir / "nan.safetensors").string();
  require_input_error([&] { save_safetensors(st, t, Dtype::f32); }, {"nan.safetensors", "tensor 'v'", "flat index 7 "});
  require_input_error([&] { save_npy_folder((dir / "npy").string(), t, Dtype::f16); }, {"v.npy", "flat index 7 "});

  t = small_qkv();
  t.k.values()[3] = 70000.0f;  // above FP16's 65504
  require_input_error([&] { save_safetensors(st, t, Dtype::f16); }, {"nan.safetensors", "tensor 'k'", "overflows F16"});
  save_safetensors(st, t, Dtype::bf16);  // BF16 holds it
  CHECK(load_qkv(st).k.values()[3] == formats::round_bf16(70000.0f));
  fs::remove(st);

  require_input_error([&] { save_npy_folder((dir / "npy").string(), small_qkv(), Dtype::bf16); }, {"npy", "bfloat16"});
  require_input_error([&] { save_safetensors(st, QKV{}, Dtype::f32); }, {"nan.safetensors", "zero-sized"});
  t = small_qkv();
  t.v = Tensor({1, 2, 4, 2});
  require_input_error([&] { save_safetensors(st, t, Dtype::f32); },
                      {"nan.safetensors", "k and v must have the same shape"});

  const std::string nested = (dir / "no" / "such" / "x.safetensors").string();
  require_input_error([&] { save_safetensors(nested, small_qkv(), Dtype::f32); },
                      {"x.safetensors", "cannot be written"});

  // Nothing was created by any failed save (the npy folder itself may exist, but empty).
  for (const auto& e : fs::directory_iterator(dir)) {
    INFO("left behind: " << e.path());
    CHECK((e.is_directory() && empty(e.path())));
  }
}

}  // namespace
}  // namespace attnlab::data
