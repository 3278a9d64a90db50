// attnlab kernels: Eq. 10 of TurboAttention (step 2 of progressive quantization) on the GPU, one channel
// of one block per thread — the same integers as quant::progressive_compress (core/quant/progressive.cpp),
// for the decode buffer's flush (turbo_decode.cu) and the prefill's cache (turbo_cache_write.cu).
#pragma once

#include "core/variants/turbo_layout.h"

#include <cuda_runtime.h>

#include <cstdint>

namespace attnlab::kernels::turbo_compress {

// rne(a / b) for integers, b > 0 (quant::div_rne).
__device__ __forceinline__ int div_rne(int a, int b) {
  int q = a / b, r = a % b;
  if (r < 0) r += b, --q;
  if (2 * r > b || (2 * r == b && (q & 1))) ++q;
  return q;
}
// quant::div_rne_small: one FP32 division, rounded through 1.5·2²³.
__device__ __forceinline__ int div_rne_small(int a, int b) {
  const float q = __fdiv_rn(float(a), float(b));
  return int(__fsub_rn(__fadd_rn(q, 12582912.0f), 12582912.0f));
}

// One channel `ch` of a block's INT8 values q[0 … rows) (rows ≤ N; a short block's absent tokens keep code
// 0) → its s_int, z_int, and each code ORed into `words`: the block's K codes, or its V codes (is_v) at
// byte offset `v_offset`, in turbo_layout.h's order. L = 2^bits − 1; up: IntScale::up instead of Alg. 1's
// nearest. Alg. 1: s^int = rne(range / L) (at least 1), z^int = rne(min / s^int), code = clamp(rne(q/s − z)).
template <int N>
__device__ __forceinline__ void compress_channel(const int8_t (&q)[N], int rows, int ch, int d, int bits, bool up,
                                                 bool is_v, int v_offset, uint32_t* words, int& s_int, int& z_int) {
  const int L = (1 << bits) - 1;
  int mn = 127, mx = -127;
  for (int tau = 0; tau < rows; ++tau) mn = min(mn, int(q[tau])), mx = max(mx, int(q[tau]));
  const int range = mx - mn;
  s_int = max(1, up ? (range + L - 1) / L : div_rne(range, L));
  z_int = div_rne(mn, s_int);
  for (int tau = 0; tau < rows; ++tau) {
    const int code = min(max(div_rne_small(int(q[tau]) - z_int * s_int, s_int), 0), L);
    const auto at = is_v ? turbo_layout::v_code_at(tau, ch, d, bits) : turbo_layout::k_code_at(tau, ch, d, bits);
    const int byte = at.byte + (is_v ? v_offset : 0);
    if (code != 0) atomicOr(&words[byte / 4], uint32_t(code) << (8 * (byte % 4) + at.shift));
  }
}

// The saturation flag of channel `ch` (one thread per channel, the CTA's d threads all here) into its slot's flag
// word (turbo_layout.h: bit ch mod 32 of K's or V's word ch / 32): a ballot of the warp that holds channels
// 32·w … 32·w + 31, written by its lane 0. sz: the slot's scale array; which: 0 for K, 1 for V.
__device__ __forceinline__ void write_flag_word(int8_t* sz, int d, int which, int ch, bool flag) {
  const uint32_t word = __ballot_sync(0xffffffffu, flag);
  uint32_t* words = reinterpret_cast<uint32_t*>(sz + turbo_layout::saturation_flags_at(d));
  if (ch % 32 == 0) words[turbo_layout::saturation_flag_word(d, which, ch)] = word;
}

}  // namespace attnlab::kernels::turbo_compress
