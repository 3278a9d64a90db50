// attnlab kernels: the host side of the fireq decode kernel (fireq_decode.h) — the reference's INT4 caches
// of every (batch, KV head) and its E4M3 queries, built with the reference's own steps
// (core/variants/fireq_quantize.h, fireq::quantize_token_int4), uploaded in core/variants/fireq_layout.h's
// layout, and one correctness launch with poisoned outputs. Shared by the kernel backend (fireq_backend.cpp)
// and the [gpu] tests.
#pragma once

#include "core/params.h"
#include "core/problem.h"
#include "core/tensor.h"
#include "kernels/common/cuda_check.h"
#include "kernels/fireq/fireq_decode.h"

#include <cstdint>
#include <string>
#include <vector>

namespace attnlab::kernels {

// The INT4 cache of every pair (B·H_kv, in (batch, KV head) order) as the GPU holds it (fireq_layout.h),
// built by the reference's steps (§3.2.1's smoothing, Eq. 1 per token with E4M3 σ), and the pair's smoothing
// factors s (its queries take Q̃ = Q·s). Read by the decode kernel and by the prefill kernel's INT4 mode.
struct FireqCacheImages {
  std::vector<std::vector<uint8_t>> images;
  std::vector<std::vector<float>> smoothing;
};
FireqCacheImages fireq_cache_images(const Problem& p, const QKV& in, const ParamValues& params);
// The pairs' images back to back (every pair the same size), as one upload.
std::vector<uint8_t> concatenated(const std::vector<std::vector<uint8_t>>& images);

// What the kernel reads, on the host: one cache image per pair (B·H_kv, in (batch, KV head) order), Q̂ as
// E4M3 bytes (B, Hq, d) and β·τ per query head (FP32, the reference's product).
struct FireqHostInputs {
  std::vector<std::vector<uint8_t>> images;
  std::vector<uint8_t> q;
  std::vector<float> q_scale;
};
// The variant's parameters must be the kernel's (fireq_kernel_refusal says which).
FireqHostInputs fireq_host_inputs(const Problem& p, const QKV& in, const ParamValues& params);

// Why the kernel cannot run these parameters at head dim d and GQA group G ("" when it can): it implements
// the E4M3 token scales and the LUT (scale_format = fp8_e4m3, int4_to_fp8 = lut).
std::string fireq_kernel_refusal(const ParamValues& params, int64_t d, int64_t group);

struct FireqDeviceInputs {
  DeviceBuffer tiles, q, q_scale;
  FireqCacheArgs cache;
  size_t bytes() const { return tiles.bytes() + q.bytes() + q_scale.bytes(); }
};
FireqDeviceInputs upload_fireq(const Problem& p, const FireqHostInputs& h);

// Arguments for problem p over the device inputs, writing o/lse, with `chains` chains.
FireqDecodeArgs fireq_decode_args(const Problem& p, const FireqDeviceInputs& in, __nv_bfloat16* o, float* lse,
                                  int chains);

// The chains fireq_decode_chains picks on the current device (its occupancy) with `sm_count` SMs.
int fireq_chains_here(const Problem& p, int sm_count);

struct FireqDecodeOutput {
  Tensor o;                // (B, Hq, 1, d), BF16 values
  std::vector<float> lse;  // (B, Hq)
  int chains = 1;
};
// One launch with poisoned outputs; throws std::runtime_error if any output stays unwritten (NaN).
FireqDecodeOutput fireq_decode_once(const Problem& p, const FireqDeviceInputs& in, int chains);

}  // namespace attnlab::kernels
