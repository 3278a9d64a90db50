// attnlab core: one function per variant returning its registry row (core/registry.cpp lists them).
#pragma once

#include "core/variant.h"
#include "core/variants/working_memory.h"

namespace attnlab::variants {

VariantSpec naive();   // variants/naive.cpp
VariantSpec flash2();  // variants/flash2.cpp
VariantSpec flash3_fp8();  // variants/flash3_fp8.cpp
VariantSpec int_flash();   // variants/int_flash.cpp
VariantSpec turbo();       // variants/turbo.cpp (prefill and decode)
VariantSpec kivi();        // variants/kivi.cpp
VariantSpec fireq();       // variants/fireq.cpp

}  // namespace attnlab::variants
