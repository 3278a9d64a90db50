#include "app/python/blocks.h"

namespace attnlab::python {

void bind_blocks(pybind11::module_&) {}

}  // namespace attnlab::python
