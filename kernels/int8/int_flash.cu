// attnlab kernels: INT-FlashAttention (full INT8) on INT8 tensor cores (int_flash.h states the contract).
//
// The loop nest of flash2.cu: 4 warps × 32 query rows (two m16 tiles per warp share every K and Vᵀ
// fragment), K/Vᵀ tiles double-buffered with cp.async, shared-memory rows padded by 16 bytes so the eight
// rows an ldmatrix reads fall in distinct banks. What changes is the arithmetic of Alg. 1:
//   l. 9   S = ((QKᵀ)_int32·(s_Q·scale·log₂e))·s_K      (log₂ units: the exponential is ex2)
//   l. 11  P = ⌊127·2^{S − m}⌉  (cvt.rni: ties to even)   codes in [0, 127], packed as the A operand
//   l. 12  ℓ = 2^{m_old − m}·ℓ + rowsum P                  the quantized P, as the paper says
//   l. 13  O = 2^{m_old − m}·O + float(P·Vᵀ_int32)        one INT32 accumulator per tile, then FP32
//   l. 16  O = (O / ℓ)·s_V → FP16
#include "kernels/int8/int_flash.h"

#include "kernels/int8/int_flash_sm90.h"

#include "core/kernel_traits.h"
#include "kernels/common/mma.cuh"

#include <cmath>

namespace attnlab::kernels {

namespace {

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kR = 127.f;  // Alg. 1: INT8 maximum R, the scale of P's codes

template <int D, bool VHalf>
struct IntTile {
  static constexpr KernelTraits kTraits = *find_kernel_traits("int_flash", D);
  static constexpr int kBr = kTraits.block_r, kBc = kTraits.block_c, kWarps = kTraits.warps;
  static constexpr int kThreads = 32 * kWarps;
  static constexpr int kMTiles = kBr / (16 * kWarps);
  static constexpr int kQStride = D + 16;                       // bytes per shared-memory row of Q, K
  static constexpr int kVStride = VHalf ? (D + 8) * 2 : kBc + 16;  // bytes per row of V (FP16) or Vᵀ (INT8)
  static constexpr int kQ = kBr * kQStride, kK = kBc * kQStride, kV = (VHalf ? kBc : D) * kVStride;
  static constexpr int kStage = kK + kV + kBc * 4;  // K, Vᵀ, s_K of one tile
  static constexpr size_t kSmemBytes = size_t(kQ) + 2 * size_t(kStage);
  static_assert(kBr == 16 * kMTiles * kWarps && kBc % 32 == 0 && D % 32 == 0, "whole MMA tiles");
  static_assert(kTraits.stages == 2, "the loop below double-buffers");
};

// rows × bytes from global (row stride `gstride` bytes) into shared memory (row stride `sstride`), in
// 16-byte chunks; rows ≥ valid_rows or chunks at or past valid_bytes are zero-filled.
template <int Threads>
__device__ __forceinline__ void load_bytes(void* smem, const void* gmem, int rows, int bytes, int sstride,
                                           long gstride, int valid_rows, int valid_bytes) {
  const int chunks = bytes / 16;
  for (int i = threadIdx.x; i < rows * chunks; i += Threads) {
    const int r = i / chunks, c = (i % chunks) * 16;
    const bool ok = r < valid_rows && c < valid_bytes;
    cp_async_16(static_cast<char*>(smem) + r * sstride + c,
                static_cast<const char*>(gmem) + (ok ? r * gstride + c : 0), ok);
  }
}

// Dump: also write the INT32 scores to a.scores (a test-only instantiation; the timed kernel has none of it).
template <int D, bool VHalf, bool Dump>
__global__ void __launch_bounds__(IntTile<D, VHalf>::kThreads) int_flash_kernel(IntFlashArgs a) {
  using T = IntTile<D, VHalf>;
  constexpr int kM = T::kMTiles;
  extern __shared__ __align__(16) int8_t smem_i8[];
  int8_t* sQ = smem_i8;
  int8_t* sStage = smem_i8 + T::kQ;  // stage s: K, then Vᵀ, then s_K

  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, g = lane / 4, t = lane % 4;
  const int bh = blockIdx.y, b = bh / a.q_heads, h = bh % a.q_heads;
  const int kvh = h / (a.q_heads / a.kv_heads), bkv = b * a.kv_heads + kvh;
  const int row0 = blockIdx.x * T::kBr;
  const int8_t* k = a.k + size_t(bkv) * a.kv_len * D;
  const int8_t* vt = VHalf ? nullptr : a.vt + size_t(bkv) * D * a.kv_pad;
  const __half* v16 = VHalf ? a.v16 + size_t(bkv) * a.kv_len * D : nullptr;
  const float* s_k = a.s_k + size_t(bkv) * a.kv_pad;

  const int last_row = min(row0 + T::kBr, a.q_len) - 1;
  const int tiles = (visible_keys(last_row, a.q_len, a.kv_len, a.causal) + T::kBc - 1) / T::kBc;
  auto load_stage = [&](int stage, int j) {
    int8_t* st = sStage + stage * T::kStage;
    const int col0 = j * T::kBc;
    load_bytes<T::kThreads>(st, k + size_t(col0) * D, T::kBc, D, T::kQStride, D, a.kv_len - col0, D);
    if constexpr (VHalf)
      load_bytes<T::kThreads>(st + T::kK, v16 + size_t(col0) * D, T::kBc, D * 2, T::kVStride, D * 2, a.kv_len - col0,
                              D * 2);
    else
      load_bytes<T::kThreads>(st + T::kK, vt + col0, D, T::kBc, T::kVStride, a.kv_pad, D, a.kv_pad - col0);
    load_bytes<T::kThreads>(st + T::kK + T::kV, s_k + col0, 1, T::kBc * 4, 0, 0, 1, (a.kv_pad - col0) * 4);
  };
  load_bytes<T::kThreads>(sQ, a.q + (size_t(bh) * a.q_len + row0) * D, T::kBr, D, T::kQStride, D, a.q_len - row0, D);
  if (tiles > 0) load_stage(0, 0);
  cp_async_commit();

  float o[kM][D / 8][4] = {};
  float m[kM][2], l[kM][2], sq[kM][2];
  const int warp_row0 = row0 + warp * 16 * kM;
#pragma unroll
  for (int mi = 0; mi < kM; ++mi)
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const int row = warp_row0 + mi * 16 + g + 8 * i;
      m[mi][i] = -INFINITY, l[mi][i] = 0.f;
      sq[mi][i] = row < a.q_len ? a.s_q[size_t(bh) * a.q_len + row] : 0.f;
    }
  const float scale_log2 = a.scale * kLog2e;
  const int all_see = visible_keys(row0, a.q_len, a.kv_len, a.causal);
  const int8_t* sQw = sQ + (warp * 16 * kM + lane % 16) * T::kQStride + (lane / 16) * 16;
  cp_async_wait<0>();
  __syncthreads();

  for (int j = 0; j < tiles; ++j) {
    const int stage = j & 1;
    cp_async_wait<0>();  // one barrier per tile, as in flash2.cu
    __syncthreads();
    if (j + 1 < tiles) {
      load_stage(stage ^ 1, j + 1);
      cp_async_commit();
    }
    const int8_t* sK = sStage + stage * T::kStage;
    const int8_t* sV = sK + T::kK;
    const float* sSk = reinterpret_cast<const float*>(sV + T::kV);
    const int col0 = j * T::kBc;

    // l. 9: S = Q·Kᵀ in INT32.
    int si[kM][T::kBc / 8][4] = {};
#pragma unroll
    for (int kk = 0; kk < D / 32; ++kk) {
      uint32_t qf[kM][4];
#pragma unroll
      for (int mi = 0; mi < kM; ++mi) ldmatrix_x4(qf[mi], sQw + mi * 16 * T::kQStride + kk * 32);
#pragma unroll
      for (int nj = 0; nj < T::kBc / 16; ++nj) {
        uint32_t kb[4];
        ldmatrix_x4(kb, sK + (nj * 16 + lane % 8 + (lane / 16) * 8) * T::kQStride + kk * 32 + ((lane / 8) % 2) * 16);
#pragma unroll
        for (int mi = 0; mi < kM; ++mi) {
          mma_s8(si[mi][2 * nj], qf[mi], kb[0], kb[1]);
          mma_s8(si[mi][2 * nj + 1], qf[mi], kb[2], kb[3]);
        }
      }
    }

    constexpr int kSteps = VHalf ? T::kBc / 16 : T::kBc / 32;  // k-steps of P·V (FP16: 16 keys; INT8: 32)
    uint32_t pa[kM][kSteps][4];  // P as the A operand of P·V: INT8 codes, or FP16 under half-INT8
#pragma unroll
    for (int mi = 0; mi < kM; ++mi) {
      // l. 9's scaling, masks on the diagonal and ragged tiles, and the row maxima.
      float s[T::kBc / 8][4];
      float mx[2] = {-INFINITY, -INFINITY};
      // l. 9 with s_Q and the scale folded per row: (S·(s_Q·scale·log₂e))·s_K, two multiplies per score (the
      // reference's order ((s_Q·S)·s_K)·scale differs by FP32 reassociation, ≤ 2 ulp).
      const float row_scale[2] = {sq[mi][0] * scale_log2, sq[mi][1] * scale_log2};
      const bool masked = col0 + T::kBc > all_see;
      if constexpr (Dump) {
#pragma unroll
        for (int n = 0; n < T::kBc / 8; ++n)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int row = warp_row0 + mi * 16 + g + 8 * (e / 2), col = col0 + n * 8 + 2 * t + e % 2;
            if (row < a.q_len && col < a.kv_len)
              a.scores[(size_t(bh) * a.q_len + row) * a.kv_len + col] = si[mi][n][e];
          }
      }
#pragma unroll
      for (int n = 0; n < T::kBc / 8; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int i = e / 2, col = col0 + n * 8 + 2 * t + (e % 2);
          s[n][e] = (float(si[mi][n][e]) * row_scale[i]) * sSk[n * 8 + 2 * t + (e % 2)];
          if (masked) {
            const int row = warp_row0 + mi * 16 + g + 8 * i;
            const int vis = row < a.q_len ? visible_keys(row, a.q_len, a.kv_len, a.causal) : a.kv_len;
            if (col >= vis) s[n][e] = -INFINITY;
          }
          mx[i] = fmaxf(mx[i], s[n][e]);
        }
      float alpha[2], shift[2];
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        mx[i] = fmaxf(mx[i], __shfl_xor_sync(0xffffffffu, mx[i], 1));
        mx[i] = fmaxf(mx[i], __shfl_xor_sync(0xffffffffu, mx[i], 2));
        const float m_new = fmaxf(m[mi][i], mx[i]);
        shift[i] = m_new == -INFINITY ? 0.f : m_new;
        alpha[i] = m[mi][i] == -INFINITY ? 0.f : ex2(m[mi][i] - m_new);
        m[mi][i] = m_new;
        l[mi][i] *= alpha[i];
      }
      if constexpr (VHalf) {  // half-INT8: P̃ = 2^{S − m} in FP32, ℓ from it, FP16 A fragments for P̃·V
#pragma unroll
        for (int n = 0; n < T::kBc / 8; ++n)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            s[n][e] = ex2(s[n][e] - shift[e / 2]);
            l[mi][e / 2] += s[n][e];
          }
#pragma unroll
        for (int ks = 0; ks < kSteps; ++ks) {
          pa[mi][ks][0] = pack_half2(s[2 * ks][0], s[2 * ks][1]);
          pa[mi][ks][1] = pack_half2(s[2 * ks][2], s[2 * ks][3]);
          pa[mi][ks][2] = pack_half2(s[2 * ks + 1][0], s[2 * ks + 1][1]);
          pa[mi][ks][3] = pack_half2(s[2 * ks + 1][2], s[2 * ks + 1][3]);
        }
      } else {
        // l. 11–12: P = ⌊127·2^{S − m}⌉, ℓ from the codes.
        int pc[T::kBc / 8][4];
  #pragma unroll
        for (int n = 0; n < T::kBc / 8; ++n)
  #pragma unroll
          for (int e = 0; e < 4; ++e) {
            pc[n][e] = __float2int_rn(kR * ex2(s[n][e] - shift[e / 2]));
            l[mi][e / 2] += float(pc[n][e]);
          }
        // C layout → A layout (k32): a0/a1 take tiles 4ks, 4ks+1 (rows g, g+8), a2/a3 tiles 4ks+2, 4ks+3; the
        // keys land in the order int_flash_host.h's Vᵀ permutation expects.
  #pragma unroll
        for (int ks = 0; ks < T::kBc / 32; ++ks) {
          pa[mi][ks][0] = pack_s8x4(pc[4 * ks][0], pc[4 * ks][1], pc[4 * ks + 1][0], pc[4 * ks + 1][1]);
          pa[mi][ks][1] = pack_s8x4(pc[4 * ks][2], pc[4 * ks][3], pc[4 * ks + 1][2], pc[4 * ks + 1][3]);
          pa[mi][ks][2] = pack_s8x4(pc[4 * ks + 2][0], pc[4 * ks + 2][1], pc[4 * ks + 3][0], pc[4 * ks + 3][1]);
          pa[mi][ks][3] = pack_s8x4(pc[4 * ks + 2][2], pc[4 * ks + 2][3], pc[4 * ks + 3][2], pc[4 * ks + 3][3]);
        }
      }
      // Once the running maxima settle, α = 1 for every row of the warp: skipping the multiply by 1 is
      // exact and saves D/2 multiplies per thread and tile.
      if (__any_sync(0xffffffffu, alpha[0] != 1.f || alpha[1] != 1.f)) {
#pragma unroll
        for (int n = 0; n < D / 8; ++n) {
          o[mi][n][0] *= alpha[0], o[mi][n][1] *= alpha[0];
          o[mi][n][2] *= alpha[1], o[mi][n][3] *= alpha[1];
        }
      }
    }

    if constexpr (VHalf) {  // P̃·V on FP16 tensor cores, V by transposing ldmatrix (as in flash2.cu)
      const __half* sV16 = reinterpret_cast<const __half*>(sV);
      constexpr int kStride16 = D + 8;
#pragma unroll
      for (int ks = 0; ks < kSteps; ++ks)
#pragma unroll
        for (int dn = 0; dn < D / 16; ++dn) {
          uint32_t vb[4];
          ldmatrix_x4_trans(vb, sV16 + (ks * 16 + lane % 8 + ((lane / 8) % 2) * 8) * kStride16 + dn * 16 + (lane / 16) * 8);
#pragma unroll
          for (int mi = 0; mi < kM; ++mi) {
            mma_f16(o[mi][2 * dn], pa[mi][ks], vb[0], vb[1]);
            mma_f16(o[mi][2 * dn + 1], pa[mi][ks], vb[2], vb[3]);
          }
        }
    } else {
      // l. 13: O += float(P·V), one INT32 accumulator per (m-tile, pair of dim tiles), Vᵀ fragments shared.
  #pragma unroll
      for (int dn = 0; dn < D / 16; ++dn) {
        int acc[kM][2][4] = {};
  #pragma unroll
        for (int ks = 0; ks < T::kBc / 32; ++ks) {
          uint32_t vb[4];
          ldmatrix_x4(vb, sV + (dn * 16 + lane % 8 + (lane / 16) * 8) * T::kVStride + ks * 32 + ((lane / 8) % 2) * 16);
  #pragma unroll
          for (int mi = 0; mi < kM; ++mi) {
            mma_s8(acc[mi][0], pa[mi][ks], vb[0], vb[1]);
            mma_s8(acc[mi][1], pa[mi][ks], vb[2], vb[3]);
          }
        }
  #pragma unroll
        for (int mi = 0; mi < kM; ++mi)
  #pragma unroll
          for (int e = 0; e < 4; ++e) {
            o[mi][2 * dn][e] += float(acc[mi][0][e]);
            o[mi][2 * dn + 1][e] += float(acc[mi][1][e]);
          }
      }
    }
  }

  // l. 16: O = (O/ℓ)·s_V; L = m + log ℓ − log R (natural units). Half-INT8: O/ℓ, L = m + log ℓ.
  const float s_v = VHalf ? 1.f : a.s_v[bkv];
  const float log_r = VHalf ? 0.f : logf(kR);
#pragma unroll
  for (int mi = 0; mi < kM; ++mi)
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      l[mi][i] += __shfl_xor_sync(0xffffffffu, l[mi][i], 1);
      l[mi][i] += __shfl_xor_sync(0xffffffffu, l[mi][i], 2);
      const int row = warp_row0 + mi * 16 + g + 8 * i;
      if (row >= a.q_len) continue;
      const bool empty = !(l[mi][i] > 0.f);
      const size_t out_row = size_t(bh) * a.q_len + row;
      __half* orow = a.o + out_row * D;
#pragma unroll
      for (int n = 0; n < D / 8; ++n) {
        const float x0 = empty ? 0.f : (VHalf ? o[mi][n][2 * i] / l[mi][i] : (o[mi][n][2 * i] / l[mi][i]) * s_v);
        const float x1 =
            empty ? 0.f : (VHalf ? o[mi][n][2 * i + 1] / l[mi][i] : (o[mi][n][2 * i + 1] / l[mi][i]) * s_v);
        *reinterpret_cast<__half2*>(orow + n * 8 + 2 * t) = __floats2half2_rn(x0, x1);
      }
      if (t == 0) a.lse[out_row] = empty ? -INFINITY : (m[mi][i] + log2f(l[mi][i])) / kLog2e - log_r;
    }
}

template <int D, bool VHalf, bool Dump = false>
cudaError_t launch(const IntFlashArgs& a, cudaStream_t stream) {
  using T = IntTile<D, VHalf>;
  if constexpr (!Dump)
    if (a.scores) return launch<D, VHalf, true>(a, stream);
  if (const cudaError_t e = cudaFuncSetAttribute(int_flash_kernel<D, VHalf, Dump>,
                                                 cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                 static_cast<int>(T::kSmemBytes));
      e != cudaSuccess)
    return e;
  const dim3 grid((a.q_len + T::kBr - 1) / T::kBr, a.batch * a.q_heads);
  int_flash_kernel<D, VHalf, Dump><<<grid, T::kThreads, T::kSmemBytes, stream>>>(a);
  return cudaGetLastError();
}

}  // namespace

bool int_flash_supports(int head_dim) { return find_kernel_traits("int_flash", head_dim) != nullptr; }

KernelPath int_flash_resolved_path(const IntFlashArgs& a) {
  if (a.path != KernelPath::automatic) return a.path;
  // The generation decides the tile width, which int_flash's numbers depend on: the caller chooses it by
  // core/kernel_traits.h's kernel_generation (the backend does); `automatic` keeps the mma.sync kernel,
  // whose B_c is the variant's default block_c.
  return KernelPath::warp_mma;
}

cudaError_t int_flash_forward(const IntFlashArgs& a, cudaStream_t stream) {
  if (a.kv_pad % 16 != 0 || a.kv_pad < a.kv_len || (a.v_fp16 && a.v16 == nullptr)) return cudaErrorInvalidValue;
  if (int_flash_resolved_path(a) == KernelPath::warpgroup_mma) {
    if (!warpgroup_mma_available() || !int_flash_sm90_supports(a.head_dim)) return cudaErrorNotSupported;
    return int_flash_sm90_forward(a, stream);
  }
  if (a.pv_across_tiles) return cudaErrorNotSupported;  // this kernel adds P·V per tile (Alg. 1 l. 13)
  switch (a.head_dim) {
    case 64: return a.v_fp16 ? launch<64, true>(a, stream) : launch<64, false>(a, stream);
    case 128: return a.v_fp16 ? launch<128, true>(a, stream) : launch<128, false>(a, stream);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace attnlab::kernels
