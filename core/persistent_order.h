// attnlab core: the order in which persistent CTAs take a prefill kernel's query row blocks (flash2's row_blocks =
// persistent, kernels/flash2/flash2_sm90.cu) — one rule for the kernel, which launches by it, and the cost model, which
// places the row blocks on the SMs by it (sim/cost_model.cpp's tail).
//
// Bands of `band_heads` batch·heads one after the other — as many heads as keep their K and V (FP16; a query group
// shares its KV head's) within half the L2, so Q, O and the rest pass too — and within a band x-major: every head's
// first row block, then every head's second … (a causal head's blocks longest first). CTA c takes the row blocks
// c, c + CTAs, … of this order (flash2's persistent_dynamic: the next one not yet taken as it finishes one, in bands
// of one head): the CTAs running side by side read the band's K/V from L2, and a causal problem's longest blocks come
// first across the band, so a CTA's blocks vary in length (a head-major order would give CTA c the same block index
// every time where the blocks per head divide the CTA count). Measured on an H100 (kernels/PERF.md, "wgmma v4"): a
// band of "half the L2" (12 heads at N 4k, d 128) read 2.6× the grid's DRAM bytes — it does not stay in L2.
#pragma once

#include <algorithm>

namespace attnlab {

// The heads a band holds: half of an L2 of `l2_bytes` over one head's share of K and V in FP16, at least one and at most
// all `heads` (batch × query heads).
constexpr int persistent_band_heads(int heads, int group, int kv_len, int head_dim, double l2_bytes) {
  const double kv_per_head = 2.0 * kv_len * head_dim * 2 / std::max(1, group);
  const double band = 0.5 * l2_bytes / std::max(1.0, kv_per_head);
  return int(std::clamp(band, 1.0, double(std::max(1, heads))));
}

// The w-th row block of the order: batch·head bh's x-th (of `blocks` a head), for `heads` batch·heads in bands of
// `band_heads`.
constexpr void persistent_row_block(int heads, int band_heads, int blocks, int w, int& bh, int& x) {
  const int band = w / (band_heads * blocks), r = w % (band_heads * blocks);
  const int in_band = std::min(band_heads, heads - band * band_heads);
  x = r / in_band, bh = band * band_heads + r % in_band;
}

}  // namespace attnlab
