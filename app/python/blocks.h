// attnlab python: the blocks functions of the module (app/python/blocks.cpp says which).
#pragma once

#include <pybind11/pybind11.h>

namespace attnlab::python {

void bind_blocks(pybind11::module_& m);

}  // namespace attnlab::python
