// attnlab kernels: the online softmax's bookkeeping (notes App. D) on one thread's share of a warpgroup
// MMA accumulator of B_c key columns — rows g and g + 8, columns 8n + 2t + {0, 1} (wgmma.cuh) — shared by
// the Hopper kernels (flash2_sm90.cu, int_flash_sm90.cu).
#pragma once

#include "kernels/common/mma.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>

namespace attnlab::kernels {

// Scores of keys a row does not see become −∞ (bottom-right causal alignment, ragged ends). Rows past
// q_len see every key: harmless, never stored.
template <int Bc>
__device__ __forceinline__ void mask_invisible(float (&s)[Bc / 2], int col0, int row0, int t, int q_len, int kv_len,
                                               bool causal) {
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int row = row0 + 8 * i;
    const int vis = row < q_len ? visible_keys(row, q_len, kv_len, causal) : kv_len;
#pragma unroll
    for (int n = 0; n < Bc / 8; ++n)
#pragma unroll
      for (int e = 0; e < 2; ++e)
        if (col0 + n * 8 + 2 * t + e >= vis) s[4 * n + 2 * i + e] = -INFINITY;
  }
}

// A thread's INT32 scores of one tile — rows row0 + 8i, keys col0 + 8n + 2t + e — into `scores` (one head's
// (q_len, kv_len), row-major), skipping rows and keys past the ends: the tests' dump of the INT8 kernels.
template <int Bc>
__device__ __forceinline__ void store_int_scores(const int (&si)[Bc / 2], int32_t* scores, int col0, int row0, int t,
                                                 int q_len, int kv_len) {
#pragma unroll
  for (int n = 0; n < Bc / 8; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int row = row0 + 8 * (e / 2), col = col0 + n * 8 + 2 * t + e % 2;
      if (row < q_len && col < kv_len) scores[size_t(row) * kv_len + col] = si[4 * n + e];
    }
}

// From this thread's row maxima `mx` of the unscaled scores s (however the caller reduced them):
// m_new = max(m, rowmax(s)·scale) over the quad's four threads (log₂ units); α = 2^{m_old − m_new}; ℓ ·= α.
// `shift` is what each row's exponents subtract: m_new, or 0 for a row that has seen nothing yet (so
// its −∞ scores still give 0, not NaN).
__device__ __forceinline__ void update_running_max_from(float (&mx)[2], float scale, float (&m)[2], float (&l)[2],
                                                        float (&alpha)[2], float (&shift)[2]) {
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    mx[i] = fmaxf(mx[i], __shfl_xor_sync(0xffffffffu, mx[i], 1));
    mx[i] = fmaxf(mx[i], __shfl_xor_sync(0xffffffffu, mx[i], 2));
    const float m_new = fmaxf(m[i], mx[i] * scale);
    shift[i] = m_new == -INFINITY ? 0.f : m_new;
    alpha[i] = m[i] == -INFINITY ? 0.f : ex2(m[i] - m_new);
    m[i] = m_new;
    l[i] *= alpha[i];
  }
}

// The same, the row maxima taken from s in one chain per row.
template <int Bc>
__device__ __forceinline__ void update_running_max(const float (&s)[Bc / 2], float scale, float (&m)[2], float (&l)[2],
                                                   float (&alpha)[2], float (&shift)[2]) {
  float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
  for (int n = 0; n < Bc / 8; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) mx[e / 2] = fmaxf(mx[e / 2], s[4 * n + e]);
  update_running_max_from(mx, scale, m, l, alpha, shift);
}

// Two FP32 values rounded to nearest even and stored as a pair of O's elements (FP16, or BF16: fireq).
__device__ __forceinline__ void store_pair(__half* p, float x0, float x1) {
  *reinterpret_cast<__half2*>(p) = __floats2half2_rn(x0, x1);
}
__device__ __forceinline__ void store_pair(__nv_bfloat16* p, float x0, float x1) {
  *reinterpret_cast<__nv_bfloat162*>(p) = __floats2bfloat162_rn(x0, x1);
}

// How the epilogue divides G by ℓ. divide: each of a thread's D/2 elements by ℓ, an IEEE division each (in SASS a
// reciprocal, a Newton step, FCHK and a slow-path branch: ≈ 10 instructions an element). reciprocal: 1/ℓ once per
// row (IEEE), then a multiply per element (FlashAttention-3's epilogue does the same): one more FP32 rounding, so
// |G·(1/ℓ) − G/ℓ| ≤ 2⁻²³·|G/ℓ| — 2¹² times below the FP16 rounding of O's store. The bits differ from divide's where
// that rounding sits near an FP16 boundary; a kernel's [gpu] bound against the reference absorbs it.
enum class RowScale { divide, reciprocal };

// The epilogue of one thread's rows: ℓ summed over the quad, O = (G/ℓ)·out_scale stored in O's format (row-major
// D values per row from `out`), the logsumexp L = (m + log₂ ℓ)/log₂e − log_offset in natural units. Rows
// that saw no key get O = 0 and L = −∞; rows past q_len are not stored.
template <int D, RowScale kRowScale = RowScale::divide, class Out>
__device__ __forceinline__ void store_rows(const float (&o)[D / 2], float (&l)[2], const float (&m)[2], int row0, int t,
                                           int q_len, Out* out, float* lse, float out_scale, float log_offset) {
  constexpr float kLog2e = 1.4426950408889634f;
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    l[i] += __shfl_xor_sync(0xffffffffu, l[i], 1);
    l[i] += __shfl_xor_sync(0xffffffffu, l[i], 2);
    const int row = row0 + 8 * i;
    if (row >= q_len) continue;
    const bool empty = !(l[i] > 0.f);
    Out* orow = out + size_t(row) * D;
    const float inv_l = kRowScale == RowScale::reciprocal && !empty ? 1.f / l[i] : 0.f;
    auto scaled = [&](float g) { return (kRowScale == RowScale::reciprocal ? g * inv_l : g / l[i]) * out_scale; };
#pragma unroll
    for (int n = 0; n < D / 8; ++n) {
      const float x0 = empty ? 0.f : scaled(o[4 * n + 2 * i]);
      const float x1 = empty ? 0.f : scaled(o[4 * n + 2 * i + 1]);
      store_pair(orow + n * 8 + 2 * t, x0, x1);
    }
    if (t == 0) lse[row] = empty ? -INFINITY : (m[i] + log2f(l[i])) / kLog2e - log_offset;
  }
}

}  // namespace attnlab::kernels
