#include "app/python/blocks.h"

namespace attnlab::python {

void bind_blocks(pybind11::module_& m) {
  bind_quant(m);
  bind_progressive(m);
  bind_formats(m);
  bind_sas(m);
  bind_heads(m);
}

}  // namespace attnlab::python
