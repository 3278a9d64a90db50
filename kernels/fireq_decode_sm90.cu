// attnlab kernels: FireQ decode (FireQ §3.1.1 Step 1, §3.2.2 Alg. 1 at one query token) on Hopper's FP8
// warpgroup MMA (wgmma m64n8k32 e4m3, sm_90a), reading the INT4 K̃/V cache of core/variants/fireq_layout.h
// where it lies: every code becomes its E4M3 operand in registers through §3.1.1's 16-entry lookup table.
//
// Why a second generation beside kernels/fireq_decode.cu: on sm_90, mma.sync's e4m3 form is not a tensor-core
// instruction of its own — ptxas lowers each m16n8k32 into two FP16 HMMA.16816 and unpacks every operand
// register into FP16 first (F2FP.F16.E4M3.UNPACK_B: 280 of that kernel's 1 784 instructions a tile). wgmma
// takes E4M3 as it is (QGMMA), from registers for A, so the codes go LUT → operand → tensor core.
//
// Work split. A CTA is one warpgroup (4 warps) and runs one chain: a contiguous run of one (batch, KV head)'s
// 64-token tiles, for all G ≤ 8 query heads of that KV head at once (the MMA's N = 8 columns: every tile
// loaded serves the whole group). Per tile:
//   Sᵀ = K̂·Q̂ᵀ   m64n8k32 × d/32: A = K̂ from registers (rows = the tile's 64 tokens, warp w converting tokens
//               16w … 16w + 15), B = Q̂ᵀ from shared memory (8 head rows of d bytes, K-major, d-byte swizzle).
//   softmax     each warp's per-head maximum over its 16 tokens, the four warps' through 128 bytes of shared
//               memory (a barrier); P̃ = 2^{S·c − m}, P̂ = FP8(P̃) into shared memory as the next B operand.
//   Oᵀ = V̂ᵀ·P̂ᵀ  m64n8k32 × (d/64 row blocks) × 2 k-steps: A = V̂ᵀ from registers (rows = channels, warp w
//               converting its d/4 channels of all 64 tokens while the scores run), B = P̂ᵀ (8 head rows of
//               64 token bytes, 64-byte swizzle); the tile's product from a zeroed accumulator, added in FP32.
// Three barriers a tile (tile landed; maxima shared; P̂ written), a three-stage cp.async ring of whole tiles
// (every thread copies its 16-byte chunks; the tile's bytes are contiguous). With C > 1 chains per pair
// fireq_decode.cu's merge kernel combines their normalized outputs; C from decode_splits over the chains the
// GPU holds at once.
//
// Operand fragments (wgmma's A from registers has, per warp, mma.m16n8k32's 8-bit A layout, g = lane / 4,
// t = lane % 4: a0 = (row g, k 4t..4t+3), a1 = (row g + 8, same k), a2 = (row g, k 16 + 4t..), a3 = (row
// g + 8, k 16 + 4t..)):
//   K̂  rows = tokens 16w + g, 16w + g + 8; k = channels — fireq_layout.h's K slices are laid out for exactly
//      this (kernels/fireq_decode.cu's scores_tile at m-tile w): two 16-byte loads, two tables, d/32 words each
//      through lut_convert.
//   V̂ᵀ rows = channels, k = tokens 32·ks + 4t + i. Row r ∈ {g, g + 8} of warp w in row block mb is channel
//      g + 8·j with j = (d/32)·w + 2·mb + (r ≥ 8) — the j's fireq_layout.h puts in one half-word (d 128) or
//      byte (d 64) of the lane's V words, so a lane reads the cache's V parts as fireq_decode.cu does and
//      keeps the quarter of each word its warp owns: two tokens' half-words go through one lut_convert_pair
//      (each token its own table), and a 4×4 byte transpose makes rows of tokens.
//   Output: Oᵀ's accumulator register e of row block mb is (channel g + 8j, j as above with r ≥ 8 ⇔ e ≥ 2,
//      head 2t + e mod 2).
//
// Arithmetic, against core/variants/fireq.cpp (Alg. 1's lines), as kernels/fireq_decode.cu's head comment
// says, with one change: the tensor core is wgmma's FP8 path (tests/kernels/test_flash3_fp8_kernel.cpp's
// finding: about 14 bits of the running sum kept within an MMA's k32 step, not the exact FP32 sum the
// reference takes); per tile P̂·V̂ spans 2 k-steps, as in the bound tests/kernels/test_fireq_decode_kernel.cpp
// derives.
#include "kernels/fireq_decode_sm90.h"

#include "core/kernel_traits.h"
#include "core/variants/fireq_layout.h"
#include "kernels/fireq_lut.cuh"
#include "kernels/mma.cuh"
#include "kernels/wgmma.cuh"

#include <cuda_bf16.h>

#include <cstdint>

namespace attnlab::kernels {

namespace {

namespace layout = attnlab::fireq_layout;

// The traits row the cost model reads (core/kernel_traits.h): one warpgroup per CTA, the ring's stages.
constexpr KernelTraits kTraits = *find_kernel_traits("fireq", 128, 90, true);
constexpr int kWarps = kTraits.warps, kStages = kTraits.stages, kThreads = 32 * kWarps;
static_assert(kTraits.decode_only && kWarps == 4 && find_kernel_traits("fireq", 64, 90, true)->stages == kStages);
constexpr int kT = 64;     // tokens per tile
constexpr int kRows = 8;   // query heads per KV head (the MMA's N)
constexpr int kScales = kFireqScales;
static_assert(layout::kTile == kT && kTraits.block_c == kT && kTraits.block_r == kRows);

template <int D>
constexpr int kTileBytes = int(layout::tile_bytes(D));
static_assert(kTileBytes<64> % 16 == 0 && kTileBytes<128> % 16 == 0, "16-byte copies");

// Shared memory, from a 1024-byte-aligned base: Q̂ (8 rows × d bytes, d-byte swizzle: 1024-byte block at
// d 128, 512 at d 64), P̂ (8 rows × 64 bytes, 64-byte swizzle), the 128 tables, the warps' per-head values
// (maxima, then ℓ at the end: [head][warp] floats), the ring.
constexpr int kQOff = 0, kPOff = 1024, kLutOff = 1536, kRedOff = kLutOff + kScales * 16, kRingOff = kRedOff + 128;
template <int D>
constexpr int kSmemBytes = kRingOff + kStages * kTileBytes<D> + 1024;  // + the base's alignment slack
static_assert(kQOff + kRows * 128 <= kPOff && kPOff + kRows * kT <= kLutOff && kRingOff % 16 == 0);
// CTAs per SM the registers are held to: 4 warpgroups (16 warps) at ≤ 128 registers a thread.
constexpr int kCtasPerSm = 4;

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
constexpr unsigned kFull = 0xffffffffu;
constexpr float kLog2e = 1.4426950408889634f;

// Stage tile `tile` of `pair`: its kTileBytes/16 chunks, thread i taking chunks i, i + 128, …
template <int D>
__device__ __forceinline__ void load_tile(uint8_t* stage, const FireqCacheArgs& c, int pair, int tile, int tiles) {
  constexpr int kChunks = kTileBytes<D> / 16;
  const uint8_t* src = c.tiles + (int64_t(pair) * tiles + tile) * kTileBytes<D>;
#pragma unroll
  for (int k = 0; k < (kChunks + kThreads - 1) / kThreads; ++k) {
    const int i = int(threadIdx.x) + k * kThreads;
    if ((k + 1) * kThreads <= kChunks || i < kChunks) cp_async_16(stage + 16 * i, src + 16 * i, true);
  }
}

// K̂'s A fragments of warp w: tokens 16w + g (a0, a2) and 16w + g + 8 (a1, a3), d/32 k-steps.
template <int D>
__device__ __forceinline__ void k_fragments(const uint8_t* tile, const uint4* lut, uint32_t (&ka)[D / 32][4]) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const uint8_t* sigma = tile + layout::sigma_k_offset(D);
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int tok = 16 * warp + g + 8 * half;
    const uint8_t* slice = tile + tok * (D / 2) + t * (D / 8);
    uint32_t w[D / 32];
    if constexpr (D == 128) {
      const uint4 v = *reinterpret_cast<const uint4*>(slice);
      w[0] = v.x, w[1] = v.y, w[2] = v.z, w[3] = v.w;
    } else {
      const uint2 v = *reinterpret_cast<const uint2*>(slice);
      w[0] = v.x, w[1] = v.y;
    }
    const uint4 T = lut[sigma[tok] & (kScales - 1)];
#pragma unroll
    for (int j = 0; j < D / 32; ++j) lut_convert(w[j], T, ka[j][half], ka[j][2 + half]);
  }
}

// V̂ᵀ's A fragments of warp w: va[mb][ks] for row block mb (channels g + 8j, j = (d/32)·w + 2mb + {0, 1}) and
// k-step ks (tokens 32ks + 4t + i: i < 4 in a0/a1, i ≥ 4 in a2/a3). Per k-step and token half, one 16-byte
// load brings the lane's four tokens' V words (fireq_layout.h, part 2·⌊j/8⌋ + half), four tables their σ.
template <int D>
__device__ __forceinline__ void v_fragments(const uint8_t* tile, const uint4* lut, uint32_t (&va)[D / 64][2][4]) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, t = lane % 4;
  const uint8_t* v = tile + layout::v_offset(D);
  const uint8_t* sigma = tile + layout::sigma_v_offset(D);
  constexpr int kWord = D == 128 ? 1 : 0;  // d 128: the warp's j's are word ⌊w/2⌋'s half-word w mod 2
#pragma unroll
  for (int ks = 0; ks < 2; ++ks)
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int part = 2 * (kWord * (warp / 2)) + half;
      const uint4 x = *reinterpret_cast<const uint4*>(v + ks * 16 * D + (32 * part + lane) * 16);
      const uint32_t sig = *reinterpret_cast<const uint32_t*>(sigma + 32 * ks + 16 * half + 4 * t);
      uint4 T[4];
#pragma unroll
      for (int r = 0; r < 4; ++r) T[r] = lut[(sig >> (8 * r)) & (kScales - 1)];
      uint32_t r4[4];  // then: r4[m] = channel j0 + m (d 128) of the four tokens
      if constexpr (D == 128) {
        const uint32_t pick = (warp % 2) ? 0x7632u : 0x5410u;  // the warp's half-word of two words
        lut_convert_pair(prmt(x.x, x.y, pick), T[0], T[1], r4[0], r4[1]);
        lut_convert_pair(prmt(x.z, x.w, pick), T[2], T[3], r4[2], r4[3]);
        transpose4(r4);
#pragma unroll
        for (int mb = 0; mb < 2; ++mb) va[mb][ks][2 * half] = r4[2 * mb], va[mb][ks][2 * half + 1] = r4[2 * mb + 1];
      } else {
        // d 64: the warp's byte w of each word (channels g + 8·2w, g + 8·(2w + 1)); bytes w of tokens 0, 1 at
        // bytes 0 and 2 of one word, each token's two codes through its table, then regrouped by channel.
        const uint32_t pick = uint32_t(warp) | (uint32_t(4 + warp) << 8);
        uint32_t lo01, hi01, lo23, hi23;
        lut_convert_pair(prmt(x.x, x.y, pick), T[0], T[1], lo01, hi01);  // lo01 bytes 0, 1: token 0's codes
        lut_convert_pair(prmt(x.z, x.w, pick), T[2], T[3], lo23, hi23);
        const uint32_t p01 = prmt(lo01, hi01, 0x5140u), p23 = prmt(lo23, hi23, 0x5140u);  // t0c0 t1c0 t0c1 t1c1
        va[0][ks][2 * half] = prmt(p01, p23, 0x5410u);
        va[0][ks][2 * half + 1] = prmt(p01, p23, 0x7632u);
      }
    }
}

template <int D>
__global__ void __launch_bounds__(kThreads, kCtasPerSm) fireq_wg_chains_kernel(const FireqDecodeArgs a) {
  extern __shared__ char smem_raw[];
  uint8_t* smem = reinterpret_cast<uint8_t*>(smem_raw + ((1024u - (smem_addr(smem_raw) & 1023u)) & 1023u));
  uint8_t* sQ = smem + kQOff;
  uint8_t* sP = smem + kPOff;
  uint4* lut = reinterpret_cast<uint4*>(smem + kLutOff);
  float* red = reinterpret_cast<float*>(smem + kRedOff);  // [head][warp]
  auto stage = [&](int s) { return smem + kRingOff + s * kTileBytes<D>; };

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int pair = blockIdx.x / a.chains, chain = blockIdx.x % a.chains;
  const int group = a.q_heads / a.kv_heads, b = pair / a.kv_heads, kvh = pair % a.kv_heads;
  const size_t head0 = size_t(b) * a.q_heads + size_t(kvh) * group;
  const int tiles = int(layout::tiles_for(a.cache.tokens));
  const int first = int(int64_t(chain) * tiles / a.chains), last = int(int64_t(chain + 1) * tiles / a.chains);

#pragma unroll
  for (int st = 0; st < kStages - 1; ++st) {
    if (first + st < last) load_tile<D>(stage(st), a.cache, pair, first + st, tiles);
    cp_async_commit();
  }
  if (threadIdx.x < kScales) lut[threadIdx.x] = build_lut(threadIdx.x);
  // Q̂ᵀ as the B operand: head rows of the group (rows past it 0: their scores are computed, never stored).
  for (int i = threadIdx.x; i < kRows * (D / 16); i += kThreads) {
    const int row = i / (D / 16), chunk = i % (D / 16);
    const uint4 x = row < group ? __ldg(reinterpret_cast<const uint4*>(a.q + (head0 + row) * D) + chunk)
                                : make_uint4(0, 0, 0, 0);
    *reinterpret_cast<uint4*>(sQ + sw_offset<D>(row, chunk)) = x;
  }
  fence_proxy_async();
  float c[2];  // β·τ·log₂e of heads 2t and 2t + 1 (1 past the group: their zero scores stay finite)
#pragma unroll
  for (int i = 0; i < 2; ++i) c[i] = 2 * t + i < group ? __ldg(a.q_scale + head0 + 2 * t + i) * kLog2e : 1.f;
  const uint64_t q_desc = sw_desc<D>(sQ, 16, 8 * D);
  const uint64_t p_desc = sw_desc<64>(sP, 16, 8 * 64);

  float o[D / 64][4] = {}, m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};
  const int tok0 = 16 * warp + g;  // this thread's score rows: tokens tok0 (s0, s1) and tok0 + 8 (s2, s3)
  for (int j = first; j < last; ++j) {
    const int n = j - first;
    cp_async_wait<kStages - 2>();  // tile j's chunks of this thread have landed …
    __syncthreads();               // … and every thread's; tile j − 1 is done with (its stage, P̂, red)
    if (j + kStages - 1 < last) load_tile<D>(stage((n + kStages - 1) % kStages), a.cache, pair, j + kStages - 1, tiles);
    cp_async_commit();
    const uint8_t* tile = stage(n % kStages);

    // Alg. 1 l. 6–8, 14: Sᵀ = K̂·Q̂ᵀ on the tensor core; V̂ᵀ's fragments converted meanwhile.
    uint32_t ka[D / 32][4];
    k_fragments<D>(tile, lut, ka);
    float s[4];
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < D / 32; ++kk) wgmma_m64n8k32_e4m3_rs(s, ka[kk], q_desc + uint64_t(2 * kk), kk > 0);
    wgmma_commit();
    uint32_t va[D / 64][2][4];
    v_fragments<D>(tile, lut, va);
    wgmma_wait<0>();
    pin_registers(s);
    pin_registers(ka);

    // Alg. 1 l. 8, 13, 15: the running max over the tile's 64 tokens (this warp's 16, then the four warps'),
    // P̃ = 2^{S·c − m_new}, ℓ and O rescaled by 2^{m_old − m_new}.
    const int valid = min(kT, a.cache.tokens - j * kT);
    if (tok0 >= valid) s[0] = s[1] = -INFINITY;
    if (tok0 + 8 >= valid) s[2] = s[3] = -INFINITY;
    float mx[2] = {fmaxf(s[0], s[2]), fmaxf(s[1], s[3])};
#pragma unroll
    for (int i = 0; i < 2; ++i) {
#pragma unroll
      for (int x = 4; x < 32; x *= 2) mx[i] = fmaxf(mx[i], __shfl_xor_sync(kFull, mx[i], x));  // over the 8 g
      if (g == 0) red[(2 * t + i) * kWarps + warp] = mx[i];
    }
    __syncthreads();  // the four warps' maxima are in red
    float alpha[2], shift[2];
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const float4 r = *reinterpret_cast<const float4*>(red + (2 * t + i) * kWarps);
      const float m_new = fmaxf(m[i], fmaxf(fmaxf(r.x, r.y), fmaxf(r.z, r.w)) * c[i]);
      shift[i] = m_new == -INFINITY ? 0.f : m_new;  // a head that has seen nothing yet stays empty
      alpha[i] = m[i] == -INFINITY ? 0.f : ex2(m[i] - m_new);
      m[i] = m_new;
      l[i] *= alpha[i];
    }
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      s[e] = ex2(fmaf(s[e], c[e % 2], -shift[e % 2]));  // −∞ → 0
      l[e % 2] += s[e];
    }
#pragma unroll
    for (int mb = 0; mb < D / 64; ++mb)
#pragma unroll
      for (int e = 0; e < 4; ++e) o[mb][e] *= alpha[e % 2];
    // Alg. 1 l. 11: P̂ = FP8(P̃), written as Pᵀ's B operand: head rows, token columns (byte tok of row h at
    // 64-byte-swizzled chunk tok / 16).
    const uint32_t four = pack_e4m3x4(s[0], s[1], s[2], s[3]);
#pragma unroll
    for (int e = 0; e < 4; ++e) sP[sw_offset<64>(2 * t + e % 2, warp) + g + 8 * (e / 2)] = uint8_t(four >> (8 * e));
    fence_proxy_async();
    __syncthreads();  // P̂ complete (and red read by every thread)

    // Alg. 1 l. 16: O = α·O + P̂·V̂ⱼ, the tile's product from a zeroed accumulator.
    float acc[D / 64][4];
    wgmma_fence();
#pragma unroll
    for (int mb = 0; mb < D / 64; ++mb)
#pragma unroll
      for (int ks = 0; ks < 2; ++ks) wgmma_m64n8k32_e4m3_rs(acc[mb], va[mb][ks], p_desc + uint64_t(2 * ks), ks > 0);
    wgmma_commit();
    wgmma_wait<0>();
    pin_registers(acc);
    pin_registers(va);
#pragma unroll
    for (int mb = 0; mb < D / 64; ++mb)
#pragma unroll
      for (int e = 0; e < 4; ++e) o[mb][e] += acc[mb][e];
  }
  cp_async_wait<0>();

  // ℓ over the 8 lanes and 4 warps of a head, O = O/ℓ, L = m + log ℓ (natural units): the output (one
  // chain) or this chain's normalized part for the merge.
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int x = 4; x < 32; x *= 2) l[i] += __shfl_xor_sync(kFull, l[i], x);
  __syncthreads();  // red's last maxima read
  if (g == 0) red[(2 * t) * kWarps + warp] = l[0], red[(2 * t + 1) * kWarps + warp] = l[1];
  __syncthreads();
  const size_t rows_total = size_t(a.batch) * a.q_heads;
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int head = 2 * t + i;
    if (head >= group) continue;
    const float4 r = *reinterpret_cast<const float4*>(red + head * kWarps);
    const float total = (r.x + r.y) + (r.z + r.w);
    const size_t row = head0 + head;
    const bool empty = !(total > 0.f);
    const float inv = empty ? 0.f : 1.f / total;
#pragma unroll
    for (int mb = 0; mb < D / 64; ++mb)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int channel = g + 8 * ((D / 32) * warp + 2 * mb + h);
        const float x = o[mb][2 * h + i] * inv;
        if (a.chains == 1) a.o[row * D + channel] = __float2bfloat16_rn(x);
        else a.workspace[(size_t(chain) * rows_total + row) * D + channel] = x;
      }
    if (warp == 0 && g == 0) {
      const float lse = empty ? -INFINITY : (m[i] + log2f(total)) / kLog2e;
      if (a.chains == 1) a.lse[row] = lse;
      else a.workspace[size_t(a.chains) * rows_total * D + size_t(chain) * rows_total + row] = lse;
    }
  }
}
#else
template <int D>
__global__ void __launch_bounds__(kThreads, kCtasPerSm) fireq_wg_chains_kernel(const FireqDecodeArgs) {}
#endif  // sm_90a

template <int D>
cudaError_t prepare() {
  return cudaFuncSetAttribute(fireq_wg_chains_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes<D>);
}

template <class F>
cudaError_t dispatch(int d, F&& f) {
  if (d == 64) return f.template operator()<64>();
  if (d == 128) return f.template operator()<128>();
  return cudaErrorInvalidValue;
}

}  // namespace

cudaError_t fireq_decode_sm90_chains_per_sm(int head_dim, int& chains) {
  chains = 0;
  return dispatch(head_dim, [&]<int D>() {
    if (const cudaError_t e = prepare<D>(); e != cudaSuccess) return e;
    return cudaOccupancyMaxActiveBlocksPerMultiprocessor(&chains, fireq_wg_chains_kernel<D>, kThreads, kSmemBytes<D>);
  });
}

cudaError_t fireq_decode_sm90_chains(const FireqDecodeArgs& a, cudaStream_t stream) {
  return dispatch(a.cache.head_dim, [&]<int D>() {
    if (const cudaError_t e = prepare<D>(); e != cudaSuccess) return e;
    fireq_wg_chains_kernel<D><<<unsigned(a.cache.pairs * a.chains), kThreads, kSmemBytes<D>, stream>>>(a);
    return cudaGetLastError();
  });
}

}  // namespace attnlab::kernels
