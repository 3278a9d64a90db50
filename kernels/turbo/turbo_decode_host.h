// attnlab kernels: the host side of TurboAttention's decode kernels (turbo_decode.h) — the compressed
// caches of every (batch, KV head) uploaded in the layout of core/variants/turbo_layout.h, read back for
// the bit-for-bit checks, and one correctness launch with poisoned outputs.
#pragma once

#include "core/params.h"
#include "core/problem.h"
#include "core/tensor.h"
#include "core/variants/turbo_cache.h"
#include "kernels/common/cuda_check.h"
#include "kernels/turbo/turbo_decode.h"

#include <vector>

namespace attnlab::kernels {

using variants::turbo_detail::DeviceImage;
using variants::turbo_detail::HeadCache;

// Every pair's cache on the device. `args` points into the buffers; args.tokens advances with appends.
struct TurboDeviceCache {
  DeviceBuffer codes, code_offset, scale_zero, block_scales, k_buffer, v_buffer, universal, bits, pair_order;
  TurboCacheArgs args;
  std::vector<int64_t> offsets;  // host copy of code_offset
  std::vector<int> head_bits;    // host copy of bits
  size_t bytes() const;          // everything the cache holds on the device (each pair's codes at its width)
};

// What upload_turbo_cache uploads, on the host: every pair's image (device_image) back to back in pair order — codes
// (each pair's at `offsets`), s_int/z_int, block scales, buffers — their widths, universal scales and the attention's
// pair order, and the shape fields of TurboCacheArgs (its pointers unset).
struct TurboCacheImage {
  std::vector<uint8_t> codes;
  std::vector<int64_t> offsets;
  std::vector<int8_t> scale_zero, k_buffer, v_buffer;
  std::vector<float> block_scales, universal;
  std::vector<int> bits, pair_order;
  TurboCacheArgs shape;
};
TurboCacheImage turbo_cache_image(const std::vector<HeadCache>& heads, int slots);

// heads (B·H_kv, in (batch, KV head) order) with `slots` blocks of room each (≥ every head's blocks).
// All heads have the same prefill length; tokens = prefill + appended so far.
TurboDeviceCache upload_turbo_cache(const std::vector<HeadCache>& heads, int slots);

// An empty cache (zeros) for pairs of these widths (2 or 4 bits each, in pair order), `slots` blocks each,
// whose first prefill_tokens tokens turbo_cache_write_prefill (turbo_cache_write.h) will write.
TurboDeviceCache allocate_turbo_cache(const std::vector<int>& bits, int64_t d, int slots, int64_t prefill_tokens);

// After the GPU wrote the pairs' widths into c.bits (turbo_head_bits.h: a prefill that ranks its heads on the device),
// their host copies: head_bits, the pair order (4-bit pairs first; uploaded) and wide_pairs. The code offsets stay
// the allocation's, which must have room for every width (allocate_turbo_cache at the widest).
void read_back_turbo_widths(TurboDeviceCache& c);

// Pair `pair`'s cache read back as a DeviceImage (what device_image would have written).
DeviceImage download_turbo_head(const TurboDeviceCache& c, int pair);

// The reference's caches of every pair for problem p: the prefill's blocks of the first kv_len −
// decode_steps tokens and the decode_steps tokens appended through the buffer (turbo's parameters).
std::vector<HeadCache> turbo_host_caches(const Problem& p, const QKV& in, const ParamValues& params);

// Slots a cache needs for `tokens` tokens of which `prefill` came from the prefill.
int turbo_slots(int64_t prefill, int64_t tokens);

// SAS (or exp) as turbo's parameters ask for it.
TurboExpArgs turbo_exp_args(const ParamValues& params);

// The chains the kernel and the reference use (core/variants/turbo_chains.h).
int turbo_chains_for(const Problem& p, const ParamValues& params, const TurboCacheArgs& c);

struct TurboDecodeOutput {
  Tensor o;                // (B, Hq, 1, d)
  std::vector<float> lse;  // (B, Hq)
  int chains = 1;
};
// One attention launch over cache c for queries q (B, Hq, d) FP32 on the device, with poisoned outputs.
TurboDecodeOutput turbo_decode_once(const Problem& p, const TurboDeviceCache& c, const float* q_device,
                                    const TurboExpArgs& exp, int chains);

}  // namespace attnlab::kernels
