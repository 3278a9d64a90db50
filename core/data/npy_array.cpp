// attnlab data: one N-dimensional float array as an .npy file (format summary in npy_array.h).
// Little-endian host assumed, as in the Q/K/V loaders (static_assert in codec.cpp).
#include "core/data/npy_array.h"

#include "core/data/codec.h"
#include "core/data/file_io.h"
#include "core/data/npy.h"
#include "core/error.h"

#include <fmt/format.h>

#include <cstring>

namespace attnlab::data {

namespace {

constexpr char kMagic[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};
constexpr uint64_t kAlign = 64;

std::string shape_tuple(const std::vector<uint64_t>& shape) {
  std::string out = "(";
  for (size_t i = 0; i < shape.size(); ++i) out += fmt::format("{}{}", i ? ", " : "", shape[i]);
  return out + (shape.size() == 1 ? ",)" : ")");
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += fmt::format("{}{}", i ? ", " : "", shape[i]);
  return out + "]";
}

}  // namespace

const char* npy_descr(NpyFloat t) { return t == NpyFloat::f4 ? "<f4" : "<f8"; }

NpyFloat narrowest_exact(const std::vector<double>& values) {
  for (const double x : values)
    if (!(double(float(x)) == x) && !(x != x)) return NpyFloat::f8;  // NaN stays NaN in float32
  return NpyFloat::f4;
}

std::string npy_header(const std::string& descr, const std::vector<uint64_t>& shape) {
  const std::string dict =
      fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}", descr, shape_tuple(shape));
  for (const uint64_t prefix : {uint64_t{10}, uint64_t{12}}) {  // magic, version, 2- or 4-byte length
    const uint64_t unpadded = prefix + dict.size() + 1;       // + '\n'
    const uint64_t len = dict.size() + 1 + (kAlign - unpadded % kAlign) % kAlign;
    if (prefix == 12 || len <= 0xffff) {
      std::string out(kMagic, sizeof kMagic);
      out += static_cast<char>(prefix == 10 ? 1 : 2);
      out += '\0';
      for (uint64_t b = 0; b < prefix - 8; ++b) out += static_cast<char>((len >> (8 * b)) & 0xff);
      out += dict;
      out.append(len - dict.size() - 1, ' ');
      out += '\n';
      return out;
    }
  }
  return {};  // unreachable
}

std::string npy_bytes(const std::vector<int64_t>& shape, const std::vector<double>& values, NpyFloat type) {
  std::vector<uint64_t> dims(shape.begin(), shape.end());
  std::string out = npy_header(npy_descr(type), dims);
  const size_t at = out.size();
  if (type == NpyFloat::f8) {
    out.resize(at + values.size() * sizeof(double));
    std::memcpy(out.data() + at, values.data(), values.size() * sizeof(double));
  } else {
    out.resize(at + values.size() * sizeof(float));
    for (size_t i = 0; i < values.size(); ++i) {
      const float f = static_cast<float>(values[i]);
      std::memcpy(out.data() + at + i * sizeof(float), &f, sizeof(float));
    }
  }
  return out;
}

std::vector<double> read_npy_array(const std::string& path, const std::vector<int64_t>& expected_shape,
                                   std::vector<int64_t>* shape_out) {
  detail::InFile file(path);
  const std::string& where = file.path();
  const detail::NpyPreamble pre = detail::read_npy_preamble(file);
  const detail::NpyHeader& h = pre.header;
  if (h.descr != "<f4" && h.descr != "<f8")
    fail_input(where, fmt::format("dtype '{}' is not supported (need little-endian float32 '<f4' or float64 '<f8')",
                                  detail::printable(h.descr)));
  if (h.fortran_order) fail_input(where, "fortran_order is True; only C-order arrays are supported");

  std::vector<int64_t> shape;
  uint64_t count = 1;
  const uint64_t item = h.descr == "<f4" ? 4 : 8;
  for (const uint64_t d : h.shape) {
    // Every product stays below 2^62 bytes: the size checks below cannot wrap.
    if (d > (uint64_t{1} << 62) / item || (d != 0 && count > (uint64_t{1} << 62) / item / d))
      fail_input(where, "npy shape is too large");
    count *= d;
    shape.push_back(static_cast<int64_t>(d));
  }
  if (!expected_shape.empty() && shape != expected_shape)
    fail_input(where, fmt::format("npy shape {} differs from the shape {} results.json gives", shape_text(shape),
                                  shape_text(expected_shape)));
  const uint64_t start = pre.data_start, bytes = count * item;
  file.require(start, bytes, "the array data");
  if (file.size() != start + bytes)
    fail_input(where, fmt::format("{} bytes follow the data that shape {} implies (header and data disagree)",
                                  file.size() - start - bytes, shape_text(shape)));
  std::vector<double> values(count);
  if (item == 8) {
    file.read(start, values.data(), bytes, "the array data");
  } else {
    std::vector<float> raw(count);
    file.read(start, raw.data(), bytes, "the array data");
    std::copy(raw.begin(), raw.end(), values.begin());
  }
  if (shape_out) *shape_out = shape;
  return values;
}

}  // namespace attnlab::data
