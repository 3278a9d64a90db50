// attnlab kernels: the host side of the kivi decode kernel (kivi_decode.h) — the reference's caches of
// every (batch, KV head) built with its own quantizer, uploaded in core/variants/kivi_layout.h's layout,
// the query in FP16, and one correctness launch with poisoned outputs. Shared by the kernel backend
// (kivi_backend.cpp) and the [gpu] tests.
#pragma once

#include "core/params.h"
#include "core/problem.h"
#include "core/quant/kivi.h"
#include "core/variants/kivi_image.h"
#include "core/tensor.h"
#include "kernels/common/cuda_check.h"
#include "kernels/kivi/kivi_decode.h"

#include <vector>

namespace attnlab::kernels {

// The `kivi` reference's cache of every pair (B·H_kv, in (batch, KV head) order): kivi_quantize with the
// variant's bits, group and residual, on the whole K/V of the problem (core/variants/kivi.cpp, step 1).
std::vector<quant::KiviCache> kivi_host_caches(const Problem& p, const QKV& in, const ParamValues& params);

// Every pair's cache in kivi_layout's device image, pair after pair in each part (what upload_kivi_cache uploads and
// the context-parallel ring sends); throws std::logic_error when the pairs differ in shape or the layout cannot hold them.
kivi_layout::Image pairs_image(const std::vector<quant::KiviCache>& caches);
// The shape fields of a's cache arguments (pairs, d, bits, group, the quantized and FP16 token counts) from the caches.
void set_cache_shape(KiviCacheArgs& a, const std::vector<quant::KiviCache>& caches);

// Every pair's cache on the device; `args` points into the buffers.
struct KiviDeviceCache {
  DeviceBuffer k_codes, v_codes, k_params, v_params, k_residual, v_residual;
  DeviceBuffer slot_exact;    // kivi_image.h's flags, (pairs, slots)
  int64_t inexact_slots = 0;  // slots the kernel dequantizes in FP32 (a flag of 0)
  KiviCacheArgs args;
  size_t bytes() const;  // everything the kernel may read of the cache
};
// Throws std::logic_error when the pairs differ in shape or the layout cannot hold them.
KiviDeviceCache upload_kivi_cache(const std::vector<quant::KiviCache>& caches);

// q (B, Hq, 1, d) rounded to FP16 (RNE, as the reference stores Q) on the device.
DeviceBuffer upload_query_fp16(const Tensor& q);

// Arguments for problem p over cache c and the device query, writing o/lse, with `chains` chains.
KiviDecodeArgs kivi_decode_args(const Problem& p, const KiviDeviceCache& c, const __half* q, __half* o, float* lse,
                                int chains);

// The chains kivi_decode_chains picks on the current device (its occupancy) with `sm_count` SMs.
int kivi_chains_here(const Problem& p, const KiviDeviceCache& c, int sm_count);

struct KiviDecodeOutput {
  Tensor o;                // (B, Hq, 1, d), FP16 values
  std::vector<float> lse;  // (B, Hq)
  int chains = 1;
};
// One launch with poisoned outputs; throws std::runtime_error if any output stays unwritten (NaN).
KiviDecodeOutput kivi_decode_once(const Problem& p, const KiviDeviceCache& c, const __half* q, int chains);

}  // namespace attnlab::kernels
