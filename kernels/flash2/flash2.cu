// attnlab kernels: FlashAttention-2 forward on FP16 tensor cores (flash2.h states the contract).
//
// CTA = kWarps warps over a B_r × d query block; warp w owns B_r / kWarps rows (kMTiles m16 tiles) and
// keeps its S tile, P̃ and O accumulator in registers; Q stays in shared memory and its fragments are
// re-read per k-step (FlashAttention-2's choice at d = 128, to stay under 255 registers). Per KV tile (B_c keys, double-buffered
// with cp.async: tile j + 1 is in flight while tile j is computed):
//   S = Q·Kᵀ                      mma.m16n8k16, K fragments by ldmatrix from shared memory
//   m, ℓ, P̃ = e^{S·scale − m}    FP32; exp as 2^x with the scale folded in (scale·log₂e), ex2 on the SFU
//   O = e^{m_old − m_new}·O + P̃·V P̃ rounded to FP16 straight from the S registers (mma.cuh), V by ldmatrix.trans
// Shared-memory rows are padded by 16 bytes (d + 8 halves), so the 8 rows one ldmatrix reads fall in
// distinct banks. Rows and keys past the ends are zero-filled by cp.async and masked in the softmax.
#include "kernels/flash2/flash2.h"

#include "kernels/flash2/flash2_sm90.h"

#include "core/kernel_traits.h"
#include "kernels/common/mma.cuh"

#include <algorithm>
#include <cfloat>
#include <cmath>

namespace attnlab::kernels {

namespace {

constexpr float kLog2e = 1.4426950408889634f;

template <int D>
struct Tile {
  static constexpr KernelTraits kTraits = *find_kernel_traits("flash2", D);
  static constexpr int kBr = kTraits.block_r, kBc = kTraits.block_c, kWarps = kTraits.warps;
  static constexpr int kThreads = 32 * kWarps;
  static constexpr int kStride = D + 8;  // halves per shared-memory row
  static constexpr int kQ = kBr * kStride, kKV = kBc * kStride;
  static constexpr size_t kSmemBytes = size_t(kQ + 4 * kKV) * sizeof(__half);  // Q, 2 stages × (K, V)
  static constexpr int kMTiles = kBr / (16 * kWarps);  // m16 tiles of query rows per warp
  static_assert(kBr == 16 * kMTiles * kWarps, "whole m16 tiles of query rows per warp");
  static_assert(kBc % 16 == 0 && D % 16 == 0, "whole MMA tiles");
  static_assert(kTraits.stages == 2, "the loop below double-buffers");
};

// rows × D halves from global (row stride D) into shared memory (row stride D + 8); rows ≥ valid are 0.
template <int D, int Threads>
__device__ __forceinline__ void load_tile(__half* smem, const __half* gmem, int rows, int valid) {
  constexpr int kChunks = D / 8;  // 16-byte chunks per row
  for (int i = threadIdx.x; i < rows * kChunks; i += Threads) {
    const int r = i / kChunks, c = (i % kChunks) * 8;
    const bool ok = r < valid;
    cp_async_16(smem + r * (D + 8) + c, gmem + (ok ? size_t(r) * D + c : 0), ok);
  }
}

template <int D>
__global__ void __launch_bounds__(Tile<D>::kThreads) flash2_kernel(Flash2Args a) {
  using T = Tile<D>;
  constexpr int kM = T::kMTiles;  // m16 tiles of query rows per warp
  extern __shared__ __align__(16) __half smem[];
  __half* sQ = smem;
  __half* sKV = smem + T::kQ;  // stage s: K at sKV + 2s·kKV, V at sKV + (2s + 1)·kKV

  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, g = lane / 4, t = lane % 4;
  const int bh = blockIdx.y, b = bh / a.q_heads, h = bh % a.q_heads;
  const int kvh = h / (a.q_heads / a.kv_heads);  // notes §3.1: query head h reads KV head ⌈h/R⌉
  const int row0 = blockIdx.x * T::kBr;
  const __half* q = a.q + (size_t(bh) * a.q_len + row0) * D;
  const __half* k = a.k + (size_t(b) * a.kv_heads + kvh) * size_t(a.kv_len) * D;
  const __half* v = a.v + (size_t(b) * a.kv_heads + kvh) * size_t(a.kv_len) * D;

  // This CTA's KV tiles: those its last row sees, then this split's share of them.
  const int last_row = min(row0 + T::kBr, a.q_len) - 1;
  const int tiles = (visible_keys(last_row, a.q_len, a.kv_len, a.causal) + T::kBc - 1) / T::kBc;
  const int per_split = (tiles + a.splits - 1) / a.splits;
  const int j_begin = blockIdx.z * per_split, j_end = min(tiles, j_begin + per_split);

  load_tile<D, T::kThreads>(sQ, q, T::kBr, a.q_len - row0);
  if (j_begin < j_end) {
    const int col0 = j_begin * T::kBc;
    load_tile<D, T::kThreads>(sKV, k + size_t(col0) * D, T::kBc, a.kv_len - col0);
    load_tile<D, T::kThreads>(sKV + T::kKV, v + size_t(col0) * D, T::kBc, a.kv_len - col0);
  }
  cp_async_commit();

  // Warp w owns query rows 32w + 16mi + {g, g + 8} for its m-tiles mi (FlashAttention-2's split: Q
  // across warps, every K/V fragment read once per warp and used by both m-tiles).
  float o[kM][D / 8][4] = {};  // O accumulators
  float m[kM][2], l[kM][2];    // running max (scaled, log₂ units) and thread-partial ℓ per row
#pragma unroll
  for (int mi = 0; mi < kM; ++mi) m[mi][0] = m[mi][1] = -INFINITY, l[mi][0] = l[mi][1] = 0.f;
  const float scale_log2 = a.scale * kLog2e;
  const int warp_row0 = row0 + warp * 16 * kM;
  // Keys every row of the CTA sees: tiles below this need no mask (padding rows past q_len see all keys:
  // harmless, never stored).
  const int all_see = visible_keys(row0, a.q_len, a.kv_len, a.causal);
  const __half* sQw = sQ + (warp * 16 * kM + lane % 16) * T::kStride + (lane / 16) * 8;
  cp_async_wait<0>();  // Q (and the first K/V tile) in shared memory
  __syncthreads();

  for (int j = j_begin; j < j_end; ++j) {
    const int stage = (j - j_begin) & 1;
    // One barrier per tile: wait for tile j, then sync — after which every warp has left tile j − 1, so
    // its stage can take the prefetch of tile j + 1, which then loads under tile j's compute.
    cp_async_wait<0>();
    __syncthreads();
    if (j + 1 < j_end) {
      const int col1 = (j + 1) * T::kBc;
      __half* next = sKV + 2 * (stage ^ 1) * T::kKV;
      load_tile<D, T::kThreads>(next, k + size_t(col1) * D, T::kBc, a.kv_len - col1);
      load_tile<D, T::kThreads>(next + T::kKV, v + size_t(col1) * D, T::kBc, a.kv_len - col1);
      cp_async_commit();
    }
    const __half* sK = sKV + 2 * stage * T::kKV;
    const __half* sV = sK + T::kKV;
    const int col0 = j * T::kBc;

    // S = Q·Kᵀ: per k-step, the Q fragments of both m-tiles (from shared memory) and each K fragment once.
    float s[kM][T::kBc / 8][4] = {};
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      uint32_t qf[kM][4];
#pragma unroll
      for (int mi = 0; mi < kM; ++mi) ldmatrix_x4(qf[mi], sQw + mi * 16 * T::kStride + kk * 16);
#pragma unroll
      for (int nj = 0; nj < T::kBc / 16; ++nj) {
        uint32_t kb[4];
        ldmatrix_x4(kb, sK + (nj * 16 + lane % 8 + (lane / 16) * 8) * T::kStride + kk * 16 + ((lane / 8) % 2) * 8);
#pragma unroll
        for (int mi = 0; mi < kM; ++mi) {
          mma_f16(s[mi][2 * nj], qf[mi], kb[0], kb[1]);
          mma_f16(s[mi][2 * nj + 1], qf[mi], kb[2], kb[3]);
        }
      }
    }

    // Online softmax (App. D): m_new = max(m, rowmax S·scale), P̃ = 2^{S·scale·log₂e − m_new} (one FFMA
    // and one ex2 per score), ℓ and O rescaled by 2^{m_old − m_new}.
#pragma unroll
    for (int mi = 0; mi < kM; ++mi) {
      if (col0 + T::kBc > all_see) {  // the diagonal or the ragged end: mask keys a row does not see
#pragma unroll
        for (int i = 0; i < 2; ++i) {
          const int row = warp_row0 + mi * 16 + g + 8 * i;
          const int vis = row < a.q_len ? visible_keys(row, a.q_len, a.kv_len, a.causal) : a.kv_len;
#pragma unroll
          for (int n = 0; n < T::kBc / 8; ++n)
#pragma unroll
            for (int e = 0; e < 2; ++e)
              if (col0 + n * 8 + 2 * t + e >= vis) s[mi][n][2 * i + e] = -INFINITY;
        }
      }
      float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
      for (int n = 0; n < T::kBc / 8; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) mx[e / 2] = fmaxf(mx[e / 2], s[mi][n][e]);
      float alpha[2], shift[2];
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        mx[i] = fmaxf(mx[i], __shfl_xor_sync(0xffffffffu, mx[i], 1));
        mx[i] = fmaxf(mx[i], __shfl_xor_sync(0xffffffffu, mx[i], 2));
        const float m_new = fmaxf(m[mi][i], mx[i] * scale_log2);
        shift[i] = m_new == -INFINITY ? 0.f : m_new;  // a row that has seen nothing yet stays empty
        alpha[i] = m[mi][i] == -INFINITY ? 0.f : ex2(m[mi][i] - m_new);
        m[mi][i] = m_new;
        l[mi][i] *= alpha[i];
      }
#pragma unroll
      for (int n = 0; n < T::kBc / 8; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int i = e / 2;
          s[mi][n][e] = ex2(fmaf(s[mi][n][e], scale_log2, -shift[i]));  // −∞ → 0
          l[mi][i] += s[mi][n][e];
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

    // O += P̃·V: P̃ (FP16) from the S registers, each V fragment (transposing ldmatrix) used by both m-tiles.
#pragma unroll
    for (int ks = 0; ks < T::kBc / 16; ++ks) {
      uint32_t pa[kM][4];
#pragma unroll
      for (int mi = 0; mi < kM; ++mi) {
        pa[mi][0] = pack_half2(s[mi][2 * ks][0], s[mi][2 * ks][1]);
        pa[mi][1] = pack_half2(s[mi][2 * ks][2], s[mi][2 * ks][3]);
        pa[mi][2] = pack_half2(s[mi][2 * ks + 1][0], s[mi][2 * ks + 1][1]);
        pa[mi][3] = pack_half2(s[mi][2 * ks + 1][2], s[mi][2 * ks + 1][3]);
      }
#pragma unroll
      for (int dn = 0; dn < D / 16; ++dn) {
        uint32_t vb[4];
        ldmatrix_x4_trans(vb, sV + (ks * 16 + lane % 8 + ((lane / 8) % 2) * 8) * T::kStride + dn * 16 + (lane / 16) * 8);
#pragma unroll
        for (int mi = 0; mi < kM; ++mi) {
          mma_f16(o[mi][2 * dn], pa[mi], vb[0], vb[1]);
          mma_f16(o[mi][2 * dn + 1], pa[mi], vb[2], vb[3]);
        }
      }
    }
  }

  // Epilogue: ℓ summed over the quad, O = G/ℓ, L = m + log ℓ (natural units).
  const size_t rows_total = size_t(a.batch) * a.q_heads * a.q_len;
#pragma unroll
  for (int mi = 0; mi < kM; ++mi)
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      l[mi][i] += __shfl_xor_sync(0xffffffffu, l[mi][i], 1);
      l[mi][i] += __shfl_xor_sync(0xffffffffu, l[mi][i], 2);
      const int row = warp_row0 + mi * 16 + g + 8 * i;
      if (row >= a.q_len) continue;
      const bool empty = !(l[mi][i] > 0.f);
      const float lse = empty ? -INFINITY : (m[mi][i] + log2f(l[mi][i])) / kLog2e;
      const size_t out_row = size_t(bh) * a.q_len + row;
      if (a.splits == 1) {
        __half* orow = a.o + out_row * D;
#pragma unroll
        for (int n = 0; n < D / 8; ++n) {
          const float x0 = empty ? 0.f : o[mi][n][2 * i] / l[mi][i], x1 = empty ? 0.f : o[mi][n][2 * i + 1] / l[mi][i];
          *reinterpret_cast<__half2*>(orow + n * 8 + 2 * t) = __floats2half2_rn(x0, x1);
        }
        if (t == 0) a.lse[out_row] = lse;
      } else {  // this split's normalized partial result and its logsumexp, for flash2_combine
        float* orow = a.workspace + (size_t(blockIdx.z) * rows_total + out_row) * D;
#pragma unroll
        for (int n = 0; n < D / 8; ++n) {
          orow[n * 8 + 2 * t] = empty ? 0.f : o[mi][n][2 * i] / l[mi][i];
          orow[n * 8 + 2 * t + 1] = empty ? 0.f : o[mi][n][2 * i + 1] / l[mi][i];
        }
        if (t == 0) a.workspace[size_t(a.splits) * rows_total * D + size_t(blockIdx.z) * rows_total + out_row] = lse;
      }
    }
}

// Merges the splits of one output row (blockDim.x = d threads): O = Σₛ e^{Lₛ − L}·Oₛ, L = log Σₛ e^{Lₛ}.
__global__ void flash2_combine(Flash2Args a) {
  const size_t rows_total = size_t(a.batch) * a.q_heads * a.q_len, row = blockIdx.x;
  const float* lse_s = a.workspace + size_t(a.splits) * rows_total * a.head_dim;
  float top = -INFINITY;
  for (int s = 0; s < a.splits; ++s) top = fmaxf(top, lse_s[s * rows_total + row]);
  float total = 0.f, acc = 0.f;
  for (int s = 0; s < a.splits; ++s) {
    const float w = top == -INFINITY ? 0.f : expf(lse_s[s * rows_total + row] - top);
    total += w;
    acc += w * a.workspace[(s * rows_total + row) * a.head_dim + threadIdx.x];
  }
  a.o[row * a.head_dim + threadIdx.x] = __float2half_rn(total > 0.f ? acc / total : 0.f);
  if (threadIdx.x == 0) a.lse[row] = total > 0.f ? top + logf(total) : -INFINITY;
}

template <int D>
cudaError_t launch(const Flash2Args& a, cudaStream_t stream) {
  using T = Tile<D>;
  if (const cudaError_t e = cudaFuncSetAttribute(flash2_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                 static_cast<int>(T::kSmemBytes));
      e != cudaSuccess)
    return e;
  const dim3 grid((a.q_len + T::kBr - 1) / T::kBr, a.batch * a.q_heads, a.splits);
  flash2_kernel<D><<<grid, T::kThreads, T::kSmemBytes, stream>>>(a);
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  if (a.splits > 1) {
    flash2_combine<<<unsigned(size_t(a.batch) * a.q_heads * a.q_len), a.head_dim, 0, stream>>>(a);
    return cudaGetLastError();
  }
  return cudaSuccess;
}

}  // namespace

bool flash2_supports(int head_dim) { return find_kernel_traits("flash2", head_dim) != nullptr; }

int flash2_splits(const Flash2Args& a, int sm_count) {
  if (flash2_decode_takes(a) && a.path != KernelPath::warpgroup_mma) return flash2_decode_chains(a, sm_count);
  const KernelTraits* t = find_kernel_traits("flash2", a.head_dim);
  if (!t) return 1;
  const long blocks = long((a.q_len + t->block_r - 1) / t->block_r) * a.batch * a.q_heads;
  const long tiles = (a.kv_len + t->block_c - 1) / t->block_c;
  return decode_splits(blocks, sm_count, tiles, t->decode_splits_max);
}

size_t flash2_workspace_bytes(const Flash2Args& a) {
  size_t bytes = 0;
  if (a.splits > 1) {  // the splits' partial O and L
    const size_t rows = size_t(a.batch) * a.q_heads * a.q_len;
    bytes = size_t(a.splits) * rows * (size_t(a.head_dim) + 1) * sizeof(float);
  }
  if (a.persistent && a.dynamic_order) bytes = std::max<size_t>(bytes, 16);  // the warpgroup kernel's row-block counter
  return bytes;
}

KernelPath flash2_resolved_path(const Flash2Args& a) {
  if (a.path != KernelPath::automatic) return a.path;
  if (flash2_decode_takes(a)) return KernelPath::warp_mma;  // the decode kernel is an mma.sync one
  const int g = kernel_generation("flash2", a.head_dim, warpgroup_mma_available() ? 90 : 80, a.q_len, a.splits > 1, 0, 0);
  return g == 90 ? KernelPath::warpgroup_mma : KernelPath::warp_mma;
}

int flash2_block_c(const Flash2Args& a) {
  if (flash2_resolved_path(a) == KernelPath::warpgroup_mma)
    return flash2_sm90_wide_tile(a) ? kWideTile : find_kernel_traits("flash2", a.head_dim, 90)->block_c;
  if (flash2_decode_takes(a)) return 0;
  return find_kernel_traits("flash2", a.head_dim)->block_c;
}

cudaError_t flash2_forward(const Flash2Args& a, cudaStream_t stream) {
  if (a.splits > 1 && a.workspace == nullptr) return cudaErrorInvalidValue;
  if (flash2_resolved_path(a) == KernelPath::warpgroup_mma) {
    if (!warpgroup_mma_available() || a.splits != 1) return cudaErrorNotSupported;
    return flash2_sm90_forward(a, stream);
  }
  if (flash2_decode_takes(a)) return flash2_decode(a, stream);
  switch (a.head_dim) {
    case 64: return launch<64>(a, stream);
    case 128: return launch<128>(a, stream);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace attnlab::kernels
