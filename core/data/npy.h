// attnlab data: Q/K/V as three NumPy .npy files (q.npy, k.npy, v.npy) in one folder.
//
// An .npy file is the magic "\x93NUMPY", a major and minor version byte, the header length (2 bytes LE
// for version 1.0, 4 bytes LE for 2.0 and 3.0), then a Python dict literal such as
//   {'descr': '<f4', 'fortran_order': False, 'shape': (1, 8, 100, 64), }
// padded with spaces and ending in '\n', then the array data. attnlab reads little-endian float32
// ('<f4') and float16 ('<f2') arrays in C order, each (B, H, N, d).
#pragma once

#include "core/data/dtype.h"
#include "core/data/shapes.h"
#include "core/tensor.h"

#include <string>
#include <vector>

namespace attnlab::data {

// Fails with an InputError naming the folder or file on any problem; see loaders.h for the list.
QKV load_npy_folder(const std::string& dir);

// The shapes of q.npy, k.npy and v.npy after every header check load_npy_folder makes (each file's size
// against its header included), without reading tensor data.
QkvShapes read_npy_folder_shapes(const std::string& dir);

// Creates `dir` if needed and writes q.npy, k.npy, v.npy in f32 or f16 (npy has no bfloat16).
void save_npy_folder(const std::string& dir, const QKV& t, Dtype dtype);

// One .npy file as a tensor (finite values, 4-D, no zero dimension); `path` names it in errors.
Tensor load_npy(const std::string& path);

namespace detail {

struct NpyHeader {
  std::string descr;
  bool fortran_order = false;
  std::vector<uint64_t> shape;
};

// Parses exactly the dict form numpy writes (keys descr, fortran_order, shape in any order, any
// whitespace, trailing commas); fails naming `where` on anything else.
NpyHeader parse_npy_header(const std::string& text, const std::string& where);

class InFile;
// The magic, the version (1.0, 2.0, 3.0), the header's length and the header itself, parsed — every .npy
// reader's first step (q/k/v loading here, results sidecars in npy_array.h); data_start is where the array
// begins. Fails naming the file on anything malformed or truncated.
struct NpyPreamble {
  NpyHeader header;
  uint64_t data_start = 0;
};
NpyPreamble read_npy_preamble(InFile& file);

}  // namespace detail
}  // namespace attnlab::data
