// attnlab data: one N-dimensional array of numbers as a NumPy .npy file (format 1.0), both ways — the
// sidecar files beside results.json (core/results_sidecars.h) hold the large probe arrays in it.
//
// The format, as NumPy documents it (numpy.lib.format): the magic "\x93NUMPY", the version bytes 1 and 0,
// the header length as a 2-byte little-endian integer, then the header — a Python dict literal
//   {'descr': '<f8', 'fortran_order': False, 'shape': (4, 16, 16384), }
// padded with spaces and ending in '\n' so that magic + version + length + header is a multiple of 64
// bytes (the data starts aligned) — then the data, C order. A 1-D shape is written "(n,)", as Python
// writes a one-element tuple. Files of version 2.0 and 3.0 (4-byte length) are read too.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace attnlab::data {

// The element types a sidecar holds: little-endian float32 ('<f4') and float64 ('<f8').
enum class NpyFloat { f4, f8 };
const char* npy_descr(NpyFloat t);

// '<f4' when every value survives a round trip through float32 (scales computed in float, counts), else
// '<f8': the file always gives back exactly the values it was given, at half the bytes where it can.
NpyFloat narrowest_exact(const std::vector<double>& values);

// A whole .npy file (header and data) holding `values` (row-major, size = product of shape) as `type`.
std::string npy_bytes(const std::vector<int64_t>& shape, const std::vector<double>& values, NpyFloat type);

// The header alone (magic to '\n'), version 1.0, or 2.0 when the dict would not fit 65535 bytes.
std::string npy_header(const std::string& descr, const std::vector<uint64_t>& shape);

// Reads an .npy file of float32 or float64 ('<f4', '<f8'), C order, as doubles. When `expected_shape`
// is not empty, the file's shape must equal it. Fails with an InputError naming `path` on a missing or
// unreadable file, a bad header, another dtype or shape, a truncated file or bytes after the data.
std::vector<double> read_npy_array(const std::string& path, const std::vector<int64_t>& expected_shape = {},
                                   std::vector<int64_t>* shape_out = nullptr);

}  // namespace attnlab::data
