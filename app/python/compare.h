// attnlab python: your own attention against attnlab's — the inputs an experiment runs on, and the metrics
// of any output against the FP64 attention of those inputs (app/python/compare.cpp).
#pragma once

#include <pybind11/pybind11.h>

namespace attnlab::python {

void bind_compare(pybind11::module_& m);

}  // namespace attnlab::python
