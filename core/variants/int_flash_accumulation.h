// attnlab core: int_flash's pv_accumulation = across_tiles (core/variants/int_flash.cpp's head comment), the rule
// the reference, the kernel backend and the wgmma kernel (kernels/int8/int_flash_sm90.cu) all follow: which requests
// take it, and how many tiles an INT32 sum of P·V may hold before it is flushed. Plain integers here, so nvcc reads
// it too.
#pragma once

#include <cstdint>

namespace attnlab {
class ParamValues;
}

namespace attnlab::variants {

// The tiles an INT32 sum of P·V may hold: each tile adds at most 127·r_p·B_c in magnitude (|V codes| ≤ 127,
// P ∈ [0, r_p], B_c keys) and the sum must stay below 2³¹ (1 040 at r_p 127, B_c 128).
constexpr int64_t pv_flush_tiles(int64_t r_p, int64_t block_c) { return int64_t{2147483647} / (127 * r_p * block_c); }

// Whether int_flash's parameters ask for across_tiles: full INT8 only (half INT8 has no INT32 product to keep).
bool pv_across_tiles(const ParamValues& params);

}  // namespace attnlab::variants
