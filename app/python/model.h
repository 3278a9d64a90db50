// attnlab python: the model functions of the module (app/python/model.cpp says which).
#pragma once

#include <pybind11/pybind11.h>

namespace attnlab::python {

void bind_model(pybind11::module_& m);

}  // namespace attnlab::python
