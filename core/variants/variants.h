// attnlab core: one function per variant returning its registry row (core/registry.cpp lists them).
#pragma once

#include "core/variant.h"

namespace attnlab::variants {

VariantSpec naive();   // variants/naive.cpp
VariantSpec flash2();  // variants/flash2.cpp

}  // namespace attnlab::variants
