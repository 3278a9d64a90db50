// attnlab core: whether a producer warpgroup copies a kernel's K/V tiles — core/kernel_traits.h's
// kProducerLoads read against a variant request, one answer for the kernel backends (which launch by it) and
// the cost model (which schedules by it).
#pragma once

#include "core/config.h"
#include "core/kernel_traits.h"

#include <string>

namespace attnlab {

// True where v's kernel of generation `arch` has a row in kProducerLoads whose every (param, value) holds for v.
inline bool producer_loads(const VariantRequest& v, int arch) {
  for (const ProducerLoads& r : kProducerLoads) {
    if (v.id != r.variant || arch != r.arch) continue;
    bool holds = true;
    for (const ProducerLoads::Holds& h : r.when)
      holds = holds && (!h.param || (v.params.values().count(h.param) > 0 && v.params.choice(h.param) == h.value));
    if (holds) return true;
  }
  return false;
}

// Whether v's kv_tile parameter (where it has one) pins the 128-key tile.
inline bool kv_tile_pinned(const VariantRequest& v) {
  return v.params.values().count("kv_tile") > 0 && v.params.choice("kv_tile") != "auto";
}
// v's row_blocks parameter, "grid" where it has none.
inline std::string row_blocks_choice(const VariantRequest& v) {
  return v.params.values().count("row_blocks") > 0 ? v.params.choice("row_blocks") : "grid";
}
// Whether v asks for persistent CTAs: one per SM, each looping over row blocks (flash2.h's persistent).
inline bool persistent_row_blocks(const VariantRequest& v) { return row_blocks_choice(v) != "grid"; }
// Whether v's persistent CTAs take their next row block from a counter as they finish one (row_blocks =
// persistent_dynamic, FlashAttention-3's dynamic scheduler) rather than blocks c, c + CTAs, ….
inline bool persistent_dynamic(const VariantRequest& v) { return row_blocks_choice(v) == "persistent_dynamic"; }
// Whether v's persistent CTAs take the row blocks head by head, the grid's order — persistent_head_major, and the
// dynamic order, which then hands them out as the hardware does the grid's CTAs (the L2 bands read 2.6× the grid's
// DRAM bytes, kernels/PERF.md "wgmma v4") — rather than in L2 bands (core/persistent_order.h). The kernel's launch
// (flash2_schedule_of) and the model's schedule both take the band from here.
inline bool persistent_head_by_head(const VariantRequest& v) {
  return row_blocks_choice(v) == "persistent_head_major" || persistent_dynamic(v);
}
// Whether row t's wide tile is the faster for kv_len keys: its keys cost t.wide_tile_key_cost of block_c's each, but
// the last tile is computed whole — ⌈N/w⌉·w·cost against ⌈N/b⌉·b. flash2 at d 128 (cost 0.987): N 4096 takes 24 tiles
// of 176 = 4 224 keys' work (4 169 weighed) against 4 096 at 128, so 128 (measured on an H100 under locked clocks: 1.4%
// faster); 8 192 and 16 384 keep 176 (measured 0.2% and 0.4% faster; kernels/PERF.md, "v8's epilogue, v9 and v10").
inline bool wide_tile_pays(const KernelTraits& t, int64_t kv_len) {
  const auto computed_keys = [&](int w) { return double((kv_len + w - 1) / w) * w; };
  return computed_keys(t.block_c_not_causal) * t.wide_tile_key_cost < computed_keys(t.block_c);
}
// Whether the wide tile is v's to take, whatever kv_len: the row has one, the problem is not causal, a producer
// warpgroup copies the tiles and kv_tile does not pin 128.
inline bool wide_tile_may_run(const KernelTraits& t, const VariantRequest& v, bool causal) {
  return t.block_c_not_causal > 0 && !causal && !kv_tile_pinned(v) && producer_loads(v, t.arch);
}
// B_c of the prefill kernel of generation t.arch that v runs on a problem of kv_len keys, causal or not:
// t.block_c_not_causal where the wide tile may run and pays at kv_len; else t.block_c. The kernel backend launches by
// it, the cost model schedules by it.
inline int prefill_block_c(const KernelTraits& t, const VariantRequest& v, bool causal, int64_t kv_len) {
  return wide_tile_may_run(t, v, causal) && wide_tile_pays(t, kv_len) ? t.block_c_not_causal : t.block_c;
}

}  // namespace attnlab
