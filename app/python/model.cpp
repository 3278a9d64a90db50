#include "app/python/model.h"

namespace attnlab::python {

void bind_model(pybind11::module_&) {}

}  // namespace attnlab::python
