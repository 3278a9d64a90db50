// Q/K/V loaders and writers: round trips through every writer and dtype (GQA shapes), the writers'
// byte layout against the two specs, and hand-built files that load with the right values.
#include "core/data/loaders.h"
#include "core/formats/half.h"
#include "tests/catch.h"
#include "tests/core/data/data_files.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <random>

namespace attnlab::data {
namespace ATTNLAB_FILE_LOCAL {

using namespace attnlab::test;
using nlohmann::json;

Tensor random_tensor(Shape4 s, uint32_t seed) {
  Tensor t(s);
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  for (float& x : t.values()) x = normal(rng);
  // Values that exercise rounding edges: FP16 subnormal, near FP16's max, negative zero.
  t.values()[0] = 1e-6f;
  t.values()[1] = -60000.0f;
  t.values()[2] = -0.0f;
  return t;
}

// q (2, 8, 7, 32) and k/v (2, 2, 11, 32): grouped-query, q_len ≠ kv_len.
QKV random_qkv() {
  return {random_tensor({2, 8, 7, 32}, 1), random_tensor({2, 2, 11, 32}, 2), random_tensor({2, 2, 11, 32}, 3)};
}

float round_to(float x, Dtype d) {
  return d == Dtype::f16 ? formats::round_fp16(x) : d == Dtype::bf16 ? formats::round_bf16(x) : x;
}

// Requires `got` to equal `want` rounded to `dtype`, element for element.
void require_rounded_equal(const Tensor& want, const Tensor& got, Dtype dtype) {
  REQUIRE(got.shape() == want.shape());
  REQUIRE(got.size() == want.size());
  int64_t mismatches = 0, first = -1;
  for (int64_t i = 0; i < want.size(); ++i)
    if (got.values()[i] != round_to(want.values()[i], dtype) && mismatches++ == 0) first = i;
  INFO("first mismatch at flat index " << first);
  CHECK(mismatches == 0);
}

void require_qkv(const QKV& want, const QKV& got, Dtype dtype) {
  require_rounded_equal(want.q, got.q, dtype);
  require_rounded_equal(want.k, got.k, dtype);
  require_rounded_equal(want.v, got.v, dtype);
}

TEST_CASE("safetensors round trip: f32 exact, f16 and bf16 rounded (GQA shapes)", "[data]") {
  const fs::path dir = fresh_dir("st_roundtrip");
  const QKV t = random_qkv();
  for (Dtype dtype : {Dtype::f32, Dtype::f16, Dtype::bf16}) {
    INFO("dtype " << dtype_name(dtype));
    const std::string path = (dir / (std::string(dtype_name(dtype)) + ".safetensors")).string();
    save_safetensors(path, t, dtype);
    require_qkv(t, load_safetensors(path), dtype);
    require_qkv(t, load_qkv(path), dtype);
  }
  // Saving over an existing file replaces it and leaves no temporaries behind.
  save_safetensors((dir / "F32.safetensors").string(), t, Dtype::f16);
  require_qkv(t, load_qkv((dir / "F32.safetensors").string()), Dtype::f16);
  CHECK(std::distance(fs::directory_iterator(dir), fs::directory_iterator()) == 3);
}

TEST_CASE("npy folder round trip: f32 exact, f16 rounded (GQA shapes)", "[data]") {
  const fs::path dir = fresh_dir("npy_roundtrip");
  const QKV t = random_qkv();
  for (Dtype dtype : {Dtype::f32, Dtype::f16}) {
    INFO("dtype " << dtype_name(dtype));
    const std::string sub = (dir / "nested" / dtype_name(dtype)).string();  // save creates the folders
    save_npy_folder(sub, t, dtype);
    require_qkv(t, load_npy_folder(sub), dtype);
    require_qkv(t, load_qkv(sub), dtype);
    CHECK(std::distance(fs::directory_iterator(sub), fs::directory_iterator()) == 3);
  }
}

TEST_CASE("save_safetensors writes a spec-conformant file", "[data]") {
  const fs::path dir = fresh_dir("st_layout");
  const QKV t = random_qkv();
  const fs::path path = dir / "x.safetensors";
  save_safetensors(path.string(), t, Dtype::bf16);
  const std::string bytes = read_bytes(path);
  REQUIRE(bytes.size() >= 8);
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  CHECK(n % 8 == 0);
  REQUIRE(8 + n <= bytes.size());
  const std::string text = bytes.substr(8, n);
  CHECK(text.front() == '{');
  const json header = json::parse(text);  // trailing padding spaces are valid JSON whitespace
  REQUIRE(header.is_object());
  CHECK(header.size() == 3);
  // Offsets must tile the data section exactly: no holes, no overlap, nothing after.
  std::vector<std::pair<uint64_t, uint64_t>> spans;
  for (const auto& [name, tensor] : {std::pair{"q", &t.q}, std::pair{"k", &t.k}, std::pair{"v", &t.v}}) {
    INFO("tensor " << name);
    REQUIRE(header.contains(name));
    const json& e = header[name];
    CHECK(e["dtype"] == "BF16");
    const Shape4& s = tensor->shape();
    CHECK(e["shape"] == json({s.batch, s.heads, s.len, s.dim}));
    const uint64_t b = e["data_offsets"][0], end = e["data_offsets"][1];
    CHECK(end - b == static_cast<uint64_t>(s.count()) * 2);
    spans.push_back({b, end});
    // The first stored value is the BF16 encoding of the first element.
    uint16_t first = 0;
    std::memcpy(&first, bytes.data() + 8 + n + b, 2);
    CHECK(first == formats::bf16_bits(tensor->values()[0]));
  }
  std::sort(spans.begin(), spans.end());
  CHECK(spans[0].first == 0);
  CHECK(spans[1].first == spans[0].second);
  CHECK(spans[2].first == spans[1].second);
  CHECK(8 + n + spans[2].second == bytes.size());
}

TEST_CASE("save_npy_folder writes numpy's version 1.0 layout", "[data]") {
  const fs::path dir = fresh_dir("npy_layout");
  const QKV t = random_qkv();
  save_npy_folder(dir.string(), t, Dtype::f16);
  const std::string bytes = read_bytes(dir / "q.npy");
  REQUIRE(bytes.size() > 10);
  CHECK(bytes.substr(0, 6) == std::string("\x93NUMPY", 6));
  CHECK(bytes[6] == 1);
  CHECK(bytes[7] == 0);
  const size_t len = static_cast<unsigned char>(bytes[8]) | static_cast<size_t>(static_cast<unsigned char>(bytes[9]))
                                                                << 8;
  CHECK((10 + len) % 64 == 0);  // numpy aligns the data to 64 bytes
  REQUIRE(10 + len <= bytes.size());
  const std::string header = bytes.substr(10, len);
  CHECK(header.rfind("{'descr': '<f2', 'fortran_order': False, 'shape': (2, 8, 7, 32), }", 0) == 0);
  CHECK(header.back() == '\n');
  CHECK(bytes.size() == 10 + len + 2 * 2 * 8 * 7 * 32);
  uint16_t first = 0;
  std::memcpy(&first, bytes.data() + 10 + len, 2);
  CHECK(first == formats::fp16_bits(t.q.values()[0]));
}

TEST_CASE("a hand-built safetensors file loads with the right values", "[data]") {
  const fs::path dir = fresh_dir("st_hand");
  // Mixed dtypes, data stored v, q, k (not in header order), metadata and an extra I32 tensor to ignore.
  const std::string v = u16_bytes({0x3f80, 0x4049, 0xc000, 0x0000});  // BF16 1, 3.140625, -2, 0
  const std::string q = f32_bytes({1.0f, -2.5f, 0.375f, 1e-3f});
  const std::string k = u16_bytes({0x3c00, 0xc000, 0x0001, 0x7bff});  // FP16 1, -2, 2^-24, 65504
  const std::string extra = le(7, 4);
  std::string header = R"({"__metadata__":{"format":"pt"},)"
                       R"("q":{"dtype":"F32","shape":[1,2,1,2],"data_offsets":[8,24]},)"
                       R"("k":{"dtype":"F16","shape":[1,1,2,2],"data_offsets":[24,32]},)"
                       R"("v":{"dtype":"BF16","shape":[1,1,2,2],"data_offsets":[0,8]},)"
                       R"("extra":{"dtype":"I32","shape":[1],"data_offsets":[32,36]}})";
  while (header.size() % 8) header += ' ';
  const fs::path path = dir / "hand.safetensors";
  write_bytes(path, le(header.size(), 8) + header + v + q + k + extra);

  const QKV t = load_qkv(path.string());
  CHECK(t.q.shape() == Shape4{1, 2, 1, 2});
  CHECK(t.k.shape() == Shape4{1, 1, 2, 2});
  CHECK(t.v.shape() == Shape4{1, 1, 2, 2});
  CHECK(t.q.values() == std::vector<float>{1.0f, -2.5f, 0.375f, 1e-3f});
  CHECK(t.k.values() == std::vector<float>{1.0f, -2.0f, 0x1p-24f, 65504.0f});
  CHECK(t.v.values() == std::vector<float>{1.0f, 3.140625f, -2.0f, 0.0f});
  CHECK(t.q.at(0, 1, 0, 0) == 0.375f);
}

TEST_CASE("hand-built npy files load: versions 1.0, 2.0, 3.0, any key order and spacing", "[data]") {
  const fs::path dir = fresh_dir("npy_hand");
  write_bytes(dir / "q.npy", npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2, 1, 2), }",
                                       f32_bytes({1.0f, -2.5f, 0.375f, 1e-3f})));
  write_bytes(dir / "k.npy", npy_bytes(R"({"shape":(1,1,2,2,),"fortran_order":False,"descr":"<f2"})",
                                       u16_bytes({0x3c00, 0xc000, 0x0001, 0x7bff}), 2));
  write_bytes(dir / "v.npy",
              npy_bytes("{ 'fortran_order' : False ,\t'shape' : ( 1L , 1L , 2L , 2L ) , 'descr' : '<f4' }",
                        f32_bytes({4.0f, 5.0f, 6.0f, 7.0f}), 3));
  const QKV t = load_qkv(dir.string());
  CHECK(t.q.shape() == Shape4{1, 2, 1, 2});
  CHECK(t.k.shape() == Shape4{1, 1, 2, 2});
  CHECK(t.q.values() == std::vector<float>{1.0f, -2.5f, 0.375f, 1e-3f});
  CHECK(t.k.values() == std::vector<float>{1.0f, -2.0f, 0x1p-24f, 65504.0f});
  CHECK(t.v.values() == std::vector<float>{4.0f, 5.0f, 6.0f, 7.0f});
}

TEST_CASE("the npy dict parser accepts numpy's forms and reports the key it cannot use", "[data]") {
  const auto h = detail::parse_npy_header("{'descr': '<f2', 'fortran_order': True, 'shape': (5,), }   \n", "x.npy");
  CHECK(h.descr == "<f2");
  CHECK(h.fortran_order);
  CHECK(h.shape == std::vector<uint64_t>{5});
  CHECK(detail::parse_npy_header("{'shape': (), 'descr': '<f4', 'fortran_order': False}", "x.npy").shape.empty());
  require_input_error(
      [] { detail::parse_npy_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3),", "x.npy"); },
      {"x.npy", "not a valid dict"});
}

}  // namespace
}  // namespace attnlab::data
