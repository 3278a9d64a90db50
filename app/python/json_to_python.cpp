#include "app/python/json_to_python.h"

#include <cmath>

namespace attnlab::python {

namespace py = pybind11;

py::object to_python(const nlohmann::json& j) {
  using T = nlohmann::json::value_t;
  switch (j.type()) {
    case T::null:
    case T::discarded:
      return py::none();
    case T::boolean:
      return py::bool_(j.get<bool>());
    case T::number_integer:
      return py::int_(j.get<int64_t>());
    case T::number_unsigned:
      return py::int_(j.get<uint64_t>());
    case T::number_float: {
      const double x = j.get<double>();
      return std::isfinite(x) ? py::object(py::float_(x)) : py::none();
    }
    case T::string:
      return py::str(j.get_ref<const std::string&>());
    case T::array: {
      py::list out;
      for (const auto& e : j) out.append(to_python(e));
      return out;
    }
    case T::object: {
      py::dict out;
      for (const auto& [key, value] : j.items()) out[py::str(key)] = to_python(value);
      return out;
    }
    case T::binary:
      break;
  }
  return py::none();  // binary values: none in attnlab's JSON
}

}  // namespace attnlab::python
