// attnlab kernels: one warp chain of a grouped-query decode kernel (flash2's and kivi's decode): the query heads of
// one KV head (G ≤ 8) are the N = 8 columns of mma.m16n8k16 — Sᵀ = K·Qᵀ and Oᵀ = Vᵀ·P̃ᵀ, K and Vᵀ the A operand —
// so every tile a warp loads serves the whole group. This is the chain's state, the online softmax of one tile
// (FlashAttention-2's, with tokens along the accumulator's rows) and the store of its result: the output where one
// chain covers the pair, else its normalized part and logsumexp for chain_merge.cuh.
#pragma once

#include "kernels/common/mma.cuh"

#include <cuda_fp16.h>

#include <cstddef>
#include <cstdint>

namespace attnlab::kernels::decode_chain {

inline constexpr unsigned kFull = 0xffffffffu;
inline constexpr float kLog2e = 1.4426950408889634f;

// Lane (g, t) holds query heads 2t and 2t + 1 (i = 0, 1): the running max m (scaled, log₂ units), its partial ℓ
// over the tokens it holds, and Oᵀ's accumulators for channels 16·mi + g (registers 0, 1) and 16·mi + g + 8
// (registers 2, 3).
template <int D>
struct Chain {
  float m[2], l[2];
  float o[D / 16][4];
  __device__ __forceinline__ void start() {
#pragma unroll
    for (int i = 0; i < 2; ++i) m[i] = -INFINITY, l[i] = 0.f;
#pragma unroll
    for (int mi = 0; mi < D / 16; ++mi)
#pragma unroll
      for (int e = 0; e < 4; ++e) o[mi][e] = 0.f;
  }
};

__device__ __forceinline__ uint32_t transpose8x8(uint32_t x) {  // an 8×8 b16 fragment, transposed (sm_75+)
  uint32_t y;
  asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;\n" : "=r"(y) : "r"(x));
  return y;
}

// The online softmax of one tile of 16·MT tokens: tokens ≥ valid masked, m_new = max(m, max S·scale·log₂e),
// P̃ = 2^{S·scale·log₂e − m_new}, ℓ and O rescaled by 2^{m_old − m_new}. Returns P̃ in FP16 as the B fragments
// (k = tokens, n = heads) of the P̃·V product: the accumulator's 8×8 blocks (token rows, head columns) transposed.
template <int D, int MT>
__device__ __forceinline__ void softmax_tile(float (&s)[MT][4], int valid, float scale_log2, Chain<D>& ch,
                                             uint32_t (&pb)[MT][2]) {
  const int g = (threadIdx.x % 32) / 4;
  if (valid < 16 * MT) {
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        if (16 * mt + g + 8 * (e / 2) >= valid) s[mt][e] = -INFINITY;
  }
  float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int e = 0; e < 4; ++e) mx[e % 2] = fmaxf(mx[e % 2], s[mt][e]);
  float alpha[2], shift[2];
#pragma unroll
  for (int i = 0; i < 2; ++i) {
#pragma unroll
    for (int x = 4; x < 32; x *= 2) mx[i] = fmaxf(mx[i], __shfl_xor_sync(kFull, mx[i], x));  // over the 8 g
    const float m_new = fmaxf(ch.m[i], mx[i] * scale_log2);
    shift[i] = m_new == -INFINITY ? 0.f : m_new;  // a head that has seen nothing yet stays empty
    alpha[i] = ch.m[i] == -INFINITY ? 0.f : ex2(ch.m[i] - m_new);
    ch.m[i] = m_new;
    ch.l[i] *= alpha[i];
  }
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      s[mt][e] = ex2(fmaf(s[mt][e], scale_log2, -shift[e % 2]));  // −∞ → 0
      ch.l[e % 2] += s[mt][e];
    }
  // Once the running maxima settle, α = 1 for every head of the warp: skipping the multiply is exact.
  if (__any_sync(kFull, alpha[0] != 1.f || alpha[1] != 1.f)) {
#pragma unroll
    for (int mi = 0; mi < D / 16; ++mi)
#pragma unroll
      for (int e = 0; e < 4; ++e) ch.o[mi][e] *= alpha[e % 2];
  }
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
    pb[mt][0] = transpose8x8(pack_half2(s[mt][0], s[mt][1]));  // tokens 2t, 2t+1 of head g
    pb[mt][1] = transpose8x8(pack_half2(s[mt][2], s[mt][3]));  // tokens 2t+8, 2t+9
  }
}

// Where a chain's result goes: the output O (B·Hq rows of d, FP16) and its logsumexp, or — with chains > 1 — the
// merge's workspace (chains × rows × d values, then chains × rows logsumexps; chain_merge.cuh).
struct ChainOut {
  __half* o;
  float* lse;
  float* workspace;
  int chains, chain;
  size_t rows_total;
};

// ℓ over the 8 lanes of a head, O = G/ℓ, L = m + log ℓ (natural units), for the group's heads whose first output
// row is `row0` (head h of the group at row0 + h).
template <int D>
__device__ __forceinline__ void store(Chain<D>& ch, int group, size_t row0, const ChainOut& out) {
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
#pragma unroll
  for (int i = 0; i < 2; ++i) {
#pragma unroll
    for (int x = 4; x < 32; x *= 2) ch.l[i] += __shfl_xor_sync(kFull, ch.l[i], x);
    const int head = 2 * t + i;
    if (head >= group) continue;
    const size_t row = row0 + head;
    const bool empty = !(ch.l[i] > 0.f);
    const float lse = empty ? -INFINITY : (ch.m[i] + log2f(ch.l[i])) / kLog2e;
#pragma unroll
    for (int mi = 0; mi < D / 16; ++mi)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int channel = 16 * mi + g + 8 * h;
        const float x = empty ? 0.f : ch.o[mi][2 * h + i] / ch.l[i];
        if (out.chains == 1) out.o[row * D + channel] = __float2half_rn(x);
        else out.workspace[(size_t(out.chain) * out.rows_total + row) * D + channel] = x;
      }
    if (g == 0) {
      if (out.chains == 1) out.lse[row] = lse;
      else out.workspace[size_t(out.chains) * out.rows_total * D + size_t(out.chain) * out.rows_total + row] = lse;
    }
  }
}

// Qᵀ as the B operand (k = channels, n = heads): head g of the group at q (row stride D), channels 2t.. and 2t + 8..
// of each k-step; columns past the group are 0 (their scores are computed, never stored).
template <int D>
__device__ __forceinline__ void load_query(const __half* q, int group, uint32_t (&qf)[D / 16][2]) {
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const __half* row = q + size_t(g) * D;
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
    qf[kk][0] = g < group ? __ldg(reinterpret_cast<const unsigned*>(row + 16 * kk + 2 * t)) : 0u;
    qf[kk][1] = g < group ? __ldg(reinterpret_cast<const unsigned*>(row + 16 * kk + 2 * t + 8)) : 0u;
  }
}

}  // namespace attnlab::kernels::decode_chain
