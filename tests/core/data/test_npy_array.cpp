// attnlab tests: the .npy writer and reader of the results sidecars (core/data/npy_array.h) — the header
// byte for byte as NumPy writes it, exact round trips at the narrowest exact dtype, and one clear
// InputError naming the file for every kind of damage. (NumPy itself reading our files and writing files
// we read: tests/python/test_results_files.py.)
#include "core/data/npy_array.h"
#include "core/error.h"
#include "tests/catch.h"

#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;

namespace attnlab::data {
namespace ATTNLAB_FILE_LOCAL {

fs::path scratch(const std::string& name) {
  const fs::path dir = fs::path(ATTNLAB_TEST_TMP) / "npy_array";
  fs::create_directories(dir);
  return dir / name;
}

void put(const fs::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary) << bytes;
}

std::string error_of(const fs::path& p, const std::vector<int64_t>& shape = {}) {
  try {
    read_npy_array(p.string(), shape);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// Every part occurs in the message (printed when not).
bool has_all(const std::string& message, std::initializer_list<const char*> parts) {
  for (const char* part : parts)
    if (message.find(part) == std::string::npos) {
      UNSCOPED_INFO("message: " << message << " — lacks: " << part);
      return false;
    }
  return true;
}


TEST_CASE("npy header: NumPy's dict, a 1-D shape as (n,), the data 64-byte aligned", "[data]") {
  // np.save of np.zeros(3) begins with these bytes (HEADER_LEN 118 = 'v': 10 + 118 = 128).
  const std::string h = npy_header("<f8", {3});
  CHECK(h.substr(0, 10) == std::string("\x93NUMPY\x01\x00v\x00", 10));
  CHECK(h.substr(10, 57) == "{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }");
  CHECK(h.size() == 128);
  CHECK(h.back() == '\n');
  for (const auto& shape : {std::vector<uint64_t>{}, {4, 16, 16384}, {1, 2, 3, 4, 5, 6, 7, 8}}) {
    const std::string x = npy_header("<f4", shape);
    CHECK(x.size() % 64 == 0);
    CHECK(x.back() == '\n');
  }
  CHECK(npy_header("<f4", {4, 16, 16384}).find("'shape': (4, 16, 16384), }") != std::string::npos);
}

TEST_CASE("npy arrays round trip exactly, as float32 where every value fits it, else float64", "[data]") {
  const std::vector<double> fits = {0.5, -1.25, 3.0, 1e-3f, 65504.0, 0.0};
  const std::vector<double> wide = {0.1, 1.0 / 3.0, 8.000000001, -2.0, 1e300, 5.0};
  CHECK(narrowest_exact(fits) == NpyFloat::f4);
  CHECK(narrowest_exact(wide) == NpyFloat::f8);
  for (const auto* values : {&fits, &wide}) {
    for (const auto& shape : {std::vector<int64_t>{6}, {2, 3}, {1, 2, 3}}) {
      const fs::path p = scratch("round_trip.npy");
      const NpyFloat t = narrowest_exact(*values);
      put(p, npy_bytes(shape, *values, t));
      CHECK(fs::file_size(p) == npy_header(npy_descr(t), {shape.begin(), shape.end()}).size() +
                                    values->size() * (t == NpyFloat::f4 ? 4 : 8));
      std::vector<int64_t> got_shape;
      CHECK(read_npy_array(p.string(), shape, &got_shape) == *values);  // bit for bit: == on doubles
      CHECK(got_shape == shape);
    }
  }
}

TEST_CASE("npy reader: a missing, truncated, padded or foreign file is one InputError naming it", "[data]") {
  const fs::path good = scratch("good.npy");
  const std::string bytes = npy_bytes({2, 3}, {1, 2, 3, 4, 5, 6}, NpyFloat::f8);
  put(good, bytes);
  CHECK(error_of(good).empty());

  const fs::path missing = scratch("missing.npy");
  fs::remove(missing);
  CHECK(has_all(error_of(missing), {"missing.npy", "not found"}));

  const fs::path cut = scratch("cut.npy");
  put(cut, bytes.substr(0, bytes.size() - 5));
  CHECK(has_all(error_of(cut), {"cut.npy", "truncated"}));
  put(cut, bytes.substr(0, 20));
  CHECK(has_all(error_of(cut), {"cut.npy", "truncated"}));
  put(cut, "");  // an empty sidecar: too short for the preamble (data::load_npy says the same)
  CHECK(has_all(error_of(cut), {"cut.npy", "truncated: 0 bytes"}));

  const fs::path padded = scratch("padded.npy");
  put(padded, bytes + "xx");
  CHECK(has_all(error_of(padded), {"padded.npy", "2 bytes follow"}));

  const fs::path other_shape = scratch("other_shape.npy");
  put(other_shape, bytes);
  CHECK(has_all(error_of(other_shape, {3, 2}), {"other_shape.npy", "[2, 3]", "[3, 2]"}));

  const fs::path ints = scratch("ints.npy");
  put(ints, npy_header("<i4", {1}) + std::string(4, '\0'));
  CHECK(has_all(error_of(ints), {"ints.npy", "'<i4' is not supported"}));

  const fs::path text = scratch("text.npy");
  put(text, "{\"schema\": 1}");
  CHECK(has_all(error_of(text), {"text.npy", "bad magic"}));
}

}  // namespace
}  // namespace attnlab::data
