#include "app/python/blocks_args.h"

#include "core/error.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <type_traits>

namespace attnlab::python::blocks {

namespace {

std::string type_name(const py::object& obj) {
  return echo(py::str(py::type::of(obj).attr("__name__")).cast<std::string>(), 40);
}

py::array require_array(const py::object& obj, const char* name, const char* what) {
  if (!py::isinstance<py::array>(obj))
    fail_input(name, fmt::format("must be a NumPy array of {}, got {}", what, type_name(obj)));
  return py::reinterpret_borrow<py::array>(obj);
}

std::string dtype_name(const py::array& a) { return echo(a.dtype().attr("name").cast<std::string>(), 40); }

py::array require_float(const py::object& obj, const char* name) {
  const py::array a = require_array(obj, name, "float32 or float16");
  const py::dtype dt = a.dtype();
  if (dt.kind() != 'f' || (dt.itemsize() != 4 && dt.itemsize() != 2))  // either byte order
    fail_input(name, fmt::format("dtype {} is not supported; give float32 or float16 (the engine computes in FP32)",
                                 dtype_name(a)));
  return a;
}

// "[i0, i1, …]": the multi-index of flat element i of a C-order array of `shape`.
std::string index_text(int64_t i, const Shape& shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t k = shape.size(); k-- > 0;) {
    idx[k] = i % shape[k];
    i /= shape[k];
  }
  return fmt::format("[{}]", fmt::join(idx, ", "));
}

// The integers of a (any integer dtype) as int64, each checked against [lo, hi] in the dtype's own
// signedness first, so that no uint64 wraps into range.
template <class T>
py::array_t<int32_t> checked_ints(const py::array& a, const char* name, int64_t lo, int64_t hi) {
  using Ensured = py::array_t<T, py::array::c_style | py::array::forcecast>;
  const Ensured src = Ensured::ensure(a);
  if (!src) throw py::error_already_set();
  const Shape shape = shape_of(src);
  py::array_t<int32_t> out(shape);
  const T* s = src.data();
  int32_t* d = out.mutable_data();
  for (py::ssize_t i = 0; i < src.size(); ++i) {
    const bool below = std::is_signed_v<T> ? int64_t(s[i]) < lo : (lo > 0 && uint64_t(s[i]) < uint64_t(lo));
    const bool above = std::is_signed_v<T> ? int64_t(s[i]) > hi : (hi < 0 || uint64_t(s[i]) > uint64_t(hi));
    if (below || above)
      fail_input(name,
                 fmt::format("element {} is {}; values must lie in [{}, {}]", index_text(i, shape), s[i], lo, hi));
    d[i] = static_cast<int32_t>(s[i]);
  }
  return out;
}

}  // namespace

Shape shape_of(const py::array& a) { return Shape(a.shape(), a.shape() + a.ndim()); }

Shape Matrices::with(std::initializer_list<py::ssize_t> tail) const {
  Shape s = lead;
  s.insert(s.end(), tail.begin(), tail.end());
  return s;
}

std::string shape_text(const Shape& s) {
  return fmt::format("({}{})", fmt::join(s, ", "), s.size() == 1 ? "," : "");
}

Matrices float_matrices(const py::object& x, const char* name, const char* dims, int min_rank) {
  const py::array a = require_float(x, name);
  const Shape shape = shape_of(a);
  if (a.ndim() < min_rank)
    fail_input(name, fmt::format("must be at least {}-D {}, got shape {}", min_rank, dims, shape_text(shape)));
  for (py::ssize_t n : shape)
    if (n == 0) fail_input(name, fmt::format("shape {} has a zero dimension", shape_text(shape)));
  Matrices m;
  m.data = py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(a);
  if (!m.data) throw py::error_already_set();
  m.lead.assign(shape.begin(), shape.end() - 2);
  m.rows = shape[shape.size() - 2];
  m.cols = shape.back();
  for (py::ssize_t n : m.lead) m.count *= n;
  const float* v = m.data.data();
  const int64_t n = m.data.size();
  int64_t bad = n;
  {
    py::gil_scoped_release release;
    for (int64_t i = 0; i < n; ++i)
      if (!std::isfinite(v[i])) {
        bad = i;
        break;
      }
  }
  if (bad < n)
    fail_input(name, fmt::format("element {} is {}; values must be finite", index_text(bad, shape),
                                 std::isnan(v[bad]) ? "NaN" : "inf"));
  return m;
}

py::array_t<float> float_array(const py::object& x, const char* name) {
  const py::array a = require_float(x, name);
  // A fresh copy even when x is already C-contiguous float32: the caller rounds it in place.
  py::array_t<float> out(shape_of(a));
  const auto src = py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(a);
  if (!src) throw py::error_already_set();
  std::copy(src.data(), src.data() + src.size(), out.mutable_data());
  return out;
}

py::array_t<int32_t> int_array(const py::object& x, const char* name, int64_t lo, int64_t hi, const Shape& shape) {
  const py::array a = require_array(x, name, "integers");
  const char kind = a.dtype().kind();
  if (kind != 'i' && kind != 'u')
    fail_input(name, fmt::format("dtype {} is not supported; give an integer dtype", dtype_name(a)));
  if (!shape.empty() && shape_of(a) != shape)
    fail_input(name, fmt::format("shape {} must be {}", shape_text(shape_of(a)), shape_text(shape)));
  return kind == 'u' ? checked_ints<uint64_t>(a, name, lo, hi) : checked_ints<int64_t>(a, name, lo, hi);
}

void for_each_matrix(const Matrices& m, const char* name, const std::function<void(int64_t)>& fn) {
  py::gil_scoped_release release;
  for (int64_t i = 0; i < m.count; ++i) {
    try {
      fn(i);
    } catch (const InputError& e) {
      if (m.lead.empty()) throw;
      throw InputError(fmt::format("{} (in {}{})", e.what(), name, index_text(i, m.lead)));
    }
  }
}

void fail_choice(const char* arg, const std::string& given, const std::vector<const char*>& names) {
  fail_input(arg, fmt::format("must be one of {} (got '{}')", fmt::join(names, ", "), echo(given, 40)));
}

}  // namespace attnlab::python::blocks
