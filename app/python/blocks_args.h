// attnlab python: the arguments and results of the building blocks (blocks_*.cpp). Every check on a
// caller's array or name happens here and fails as an InputError (ValueError in Python) naming the
// argument and the rule; the engine then sees contiguous FP32 (or integer) buffers only.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace attnlab::python::blocks {

namespace py = pybind11;
using Shape = std::vector<py::ssize_t>;

// x (..., rows, cols): a stack of `count` (rows, cols) matrices — heads, blocks — each handed to the
// engine on its own, as the reference hands it one head at a time.
struct Matrices {
  py::array_t<float> data;  // C-contiguous FP32 copy of x, shape lead + (rows, cols)
  Shape lead;               // the leading shape (...), empty for a 2-D x
  int64_t count = 1, rows = 0, cols = 0;

  const float* matrix(int64_t i) const { return data.data() + i * rows * cols; }
  Shape with(std::initializer_list<py::ssize_t> tail) const;  // lead + tail
};

// x must be a NumPy array of float32 or float16 (float16 → float32 is exact; float64 is refused rather
// than rounded behind the caller's back), at least min_rank-D (≥ 2), no zero dimension, every value
// finite. Any strides; the copy is C order. `dims` names the axes for the messages, e.g.
// "(..., tokens, channels)".
Matrices float_matrices(const py::object& x, const char* name, const char* dims, int min_rank = 2);

// x: a NumPy array of float32 or float16 of any shape (empty and 0-d too); NaN and ±inf allowed. A
// C-contiguous FP32 copy the caller may overwrite.
py::array_t<float> float_array(const py::object& x, const char* name);

// float_array(x, name) with apply(values, count) run on the copy, the GIL released: the elementwise
// building blocks (FP8/FP16/BF16 rounding, SAS) are one engine call on a float buffer.
template <class Apply>
py::array_t<float> float_array_applied(const py::object& x, const char* name, Apply apply) {
  py::array_t<float> out = float_array(x, name);
  float* v = out.mutable_data();
  const int64_t n = out.size();
  {
    py::gil_scoped_release release;
    apply(v, n);
  }
  return out;
}

// x: a NumPy array of any integer dtype whose every value lies in [lo, hi], as a C-contiguous int32
// copy. `shape`, when not empty, is the shape x must have.
py::array_t<int32_t> int_array(const py::object& x, const char* name, int64_t lo, int64_t hi,
                               const Shape& shape = {});

// The shape of a, and its "(2, 3)"-style text for messages.
Shape shape_of(const py::array& a);
std::string shape_text(const Shape& s);

// Calls fn(i) for every matrix, the GIL released. An InputError the engine raises for matrix i of a
// stack gets the matrix's index appended, "(in x[1, 0])": its own message counts within one matrix.
void for_each_matrix(const Matrices& m, const char* name, const std::function<void(int64_t)>& fn);

// One accepted spelling of an enum value: the names are data, read by choose() and name_of().
template <class E>
struct Name {
  const char* name;
  E value;
};

[[noreturn]] void fail_choice(const char* arg, const std::string& given, const std::vector<const char*>& names);

template <class E, size_t N>
E choose(const std::string& given, const char* arg, const std::array<Name<E>, N>& table) {
  for (const auto& n : table)
    if (given == n.name) return n.value;
  std::vector<const char*> names;
  for (const auto& n : table) names.push_back(n.name);
  fail_choice(arg, given, names);
}

template <class E, size_t N>
const char* name_of(E value, const std::array<Name<E>, N>& table) {
  for (const auto& n : table)
    if (n.value == value) return n.name;
  return "?";
}

// A new C-contiguous array of `shape` holding n = prod(shape) values copied from src.
template <class T, class S>
py::array_t<T> to_array(const Shape& shape, const S* src) {
  py::array_t<T> out(shape);
  T* dst = out.mutable_data();
  for (py::ssize_t i = 0; i < out.size(); ++i) dst[i] = static_cast<T>(src[i]);
  return out;
}

}  // namespace attnlab::python::blocks
