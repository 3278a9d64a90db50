// attnlab kernels: the host side of TurboAttention's prefill on the GPU — the pre-pass (the compressed
// cache, Alg. 1's INT8 tiles, Q's blocks; turbo_cache_write.h) then the attention (turbo_prefill_sm90.h),
// one correctness launch with poisoned outputs.
#pragma once

#include "core/params.h"
#include "core/problem.h"
#include "core/tensor.h"
#include "kernels/turbo_decode_host.h"

#include <vector>

namespace attnlab::kernels {

struct TurboPrefillOutput {
  Tensor o;                // (B, Hq, Nq, d)
  std::vector<float> lse;  // (B, Hq, Nq)
  TurboDeviceCache cache;  // the cache the pre-pass wrote (widths from the reference's ranking, Eq. 11–12)
};

// Prefill problem p with turbo's parameters (block_r = block_c = 64, p_scale tile, sas_precision fp32):
// every step on the GPU from the FP32 inputs. Throws std::invalid_argument where the kernel does not apply.
TurboPrefillOutput turbo_prefill_once(const Problem& p, const QKV& in, const ParamValues& params);

}  // namespace attnlab::kernels
