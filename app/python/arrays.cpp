#include "app/python/arrays.h"

#include "core/error.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <optional>
#include <string>

namespace attnlab::python {

namespace py = pybind11;

namespace {

using FloatArray = py::array_t<float, py::array::c_style | py::array::forcecast>;

std::string shape_text(const py::array& a) {
  std::string s = "(";
  for (py::ssize_t i = 0; i < a.ndim(); ++i) s += (i ? ", " : "") + std::to_string(a.shape(i));
  return s + (a.ndim() == 1 ? ",)" : ")");
}

// The caller's array as a C-contiguous float32 copy, after the checks that need only its header.
FloatArray checked(const py::object& obj, const char* name, const char* dims) {
  if (!py::isinstance<py::array>(obj))
    fail_input(name, fmt::format("must be a NumPy array of float32 or float16, got {}",
                                 echo(py::str(py::type::of(obj).attr("__name__")).cast<std::string>(), 40)));
  const auto a = py::reinterpret_borrow<py::array>(obj);
  const py::dtype dt = a.dtype();
  if (dt.kind() != 'f' || (dt.itemsize() != 4 && dt.itemsize() != 2))  // float32 or float16, either byte order
    fail_input(name, fmt::format("dtype {} is not supported; give float32 or float16",
                                 echo(dt.attr("name").cast<std::string>(), 40)));
  if (a.ndim() != 4)
    fail_input(name, fmt::format("must be 4-D {}, got shape {}", dims, shape_text(a)));
  for (py::ssize_t i = 0; i < 4; ++i)
    if (a.shape(i) == 0) fail_input(name, fmt::format("shape {} has a zero dimension", shape_text(a)));
  // float16 → float32 is exact; any strides become C order.
  FloatArray out = FloatArray::ensure(a);
  if (!out) throw py::error_already_set();
  return out;
}

Tensor to_tensor(const FloatArray& a, const char* name) {
  const Shape4 s{a.shape(0), a.shape(1), a.shape(2), a.shape(3)};
  Tensor t(s);
  const float* src = a.data();
  for (int64_t i = 0; i < s.count(); ++i) {
    if (!std::isfinite(src[i])) {
      const int64_t c = i % s.dim, n = i / s.dim % s.len, h = i / (s.dim * s.len) % s.heads,
                    b = i / (s.dim * s.len * s.heads);
      fail_input(name, fmt::format("element [{}, {}, {}, {}] is {}; inputs must be finite", b, h, n, c,
                                   std::isnan(src[i]) ? "NaN" : "Inf"));
    }
    t.data()[i] = src[i];
  }
  return t;
}

}  // namespace

std::optional<QKV> qkv_from_numpy(const py::object& q, const py::object& k, const py::object& v) {
  const int given = int(!q.is_none()) + int(!k.is_none()) + int(!v.is_none());
  if (given == 0) return std::nullopt;
  if (given != 3) fail_input("q, k, v", "give all three arrays or none");
  const auto qa = checked(q, "q", "(B, H, N, d)");
  const auto ka = checked(k, "k", "(B, H_kv, N_kv, d)");
  const auto va = checked(v, "v", "(B, H_kv, N_kv, d)");
  for (py::ssize_t i = 0; i < 4; ++i)
    if (va.shape(i) != ka.shape(i))
      fail_input("v", fmt::format("shape {} must equal k's {}", shape_text(va), shape_text(ka)));
  if (ka.shape(0) != qa.shape(0))
    fail_input("k", fmt::format("batch {} must equal q's ({})", ka.shape(0), qa.shape(0)));
  if (ka.shape(3) != qa.shape(3))
    fail_input("k", fmt::format("head dim {} must equal q's ({})", ka.shape(3), qa.shape(3)));
  if (qa.shape(1) % ka.shape(1) != 0)
    fail_input("k", fmt::format("heads {} must divide q's heads ({})", ka.shape(1), qa.shape(1)));
  return QKV{to_tensor(qa, "q"), to_tensor(ka, "k"), to_tensor(va, "v")};
}

Tensor tensor_from_numpy(const py::object& a, const char* name, const char* dims) {
  return to_tensor(checked(a, name, dims), name);
}

py::array_t<float> to_numpy(const Tensor& t) {
  const Shape4& s = t.shape();
  py::array_t<float> out({s.batch, s.heads, s.len, s.dim});
  std::copy(t.data(), t.data() + t.size(), out.mutable_data());
  return out;
}

py::array_t<double> to_numpy(const ProbeArray& p) {
  std::vector<py::ssize_t> shape(p.shape.begin(), p.shape.end());
  py::array_t<double> out(shape);
  if (static_cast<size_t>(out.size()) != p.values.size())
    throw std::runtime_error("probe values do not fill its shape");
  std::copy(p.values.begin(), p.values.end(), out.mutable_data());
  return out;
}

}  // namespace attnlab::python
