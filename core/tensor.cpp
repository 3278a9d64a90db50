#include "core/tensor.h"

#include <fmt/format.h>

namespace attnlab {

std::string Shape4::str() const { return fmt::format("({}, {}, {}, {})", batch, heads, len, dim); }

}  // namespace attnlab
