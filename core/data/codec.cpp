// attnlab data: the format-independent half of loading and saving Q/K/V (see codec.h).
//
// Little-endian host assumed (x86-64, aarch64): both formats store little-endian values, so F32 data is
// read and written as raw bytes and F16/BF16 as raw uint16_t. The static_assert keeps that honest.
#include "core/data/codec.h"

#include "core/error.h"
#include "core/formats/half.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace attnlab::data::detail {

static_assert(std::endian::native == std::endian::little, "the data loaders assume a little-endian host");

namespace {

// Half-precision data is converted in blocks so the staging buffer stays small for large tensors.
constexpr uint64_t kBlock = uint64_t{1} << 20;

float decode(uint16_t bits, Dtype d) { return d == Dtype::f16 ? formats::fp16_value(bits) : formats::bf16_value(bits); }
uint16_t encode(float x, Dtype d) { return d == Dtype::f16 ? formats::fp16_bits(x) : formats::bf16_bits(x); }

const char* nonfinite_name(float x) { return std::isnan(x) ? "NaN" : (x > 0 ? "+Inf" : "-Inf"); }

void check_finite(const Tensor& t, const std::string& where) {
  const float* p = t.data();
  const float* end = p + t.size();
  const float* bad = std::find_if(p, end, [](float x) { return !std::isfinite(x); });
  if (bad != end)
    fail_input(where,
               fmt::format("value at flat index {} is {} (every value must be finite)", bad - p, nonfinite_name(*bad)));
}

}  // namespace

Shape4 checked_shape(const std::vector<uint64_t>& dims, Dtype dtype, const std::string& where) {
  if (dims.size() != 4)
    fail_input(where, fmt::format("shape must be 4-D (B, H, N, d), got [{}]", fmt::join(dims, ", ")));
  if (std::find(dims.begin(), dims.end(), uint64_t{0}) != dims.end())
    fail_input(where, fmt::format("shape [{}] has a zero-sized dimension", fmt::join(dims, ", ")));
  const uint64_t limit = static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / dtype_size(dtype);
  uint64_t count = 1;
  for (uint64_t d : dims) {
    if (d > limit / count)
      fail_input(where,
                 fmt::format("shape [{}] is too large (its byte size overflows 64 bits)", fmt::join(dims, ", ")));
    count *= d;
  }
  return {static_cast<int64_t>(dims[0]), static_cast<int64_t>(dims[1]), static_cast<int64_t>(dims[2]),
          static_cast<int64_t>(dims[3])};
}

Tensor read_tensor(InFile& file, uint64_t offset, const Shape4& shape, Dtype dtype, const std::string& where) {
  const uint64_t bytes = byte_size(shape, dtype);
  const std::string what = "the tensor data";
  file.require(offset, bytes, what);  // before allocating: the header may lie about the shape
  Tensor t(shape);
  if (dtype == Dtype::f32) {
    file.read(offset, t.data(), bytes, what);
  } else {
    const uint64_t n = static_cast<uint64_t>(t.size());
    std::vector<uint16_t> raw(std::min(n, kBlock));
    for (uint64_t i = 0; i < n; i += kBlock) {
      const uint64_t m = std::min(kBlock, n - i);
      file.read(offset + 2 * i, raw.data(), 2 * m, what);
      for (uint64_t j = 0; j < m; ++j) t.data()[i + j] = decode(raw[j], dtype);
    }
  }
  check_finite(t, where);
  return t;
}

void write_tensor(OutFile& out, const Tensor& t, Dtype dtype, const std::string& where) {
  check_finite(t, where);
  if (dtype == Dtype::f32) {
    out.write(t.data(), byte_size(t.shape(), dtype));
    return;
  }
  const uint64_t n = static_cast<uint64_t>(t.size());
  std::vector<uint16_t> raw(std::min(n, kBlock));
  for (uint64_t i = 0; i < n; i += kBlock) {
    const uint64_t m = std::min(kBlock, n - i);
    for (uint64_t j = 0; j < m; ++j) {
      const float x = t.data()[i + j];
      raw[j] = encode(x, dtype);
      // A value that rounds to infinity would make the saved file unloadable.
      if (!std::isfinite(decode(raw[j], dtype)))
        fail_input(where, fmt::format("value {} at flat index {} overflows {} (save as a wider dtype)", x, i + j,
                                      dtype_name(dtype)));
    }
    out.write(raw.data(), 2 * m);
  }
}

void check_qkv_shapes(const QkvShapes& shapes, const std::string& where) {
  for (const auto& [name, s] : {std::pair{"q", &shapes.q}, std::pair{"k", &shapes.k}, std::pair{"v", &shapes.v}})
    if (s->batch <= 0 || s->heads <= 0 || s->len <= 0 || s->dim <= 0)
      fail_input(fmt::format("{}: tensor '{}'", where, name),
                 fmt::format("shape {} has a zero-sized dimension", s->str()));
  const Shape4 &q = shapes.q, &k = shapes.k, &v = shapes.v;
  if (k != v) fail_input(where, fmt::format("k and v must have the same shape, got k {} and v {}", k.str(), v.str()));
  if (q.batch != k.batch)
    fail_input(where, fmt::format("q and k/v must have the same batch size, got q {} and k {}", q.str(), k.str()));
  if (q.dim != k.dim)
    fail_input(where,
               fmt::format("q and k/v must have the same head dimension d, got q {} and k {}", q.str(), k.str()));
  if (q.heads % k.heads != 0)
    fail_input(where, fmt::format("q heads ({}) must be a multiple of k/v heads ({}) for grouped-query attention",
                                  q.heads, k.heads));
}

void check_qkv(const QKV& t, const std::string& where) {
  check_qkv_shapes({t.q.shape(), t.k.shape(), t.v.shape()}, where);
  for (const auto& [name, x] : {std::pair{"q", &t.q}, std::pair{"k", &t.k}, std::pair{"v", &t.v}})
    if (x->size() != x->shape().count())  // a caller resized values(): a bug, not bad input
      throw std::logic_error(fmt::format("{}: tensor '{}' holds {} values but its shape {} needs {}", where, name,
                                         x->size(), x->shape().str(), x->shape().count()));
}

std::string printable(const std::string& s, size_t max_len) { return echo(s, max_len); }

}  // namespace attnlab::data::detail
