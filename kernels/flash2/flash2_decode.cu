// attnlab kernels: flash2's decode — FlashAttention-2's forward for one query token per head, the query heads of
// one KV head served by every K/V tile loaded (grouped-query attention: the group's G ≤ 8 heads are the MMA's N
// columns), the keys split into warp chains sized to fill the GPU (flash-decoding), the chains merged by their
// logsumexp. Computes what core/variants/flash2.cpp emulates (flash2.h states the contract).
//
// Why a kernel of its own: the prefill kernel at q_len 1 gives each query head its own CTA of B_r = 128 rows, one
// of them real, so every KV head's tiles are read once per query head of its group — G times the bytes of the
// problem (issue 36: 6.6× cuDNN's time at 32/8 heads).
//
// Work split (the kivi and fireq decode kernels' design on FP16 K/V): one warp runs one chain, a contiguous run
// of one (batch, KV head)'s kT-token tiles, staged through its own kStages-deep cp.async ring. A CTA is one warp:
// its ring (51 KB at d 128) then fits every GPU's per-CTA shared memory, and the SM holds as many as fit (4 on an
// H100 or H200, 3 on an A100, 1 on an RTX 4090). Per tile, with mma.m16n8k16:
//   Sᵀ = K·Qᵀ          tokens × heads; K by ldmatrix (A), Qᵀ in registers (B: channels × heads, loaded once)
//   P̃ = 2^{S·scale·log₂e − m}   the online softmax of flash2's kernel, in FP32, ex2 on the SFU
//   Oᵀ += Vᵀ·P̃ᵀ       channels × heads; Vᵀ by transposing ldmatrix (A), P̃ᵀ in FP16 (B) moved from the score
//                       accumulator by movmatrix
// With C > 1 chains per pair each chain leaves its normalized O and logsumexp and chain_merge.cuh's pass merges
// them: O = Σ_c e^{L_c − L}·O_c, L = log Σ_c e^{L_c}. C is decode_splits over the warps the GPU holds at once.
//
// K/V loads (`tma_producer`, the variant's kv_loads): on sm_90a each tile arrives by TMA (v4) — the chain's lane 0
// issues one copy per 64-channel column block of K and of V (tensor_map.h's FP16 rows map: 32 tokens × 128 bytes in the
// 128-byte swizzle, zero past kv_len), completing on the stage's mbarrier — where v3's 32 lanes issue 32 16-byte
// cp.async each per tile. Elsewhere, or with kv_loads = cp_async, v3's copies. The arithmetic and its order are the
// same either way (the [gpu] test compares the bits).
//
// Against the reference (as flash2's prefill kernel and its split-KV decode): FP32 summation order, ex2.approx
// against exp, and P̃'s FP16 rounding taken against a chain's running max instead of the reference's — each P̃
// within 2⁻¹¹ of the same real number (tests/kernels/flash2/ derive the bound).
#include "kernels/flash2/flash2.h"

#include "core/kernel_traits.h"
#include "kernels/common/chain_merge.cuh"
#include "kernels/common/decode_chain.cuh"
#include "kernels/common/mma.cuh"
#include "kernels/common/tensor_map.h"
#include "kernels/common/tma_fill.cuh"
#include "kernels/common/wgmma.cuh"

#include <cuda_fp16.h>

#include <cstdint>

namespace attnlab::kernels {

namespace {

// The decode row of the kernel table (core/kernel_traits.h): the cost model reads the same tiling.
constexpr KernelTraits kTraits = *find_kernel_traits("flash2", 128, 80, true);
static_assert(kTraits.decode_only && kTraits.warp_chains, "flash2's decode row");
static_assert(find_kernel_traits("flash2", 64, 80, true)->block_c == kTraits.block_c &&
              find_kernel_traits("flash2", 64, 80, true)->warps == kTraits.warps &&
              find_kernel_traits("flash2", 64, 80, true)->stages == kTraits.stages);
constexpr int kWarps = kTraits.warps, kStages = kTraits.stages;
constexpr int kT = kTraits.block_c;   // tokens per tile
constexpr int kMT = kT / 16;          // 16-token m-tiles (S) or k-steps (P̃·V) per tile
constexpr int kRows = kTraits.block_r;  // query heads per KV head: the MMA's N columns
using decode_chain::Chain;
static_assert(kT % 16 == 0 && kRows == 8, "whole m16 tiles of tokens; the heads fill n8");

// One warp's ring: kStages stages of [K tile | V tile], kT rows of D halves each, rows padded by 16 bytes so the
// 8 rows one ldmatrix reads fall in distinct banks.
template <int D>
struct Ring {
  static constexpr int kStride = D + 8;             // halves per row
  static constexpr int kTile = kT * kStride;        // halves per K (or V) tile
  static constexpr int kStage = 2 * kTile;          // K then V
  static constexpr int kWarpHalves = kStages * kStage;
  static constexpr size_t kCtaBytes = size_t(kWarps) * kWarpHalves * sizeof(__half);
};

// Where (token row, channel) of a K or V tile lies in its stage, for each of the two ways the tiles arrive.
template <int D>
struct PaddedRows {  // cp.async: rows of D halves padded by 8
  static constexpr int kTile = Ring<D>::kTile;  // halves per K (or V) tile
  __device__ static const __half* at(const __half* tile, int row, int channel) {
    return tile + row * Ring<D>::kStride + channel;
  }
};
template <int D>
struct SwizzledBlocks {  // TMA: D/64 column blocks of kT rows × 128 bytes, each in the 128-byte swizzle
  static constexpr int kBlock = kT * 64;  // halves per column block
  static constexpr int kTile = D / 64 * kBlock;  // halves per K (or V) tile
  __device__ static const __half* at(const __half* tile, int row, int channel) {
    return tile + (channel / 64) * kBlock + sw128_offset(row, (channel % 64) / 8) / 2 + channel % 8;
  }
};

// The TMA ring of one warp (a CTA): kStages stages of [K tile | V tile], unpadded, then one mbarrier per stage; the
// stages 1024-byte aligned (the swizzle's period), so the dynamic allocation asks for 1 KB of slack.
template <int D>
struct TmaRing {
  static constexpr int kStage = 2 * SwizzledBlocks<D>::kTile;  // halves
  static constexpr size_t kStageBytes = size_t(kStage) * sizeof(__half);
  static constexpr size_t kCtaBytes = kStages * kStageBytes + kStages * sizeof(uint64_t) + 1024;
  static_assert(kStageBytes % 1024 == 0, "every stage starts on the swizzle's 1024-byte period");
};

// Tile `tile` of a pair's K and V (row stride D) into a stage with 16-byte cp.async, each a sequential stream with
// L2's 256-byte prefetch (v3); tokens past kv_len are 0.
template <int D>
__device__ __forceinline__ void load_stage(__half* stage, const __half* k, const __half* v, int tile, int kv_len) {
  constexpr int kChunks = D / 8;  // 16-byte chunks per row
  const int tok0 = tile * kT, valid = kv_len - tok0;
  for (int i = threadIdx.x % 32; i < kT * kChunks; i += 32) {
    const int r = i / kChunks, c = (i % kChunks) * 8;
    const bool ok = r < valid;
    const size_t at = ok ? size_t(tok0 + r) * D + c : 0;
    cp_async_16_stream(stage + r * Ring<D>::kStride + c, k + at, ok);
    cp_async_16_stream(stage + Ring<D>::kTile + r * Ring<D>::kStride + c, v + at, ok);
  }
}

// Sᵀ = K·Qᵀ for one tile: A = K's m-tile mt (16 tokens) at k-step kk (16 channels), B = Qᵀ's k-step kk.
template <int D, class Layout>
__device__ __forceinline__ void scores(const __half* sK, const uint32_t (&qf)[D / 16][2], float (&s)[kMT][4]) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk)
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt) {
      uint32_t a[4];
      ldmatrix_x4(a, Layout::at(sK, 16 * mt + lane % 16, 16 * kk + (lane / 16) * 8));
      mma_f16(s[mt], a, qf[kk][0], qf[kk][1]);
    }
}

// Oᵀ += Vᵀ·P̃ᵀ: A = Vᵀ's m-tile mi (16 channels) at k-step ks (16 tokens), read transposed from the [token][channel]
// tile: lanes 0–7 address matrix 0 (tokens 0–7, channels 0–7), 8–15 matrix 1 (channels 8–15), 16–31 the same for
// tokens 8–15 — after the transpose, the A fragment's (channel, token) layout.
template <int D, class Layout>
__device__ __forceinline__ void pv(const __half* sV, const uint32_t (&pb)[kMT][2], Chain<D>& ch) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int ks = 0; ks < kMT; ++ks)
#pragma unroll
    for (int mi = 0; mi < D / 16; ++mi) {
      uint32_t a[4];
      ldmatrix_x4_trans(a, Layout::at(sV, 16 * ks + lane % 8 + (lane / 16) * 8, 16 * mi + ((lane / 8) % 2) * 8));
      mma_f16(ch.o[mi], a, pb[ks][0], pb[ks][1]);
    }
}

// One chain's work, whichever way its tiles arrive: which (batch, KV head) pair and which of its tiles, the group's
// queries as B fragments, the running softmax; attend() takes a tile from its stage, finish() stores the result.
template <int D>
struct ChainWork {
  int chain, pair, group, b, kvh, first, last;
  uint32_t qf[D / 16][2];
  float scale_log2;
  Chain<D> ch;

  // Chain `id` of a.splits per pair; false when the id lies past the last pair (the grid's tail).
  __device__ __forceinline__ bool start(const Flash2Args& a, int id) {
    const int chains = a.splits;
    pair = id / chains, chain = id % chains;
    if (pair >= a.batch * a.kv_heads) return false;
    group = a.q_heads / a.kv_heads, b = pair / a.kv_heads, kvh = pair % a.kv_heads;
    decode_chain::load_query<D>(a.q + (size_t(b) * a.q_heads + size_t(kvh) * group) * D, group, qf);
    const int tiles = (a.kv_len + kT - 1) / kT;  // this chain's share of the pair's tiles, contiguous
    first = int(int64_t(chain) * tiles / chains), last = int(int64_t(chain + 1) * tiles / chains);
    scale_log2 = a.scale * decode_chain::kLog2e;
    ch.start();
    return true;
  }
  // Tile j from its stage (K then V, Layout's addressing).
  template <class Layout>
  __device__ __forceinline__ void attend(const Flash2Args& a, const __half* sK, int j) {
    float s[kMT][4] = {};
    scores<D, Layout>(sK, qf, s);
    uint32_t pb[kMT][2];
    decode_chain::softmax_tile<D, kMT>(s, min(kT, a.kv_len - j * kT), scale_log2, ch, pb);
    pv<D, Layout>(sK + Layout::kTile, pb, ch);
  }
  __device__ __forceinline__ void finish(const Flash2Args& a) {
    const size_t rows_total = size_t(a.batch) * a.q_heads;
    decode_chain::store<D>(ch, group, size_t(b) * a.q_heads + size_t(kvh) * group,
                           {a.o, a.lse, a.workspace, a.splits, chain, rows_total});
  }
};

// v3: every lane's cp.async into the warp's padded ring.
template <int D>
__global__ void __launch_bounds__(kWarps * 32) flash2_decode_kernel(const Flash2Args a) {
  extern __shared__ __align__(16) __half smem[];
  const int warp = threadIdx.x / 32;
  ChainWork<D> w;
  if (!w.start(a, blockIdx.x * kWarps + warp)) return;  // no CTA-wide barrier follows
  __half* ring = smem + size_t(warp) * Ring<D>::kWarpHalves;
  const __half* k = a.k + size_t(w.pair) * a.kv_len * D;
  const __half* v = a.v + size_t(w.pair) * a.kv_len * D;
#pragma unroll
  for (int st = 0; st < kStages - 1; ++st) {
    if (w.first + st < w.last) load_stage<D>(ring + st * Ring<D>::kStage, k, v, w.first + st, a.kv_len);
    cp_async_commit();
  }
  for (int j = w.first; j < w.last; ++j) {
    cp_async_wait<kStages - 2>();  // tile j's stage has landed (this lane's copies) …
    __syncwarp();                  // … and every lane's; every lane has left tile j − 1's stage
    const int ahead = j + kStages - 1;  // into the stage tile j − 1 used
    if (ahead < w.last) load_stage<D>(ring + ((ahead - w.first) % kStages) * Ring<D>::kStage, k, v, ahead, a.kv_len);
    cp_async_commit();
    w.template attend<PaddedRows<D>>(a, ring + ((j - w.first) % kStages) * Ring<D>::kStage, j);
  }
  cp_async_wait<0>();
  w.finish(a);
}

// v4: the same chain with its tiles by TMA (sm_90a). Lane 0 announces a stage's bytes on its mbarrier and issues
// the copies; every lane waits on the barrier's phase (the n-th fill of a stage completes phase n, parity n & 1).
// A stage is refilled at tile j (with tile j + kStages − 1) only after the __syncwarp that follows every lane's
// reads of tile j − 1, which held it.
template <int D>
__global__ void __launch_bounds__(32) flash2_decode_tma_kernel(const Flash2Args a, const __grid_constant__ CUtensorMap k_map,
                                                                const __grid_constant__ CUtensorMap v_map) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  static_assert(kWarps == 1, "a CTA is one chain: its lane 0 is the ring's producer");
  extern __shared__ char smem_raw[];
  auto* ring = reinterpret_cast<__half*>(smem_raw + ((1024u - (smem_addr(smem_raw) & 1023u)) & 1023u));
  auto* full = reinterpret_cast<uint64_t*>(ring + kStages * TmaRing<D>::kStage);
  const int lane = threadIdx.x % 32;
  ChainWork<D> w;
  if (!w.start(a, blockIdx.x)) return;

  auto stage = [&](int j) { return ring + ((j - w.first) % kStages) * TmaRing<D>::kStage; };
  auto fill = [&](int j) {  // lane 0: tile j's K and V column blocks, kStageBytes in all (zeros past kv_len)
    uint64_t* bar = &full[(j - w.first) % kStages];
    mbar_arrive_expect_tx(bar, uint32_t(TmaRing<D>::kStageBytes));
    __half* s = stage(j);
#pragma unroll
    for (int cb = 0; cb < D / 64; ++cb) {
      tma_load_3d(s + cb * SwizzledBlocks<D>::kBlock, &k_map, 64 * cb, j * kT, w.pair, bar);
      tma_load_3d(s + SwizzledBlocks<D>::kTile + cb * SwizzledBlocks<D>::kBlock, &v_map, 64 * cb, j * kT, w.pair, bar);
    }
  };
  if (lane == 0) {
    prefetch_tensor_map(&k_map), prefetch_tensor_map(&v_map);
    for (int s = 0; s < kStages; ++s) mbar_init(&full[s], 1);
    fence_proxy_async();  // the initialized barriers before the copy engine completes bytes on them
    for (int st = 0; st < kStages - 1 && w.first + st < w.last; ++st) fill(w.first + st);
  }
  __syncwarp();  // the barriers initialized before any lane waits on them
  for (int j = w.first; j < w.last; ++j) {
    mbar_wait(&full[(j - w.first) % kStages], ((j - w.first) / kStages) & 1);  // tile j has landed
    __syncwarp();  // every lane has left tile j − 1's stage
    if (lane == 0 && j + kStages - 1 < w.last) fill(j + kStages - 1);
    w.template attend<SwizzledBlocks<D>>(a, stage(j), j);
  }
  w.finish(a);
#endif
}

// Merges the chains of one output row (blockDim.x = d threads; kernels/common/chain_merge.cuh).
__global__ void flash2_decode_merge(const Flash2Args a) {
  merge_chains_row(a.workspace, a.splits, size_t(a.batch) * a.q_heads, a.head_dim, blockIdx.x, a.o, a.lse);
}

// The kernel a decode launches — v4's TMA loads or v3's cp.async — and its shared memory.
template <int D>
struct Launchable {
  const void* kernel;
  size_t smem_bytes;
};
template <int D>
Launchable<D> kernel_for(bool tma) {
  if (tma) return {reinterpret_cast<const void*>(flash2_decode_tma_kernel<D>), TmaRing<D>::kCtaBytes};
  return {reinterpret_cast<const void*>(flash2_decode_kernel<D>), Ring<D>::kCtaBytes};
}

template <int D>
cudaError_t prepare(Launchable<D> k) {
  return cudaFuncSetAttribute(k.kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(k.smem_bytes));
}

template <int D>
cudaError_t launch(const Flash2Args& a, cudaStream_t stream) {
  const bool tma = flash2_decode_tma(a);
  if (const cudaError_t e = prepare<D>(kernel_for<D>(tma)); e != cudaSuccess) return e;
  const long warps = long(a.batch) * a.kv_heads * a.splits;
  const unsigned ctas = unsigned((warps + kWarps - 1) / kWarps);
  if (tma) {
    CUtensorMap k_map, v_map;  // (pairs, kv_len, d) FP16 rows in kT-token × 64-channel boxes
    const int64_t pairs = int64_t(a.batch) * a.kv_heads;
    cudaError_t e = fp16_rows_tensor_map(k_map, a.k, pairs, a.kv_len, D, kT);
    if (e == cudaSuccess) e = fp16_rows_tensor_map(v_map, a.v, pairs, a.kv_len, D, kT);
    if (e != cudaSuccess) return e;
    flash2_decode_tma_kernel<D><<<ctas, kWarps * 32, TmaRing<D>::kCtaBytes, stream>>>(a, k_map, v_map);
  } else {
    flash2_decode_kernel<D><<<ctas, kWarps * 32, Ring<D>::kCtaBytes, stream>>>(a);
  }
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  if (a.splits > 1) {
    flash2_decode_merge<<<unsigned(size_t(a.batch) * a.q_heads), unsigned(D), 0, stream>>>(a);
    return cudaGetLastError();
  }
  return cudaSuccess;
}

template <int D>
long warps_per_sm(bool tma) {
  const Launchable<D> k = kernel_for<D>(tma);
  int ctas = 0;
  if (prepare<D>(k) != cudaSuccess ||
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&ctas, k.kernel, kWarps * 32, k.smem_bytes) != cudaSuccess)
    return kWarps;
  return long(ctas) * kWarps;
}

}  // namespace

bool flash2_decode_takes(const Flash2Args& a) {
  return a.q_len == 1 && a.kv_heads >= 1 && a.q_heads % a.kv_heads == 0 && a.q_heads / a.kv_heads <= kRows &&
         (a.head_dim == 64 || a.head_dim == 128) && a.kv_len >= 1;
}

bool flash2_decode_tma(const Flash2Args& a) { return a.tma_producer && warpgroup_mma_available(); }

int flash2_decode_chains(const Flash2Args& a, int sm_count) {
  const long tiles = (a.kv_len + kT - 1) / kT;
  const bool tma = flash2_decode_tma(a);
  const long per_sm = a.head_dim == 64 ? warps_per_sm<64>(tma) : warps_per_sm<128>(tma);
  return decode_splits(long(a.batch) * a.kv_heads, long(sm_count) * per_sm, tiles, kTraits.decode_splits_max);
}

cudaError_t flash2_decode(const Flash2Args& a, cudaStream_t stream) {
  const long tiles = (a.kv_len + kT - 1) / kT;
  if (!flash2_decode_takes(a) || a.splits < 1 || a.splits > tiles || (a.splits > 1 && a.workspace == nullptr))
    return cudaErrorInvalidValue;
  return a.head_dim == 64 ? launch<64>(a, stream) : launch<128>(a, stream);
}

}  // namespace attnlab::kernels
