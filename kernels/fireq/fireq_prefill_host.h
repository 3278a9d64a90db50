// attnlab kernels: the host side of the fireq prefill kernel (fireq_prefill.h) — the reference's operands of
// every (batch, KV head) and query head, built with the reference's own steps, uploaded in the kernel's layout,
// and one correctness launch with poisoned outputs. For the kernel backend and the [gpu] tests. prefill_kv =
// int4: the INT4 cache of fireq_decode_host.h's fireq_cache_images (decode's); prefill_kv = fp8:
// fireq_detail::prepare_kv (§3.2.1's smoothing, then App. D's K̃ per token or per 128-key tile and V per tile by
// fireq::quantize_block_fp8). Both: fireq_detail::quantize_query (Q̃ = Q·s, Eq. 2).
#pragma once

#include "core/params.h"
#include "core/problem.h"
#include "core/tensor.h"
#include "kernels/common/cuda_check.h"
#include "kernels/fireq/fireq_prefill.h"

#include <cstdint>
#include <string>
#include <vector>

namespace attnlab::kernels {

// Why the kernel cannot run these parameters at head dim d ("" when it can): its KV tile is the reference's
// (block_c = 128); the INT4 mode reads decode's cache (E4M3 σ, the LUT) and runs the two-stage order.
std::string fireq_prefill_refusal(const ParamValues& params, int64_t d, bool three_stage = false);

// What the kernel reads, on the host, as the reference holds it.
struct FireqPrefillHostInputs {
  std::vector<uint8_t> q;       // (B, Hq, Nq, d) E4M3 bits of Q̂
  std::vector<float> beta_q;    // (B, Hq, Nq) β per query token
  bool int4_kv = false;         // prefill_kv = int4: `cache` alone; fp8: the rest
  std::vector<uint8_t> cache;   // the pairs' INT4 cache images (fireq_layout.h), back to back
  std::vector<uint8_t> k;       // (B, Hkv, Nkv, d) E4M3 bits of K̂
  std::vector<uint8_t> vt;      // (B, Hkv, d, kv_pad) V̂ᵀ, keys permuted per 16 (vt_permutation.h), padding 0
  std::vector<float> beta_k_tau;  // (B, Hkv, kv_pad) fl(β_K·τ) per key token, 0 for the padding keys, permuted per
                                  // 16 as V̂ᵀ's keys (vt_position_of)
  std::vector<float> beta_v;    // (B, Hkv, ⌈Nkv / 128⌉) β_V per KV tile
  bool k_tile = false;          // fp8_k_scale = tile: beta_k_tile_tau instead of beta_k_tau
  bool fp16_softmax = false;    // softmax_precision = fp16 (§3.2.2)
  std::vector<float> beta_k_tile_tau;  // (B, Hkv, ⌈Nkv / 128⌉) fl(β_K,j·τ) per KV tile
  int kv_pad = 0;               // Nkv rounded up to 16
};
// The variant's parameters must be the kernel's (fireq_prefill_refusal says which); throws InputError on
// non-finite keys or values, as the reference does.
FireqPrefillHostInputs fireq_prefill_host_inputs(const Problem& p, const QKV& in, const ParamValues& params);

struct FireqPrefillDeviceInputs {
  DeviceBuffer q, k, vt, beta_q, beta_k_tau, beta_k_tile_tau, beta_v, cache;
  int kv_pad = 0;
  bool int4_kv = false, k_tile = false, fp16_softmax = false;
  size_t bytes() const {
    return q.bytes() + k.bytes() + vt.bytes() + beta_q.bytes() + beta_k_tau.bytes() + beta_k_tile_tau.bytes() +
           beta_v.bytes() + cache.bytes();
  }
};
FireqPrefillDeviceInputs upload_fireq_prefill(const FireqPrefillHostInputs& h);

// Arguments for problem p over the device inputs, writing o/lse (two-stage order, ping-pong).
FireqPrefillArgs fireq_prefill_args(const Problem& p, const FireqPrefillDeviceInputs& in, __nv_bfloat16* o, float* lse);

struct FireqPrefillOutput {
  Tensor o;                // (B, Hq, Nq, d), BF16 values
  std::vector<float> lse;  // (B, Hq, Nq)
};
// One launch with poisoned outputs; throws std::runtime_error if any output stays unwritten (NaN).
FireqPrefillOutput fireq_prefill_once(const Problem& p, const FireqPrefillDeviceInputs& in, bool three_stage = false,
                                      bool ping_pong = true, bool tma_producer = true);

}  // namespace attnlab::kernels
