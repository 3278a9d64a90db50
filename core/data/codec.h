// attnlab data: the format-independent half of loading and saving Q/K/V (internal).
//
// Both file formats store each tensor as a flat little-endian array of F32, F16 or BF16 in (B, H, N, d)
// C order, which is exactly the Tensor layout; this file turns such arrays into Tensors and back and
// holds the checks every loader shares: shape sanity, finite values, and q/k/v shape agreement.
#pragma once

#include "core/data/dtype.h"
#include "core/data/file_io.h"
#include "core/data/shapes.h"
#include "core/tensor.h"

#include <cstdint>
#include <string>
#include <vector>

namespace attnlab::data::detail {

// The shape a header declares, accepted only if it is 4-D with no zero dimension and its byte size
// (elements × dtype size) fits in int64, so that later offset arithmetic cannot overflow.
Shape4 checked_shape(const std::vector<uint64_t>& dims, Dtype dtype, const std::string& where);

inline uint64_t byte_size(const Shape4& s, Dtype d) { return static_cast<uint64_t>(s.count()) * dtype_size(d); }

// Reads a tensor stored at `offset` of the file; fails on truncation before allocating, and on any
// NaN or Inf (naming `where` and the first flat index).
Tensor read_tensor(InFile& file, uint64_t offset, const Shape4& shape, Dtype dtype, const std::string& where);

// Appends the tensor's values in `dtype`; fails on NaN/Inf and on finite values the dtype cannot hold.
void write_tensor(OutFile& out, const Tensor& t, Dtype dtype, const std::string& where);

// Fails unless q, k and v are non-empty and fit together as attention operands: same batch, same head
// dimension, k and v shaped alike, and q heads a multiple of k/v heads (grouped-query attention).
void check_qkv(const QKV& t, const std::string& where);
// The same rules on shapes alone (what the headers declare, before any data is read).
void check_qkv_shapes(const QkvShapes& s, const std::string& where);

// File content quoted in a message: echo() (escaped, cut after max_len characters).
std::string printable(const std::string& s, size_t max_len = 40);

}  // namespace attnlab::data::detail
