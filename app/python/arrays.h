// attnlab python: NumPy arrays in and out. Every check on a caller's array happens here, before the engine
// sees it, and fails as an InputError (ValueError in Python) naming the argument and the rule.
#pragma once

#include "core/probes.h"
#include "core/tensor.h"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <optional>

namespace attnlab::python {

// q (B, Hq, Nq, d), k and v (B, Hkv, Nkv, d): NumPy arrays of float32 or float16, any strides, every value
// finite, Hkv dividing Hq; copied into contiguous float32 tensors. All three or none (then nullopt).
std::optional<QKV> qkv_from_numpy(const pybind11::object& q, const pybind11::object& k, const pybind11::object& v);

// One 4-D array (float32 or float16, any strides, every value finite) as a float32 tensor; `name` and
// `dims` ("(B, H, N, d)") name it in the error.
Tensor tensor_from_numpy(const pybind11::object& a, const char* name, const char* dims);

// A float32 copy with the tensor's shape (B, H, N, d).
pybind11::array_t<float> to_numpy(const Tensor& t);

// A probe's values as a float64 array of the probe's shape.
pybind11::array_t<double> to_numpy(const ProbeArray& p);

}  // namespace attnlab::python
