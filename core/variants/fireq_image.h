// attnlab core: a FireQ INT4 KV cache (core/fireq/token_int4.h: per-token codes and E4M3 scales of K̃ and
// V) laid out as the GPU holds it (core/variants/fireq_layout.h): the bytes the fireq decode kernel reads,
// packed on the host from the reference's own quantizer output, so kernel and reference start from the
// same codes and scales.
#pragma once

#include "core/fireq/token_int4.h"

#include <cstdint>
#include <vector>

namespace attnlab::fireq_layout {

// One pair's tiles (tiles_for(N) · tile_bytes(d) bytes). k and v are the same pair's K̃ and V caches: the
// same token count and d, E4M3 scales (ScaleFormat::fp8_e4m3). Throws std::logic_error otherwise, or when
// supports(d) is false.
std::vector<uint8_t> device_image(const fireq::TokenInt4& k, const fireq::TokenInt4& v);

// The code at (token, channel) of K (is_v false) or V in an image of `d` channels — the layout read back,
// for the tests.
int code_at(const std::vector<uint8_t>& image, int64_t d, bool is_v, int64_t token, int64_t channel);

}  // namespace attnlab::fireq_layout
