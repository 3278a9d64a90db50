// attnlab kernels: FireQ decode (FireQ §3.1.1 Step 1, §3.2.2 Alg. 1 at one query token) on FP8 tensor cores
// (mma.sync.m16n8k32 e4m3, sm_89 and later), reading the INT4 K̃/V cache of core/variants/fireq_layout.h where
// it lies: every code becomes its E4M3 operand in registers through §3.1.1's 16-entry lookup table.
//
// Work split. One warp runs one chain: a contiguous run of one (batch, KV head)'s 64-token tiles, for all
// G ≤ 8 query heads of that KV head at once — they are the MMA's N = 8 columns, so every tile loaded serves
// the whole group (GQA). Sᵀ = K̂·Q̂ᵀ (A = K̂: rows = 16 tokens, k = channels) and Oᵀ = V̂ᵀ·P̂ᵀ (A = V̂ᵀ: rows =
// 16 channels, k = tokens), kivi_decode.cu's orientation: every accumulator register holds a result (with
// the heads as M, rows g + 8 of each MMA would be dead outputs ptxas must still allocate — v1–v2, 202
// registers against 183). P̂ reaches P̂ᵀ's B fragments through 512 bytes of shared memory per warp (16 byte
// stores, 4 word loads per tile). Four independent warps per CTA, three CTAs per SM, each warp streaming its
// tiles through its own two-stage cp.async ring; with C > 1 chains per pair a second kernel merges their
// normalized outputs (O = Σ_c e^{L_c − L}·O_c, L = log Σ_c e^{L_c}, kernels/common/chain_merge.cuh); C from
// balanced_warp_chains (core/kernel_traits.h): the count whose busiest SM has the fewest tiles.
//
// INT4 → FP8 (§3.1.1 Step 1): kernels/fireq/fireq_lut.cuh — 128 tables per CTA in shared memory, a token's table one
// 16-byte load indexed by its σ byte, 8 codes converted by 11 byte permutes. K's operand bytes of one register
// belong to one token (k = channels). V's do not (k = tokens): a lane converts four tokens' slices, each through
// its own table, and regroups the bytes by channel — a 4×4 transpose (8 PRMTs) for sm_89's FP8 fragments, one
// PRMT per two tokens and two channels for sm_90's FP16 ones (pv_step).
//
// Arithmetic, against core/variants/fireq.cpp (whose head comment is the specification; Alg. 1's lines):
//   l. 6–8, 14   S = (Q̂·LUT(K)ᵀ)·(β·τ): FP8 products accumulated by the tensor core, then one FP32
//                multiply by the host's fl(β·τ) — times log₂e, folded into the exponent's FMA below.
//   l. 8, 13, 15 m, P̃ = 2^{S·log₂e − m} (ex2.approx), ℓ = 2^{m_old − m}·ℓ + Σ P̃ over the FP32 P̃.
//   l. 11, 16    P̂ = FP8(P̃) (cvt.rn.satfinite: the reference's round_fp8), O = 2^{m_old − m}·O + P̂·LUT(V),
//                the tile's P̂·LUT(V) from a zeroed accumulator and added in FP32: Hopper's FP8 MMA keeps only
//                ~14 bits of its running sum, so a chain-long accumulator would lose 2⁻¹³ of |O| per k-step
//                (1024 steps at N = 32k); per tile the loss is 2 steps' worth, as in the reference's bound.
//   l. 24        O/ℓ stored in BF16 (RNE), L = m + log ℓ in natural units.
// The differences from the reference, which tests/kernels/fireq/test_fireq_decode_kernel.cpp bounds: the tensor
// core's accumulation of FP8 products (Hopper's FP8 path keeps about 14 bits of the running sum within an
// MMA's k32 step, not the exact FP32 sum the reference takes: tests/kernels/fp8/test_flash3_fp8_kernel.cpp's
// finding; on sm_90 the products of a k32 step go through two FP16 MMAs, whose sums keep at least as many
// bits: tests/kernels/common/test_mma_accumulation.cpp), ex2.approx for exp, FP32 summation order of ℓ and O, and
// P̃'s E4M3 rounding taken against a different running max (other tiles, other chains: the reference runs one
// row block over B_c = block_c tiles).
//
// On sm_90 the e4m3 mma.sync is not a tensor-core instruction of its own (ptxas lowers it to FP16 HMMAs over
// unpacked operands, F2FP.F16.E4M3.UNPACK_B, and FADDs): there each k32 step is written as two FP16 MMAs
// (mma_e4m3 below). A warpgroup-MMA generation that takes E4M3 natively (v7) measured 11% slower.
//
// Versions (kernels/PERF.md, "fireq decode"): v1 — heads as the MMA's rows; v2 — V's words grouped per load;
// v3 (reverted) — the next tile's scores beside this tile's P̂·V̂ (spilled); v4 — heads as N; v6 — P̂·V̂ in
// k-step order (163 registers); v7 (reverted) — wgmma, a warpgroup per chain; v8 — v6's order at 3 CTAs
// per SM, chains from balanced_warp_chains, the merge's loads in flight together; v9 (reverted) — the merge by
// each pair's last chain; v10 — on sm_90 each k32 step as two FP16 MMAs accumulating into d; v11 (this) — on
// sm_90 V̂ᵀ's FP16 fragments paired by one PRMT per register instead of the 4×4 transpose.
#include "kernels/fireq/fireq_decode.h"

#include "core/kernel_traits.h"
#include "core/variants/fireq_layout.h"
#include "kernels/fireq/fireq_lut.cuh"
#include "kernels/common/chain_merge.cuh"
#include "kernels/common/mma.cuh"

#include <cuda_bf16.h>

#include <cstdint>

namespace attnlab::kernels {

namespace {

namespace layout = attnlab::fireq_layout;

// Warps per CTA (one chain each) and tiles per warp (one computed while the next loads): the traits row the
// cost model reads (core/kernel_traits.h), the same at d 64 and 128.
constexpr KernelTraits kTraits = *find_kernel_traits("fireq", 128, 80, true);
constexpr int kWarps = kTraits.warps, kStages = kTraits.stages;
static_assert(kTraits.warp_chains && find_kernel_traits("fireq", 64, 80, true)->warps == kWarps &&
              find_kernel_traits("fireq", 64, 80, true)->stages == kStages);
constexpr int kT = 64;          // tokens per tile
constexpr int kRows = 8;        // query heads per KV head (the MMA's N columns)
constexpr int kMaxChains = kTraits.decode_splits_max;  // the cost model caps balanced_warp_chains by the same row
constexpr int kScales = kFireqScales;  // fireq_lut.cuh
static_assert(layout::kTile == kT, "the kernel's tile is the layout's");
static_assert(kTraits.block_c == kT && kTraits.block_r == kRows);

template <int D>
constexpr int kTileBytes = int(layout::tile_bytes(D));
static_assert(kTileBytes<64> % 16 == 0 && kTileBytes<128> % 16 == 0, "16-byte copies");

// One chain's online-softmax state. Lane (g, t) holds query heads 2t and 2t + 1 (i = 0, 1): the running
// max m (log₂ units), its partial ℓ over the lane's tokens, and Oᵀ's accumulators for channels 16·mi + g
// (registers 0, 1: heads 2t, 2t + 1) and 16·mi + g + 8 (registers 2, 3).
template <int D>
struct Chain {
  float m[2], l[2];
  float o[D / 16][4];
};

// The device code needs sm_89's FP8 conversions and MMA: other targets compile empty kernels (the backend
// refuses their GPUs).
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 890
constexpr unsigned kFull = 0xffffffffu;
constexpr float kLog2e = 1.4426950408889634f;

#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
// Four E4M3 bytes as two FP16 pairs: bytes 0–1 → lo, bytes 2–3 → hi (every E4M3 value is exact in FP16).
__device__ __forceinline__ void e4m3x4_to_f16(uint32_t x, uint32_t& lo, uint32_t& hi) {
  asm("{\n.reg .b16 l, h;\nmov.b32 {l, h}, %2;\ncvt.rn.f16x2.e4m3x2 %0, l;\ncvt.rn.f16x2.e4m3x2 %1, h;\n}\n"
      : "=r"(lo), "=r"(hi)
      : "r"(x));
}
#endif

// d += A·B, m16n8k32, E4M3 operands, FP32 accumulators (a0 = (g, k 4t..4t+3), a1 = (g + 8, 4t..),
// a2 = (g, 16 + 4t..), a3 = (g + 8, 16 + 4t..); b0 = (k 4t..4t+3, n g), b1 = (k 16 + 4t.., n g);
// d0, d1 = (g, 2t..2t+1), d2, d3 = (g + 8, 2t..2t+1)).
// On sm_89 the e4m3 mma.sync is a tensor-core instruction of its own. On sm_90 it is not: ptxas lowers it to two
// FP16 HMMA.16816 from a zeroed accumulator, then four FADDs into d (v8's SASS: 128 FADDs a tile). There the
// step is written as those two FP16 MMAs accumulating into d themselves (v10): the operands unpacked to FP16
// (exact), the k32 step's k relabelled so both MMAs read the lane's own bytes — k16 slots 2t, 2t + 1, 2t + 8,
// 2t + 9 of the first hold k = 4t … 4t + 3, of the second k = 16 + 4t … 16 + 4t + 3, in A and B alike (a sum
// over k in any order of its terms). The products are exact in FP32 either way; what moves is where the running
// sum is rounded (inside the tensor core instead of an FADD), within item 1 of the test's bound.
__device__ __forceinline__ void mma_e4m3(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                         uint32_t b0, uint32_t b1) {
#if __CUDA_ARCH__ >= 900
  uint32_t a[4], bl, bh;
  e4m3x4_to_f16(a0, a[0], a[2]);
  e4m3x4_to_f16(a1, a[1], a[3]);
  e4m3x4_to_f16(b0, bl, bh);
  mma_f16(d, a, bl, bh);
  e4m3x4_to_f16(a2, a[0], a[2]);
  e4m3x4_to_f16(a3, a[1], a[3]);
  e4m3x4_to_f16(b1, bl, bh);
  mma_f16(d, a, bl, bh);
#else
  asm("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
#endif
}

// Sᵀ (tokens × heads) of one tile: per 16-token m-tile, the lane's two tokens' K slices (g and g + 8: one load
// each), their tables (one load each), and d/32 MMAs; K̂ is the A operand (k = channels), Q̂ᵀ the B operand.
template <int D>
__device__ __forceinline__ void scores_tile(const uint8_t* tile, const uint4* lut, const uint32_t (&qb)[D / 32][2],
                                            float (&s)[4][4]) {
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const uint8_t* sigma = tile + layout::sigma_k_offset(D);
#pragma unroll
  for (int mt = 0; mt < 4; ++mt) {
    uint32_t lo[2][D / 32], hi[2][D / 32];  // [half]: token 16·mt + g + 8·half, its k-steps' a0|a1 and a2|a3
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int tok = 16 * mt + g + 8 * half;
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
      for (int j = 0; j < D / 32; ++j) lut_convert(w[j], T, lo[half][j], hi[half][j]);
    }
    s[mt][0] = s[mt][1] = s[mt][2] = s[mt][3] = 0.f;
#pragma unroll
    for (int j = 0; j < D / 32; ++j) mma_e4m3(s[mt], lo[0][j], lo[1][j], hi[0][j], hi[1][j], qb[j][0], qb[j][1]);
  }
}

// The online softmax of one tile (Alg. 1 l. 8, 13, 15), per head column: tokens ≥ valid masked, m_new =
// max(m, S·c) with c = β·τ·log₂e of the head, P̃ = 2^{S·c − m_new}, ℓ and O rescaled by 2^{m_old − m_new}.
// P̂ = FP8(P̃) goes to the warp's 8 × 64 bytes of shared memory (head rows, token columns), from which P̂·V̂'s
// B fragments (k = tokens 4t.., 16 + 4t..; n = head g) are read back as words.
template <int D>
__device__ __forceinline__ void softmax_tile(float (&s)[4][4], int valid, const float (&c)[2], Chain<D>& ch,
                                             uint8_t* p, uint32_t (&pb)[2][2]) {
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  if (valid < kT) {
#pragma unroll
    for (int mt = 0; mt < 4; ++mt)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        if (16 * mt + g + 8 * (e / 2) >= valid) s[mt][e] = -INFINITY;
  }
  float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
  for (int mt = 0; mt < 4; ++mt)
#pragma unroll
    for (int e = 0; e < 4; ++e) mx[e % 2] = fmaxf(mx[e % 2], s[mt][e]);
  float alpha[2], shift[2];
#pragma unroll
  for (int i = 0; i < 2; ++i) {
#pragma unroll
    for (int x = 4; x < 32; x *= 2) mx[i] = fmaxf(mx[i], __shfl_xor_sync(kFull, mx[i], x));  // over the 8 g
    const float m_new = fmaxf(ch.m[i], mx[i] * c[i]);
    shift[i] = m_new == -INFINITY ? 0.f : m_new;  // a head that has seen nothing yet stays empty
    alpha[i] = ch.m[i] == -INFINITY ? 0.f : ex2(ch.m[i] - m_new);
    ch.m[i] = m_new;
    ch.l[i] *= alpha[i];
  }
#pragma unroll
  for (int mt = 0; mt < 4; ++mt)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      s[mt][e] = ex2(fmaf(s[mt][e], c[e % 2], -shift[e % 2]));  // −∞ → 0
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
  for (int mt = 0; mt < 4; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {  // token 16·mt + g + 8h, heads 2t and 2t + 1
      const uint32_t two = pack_e4m3x4(s[mt][2 * h], s[mt][2 * h + 1], 0.f, 0.f);
      const int tok = 16 * mt + g + 8 * h;
      p[(2 * t) * kT + tok] = uint8_t(two);
      p[(2 * t + 1) * kT + tok] = uint8_t(two >> 8);
    }
  __syncwarp();
#pragma unroll
  for (int k = 0; k < 2; ++k) {
    pb[k][0] = *reinterpret_cast<const uint32_t*>(p + g * kT + 32 * k + 4 * t);
    pb[k][1] = *reinterpret_cast<const uint32_t*>(p + g * kT + 32 * k + 16 + 4 * t);
  }
}

// One step of Oᵀ += V̂ᵀ·P̂ᵀ for one tile: word ww of the lane's V slices (d/64 words each) in k-step k (32
// tokens) — the lane's 8 tokens' word ww (two 16-byte loads, fireq_layout.h's V order), each converted through
// its token's table (σ bytes in sig: [half] = tokens 32k + 4t.., 32k + 16 + 4t..) and regrouped by channel into
// A fragments (rows = channels g + 8j, j = 8·ww … 8·ww + 7: m-tiles 4·ww … 4·ww + 3; k = tokens), and 4 MMAs into
// acc. The caller zeroes acc per tile and adds it to O after k-step 1: the tensor core's narrow sum then
// spans this tile's 2 k-steps only, and O takes it in FP32 (O = α·O + P̂·V̂).
template <int D>
__device__ __forceinline__ void pv_step(const uint8_t* tile, const uint4* lut, const uint32_t (&pb)[2][2],
                                        const uint32_t (&sig)[2], int ww, int k, float (&acc)[4][4]) {
  const int lane = threadIdx.x % 32;
  const uint8_t* v = tile + layout::v_offset(D);
  // [half][r]: token 4·half + r's operand bytes of channels g + 8·(8·ww + n), n = 0 … 3 (lo) and 4 … 7 (hi)
  uint32_t lo[2][4], hi[2][4];
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const uint4 x = *reinterpret_cast<const uint4*>(v + k * 16 * D + ((2 * ww + half) * 32 + lane) * 16);
    const uint32_t words[4] = {x.x, x.y, x.z, x.w};  // word ww of tokens 4·half + r
#pragma unroll
    for (int r = 0; r < 4; ++r)
      lut_convert(words[r], lut[(sig[half] >> (8 * r)) & (kScales - 1)], lo[half][r], hi[half][r]);
  }
#if __CUDA_ARCH__ >= 900
  // FP16 MMAs (mma_e4m3's sm_90 form, v11): a register of the FP16 A fragment holds one channel of two tokens, so
  // one PRMT pairs two tokens' bytes of two channels — [t0.c, t1.c, t0.c′, t1.c′] — where the FP8 fragment
  // needed the full 4×4 transpose; k-slots 2t, 2t + 1 | 2t + 8, 2t + 9 hold tokens 4t, 4t + 1 | 4t + 2, 4t + 3 of
  // the half, as P̂ᵀ's unpacked words do.
  uint32_t p16[2][2];  // [half]: P̂ᵀ's B fragment in FP16, tokens 4t, 4t + 1 | 4t + 2, 4t + 3
#pragma unroll
  for (int half = 0; half < 2; ++half) e4m3x4_to_f16(pb[k][half], p16[half][0], p16[half][1]);
#pragma unroll
  for (int q = 0; q < 4; ++q) {  // m-tile 4·ww + q: channels g + 8·(8·ww + 2q) (row g), … + 2q + 1 (row g + 8)
    const uint32_t pick = q % 2 ? 0x7362u : 0x5140u;  // bytes 2(q mod 2) and + 1 of two tokens
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const uint32_t(&src)[4] = q < 2 ? lo[half] : hi[half];
      uint32_t a[4];
      e4m3x4_to_f16(prmt(src[0], src[1], pick), a[0], a[1]);  // row g | g + 8, tokens 4t, 4t + 1
      e4m3x4_to_f16(prmt(src[2], src[3], pick), a[2], a[3]);  // row g | g + 8, tokens 4t + 2, 4t + 3
      mma_f16(acc[q], a, p16[half][0], p16[half][1]);
    }
  }
#else
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    transpose4(lo[half]);  // lo[half][m]: channel n = m of the half's four tokens
    transpose4(hi[half]);
  }
#pragma unroll
  for (int q = 0; q < 4; ++q) {  // m-tile 4·ww + q: channels g + 8·(8·ww + 2q) and … + 2q + 1
    const uint32_t(&b0)[4] = q < 2 ? lo[0] : hi[0];
    const uint32_t(&b1)[4] = q < 2 ? lo[1] : hi[1];
    const int n = 2 * (q % 2);
    mma_e4m3(acc[q], b0[n], b0[n + 1], b1[n], b1[n + 1], pb[k][0], pb[k][1]);
  }
#endif
}

// Oᵀ += V̂ᵀ·P̂ᵀ for one tile, k-step by k-step: the lane's 8 V tables of a k-step are loaded once and serve all
// d/64 words, whose accumulators (d/4 registers) live across both k-steps and are added to O after the last
// (v6's order: 163–167 registers at d 128 against the word-by-word order's 183, so 3 CTAs fit an SM; 147 with
// v10–v11's FP16 MMAs on sm_90).
template <int D>
__device__ __forceinline__ void pv_tile(const uint8_t* tile, const uint4* lut, const uint32_t (&pb)[2][2],
                                        Chain<D>& ch) {
  const int t = threadIdx.x % 4;
  const uint8_t* sigma = tile + layout::sigma_v_offset(D);
  float acc[D / 64][4][4] = {};
#pragma unroll
  for (int k = 0; k < 2; ++k) {
    const uint32_t sig[2] = {*reinterpret_cast<const uint32_t*>(sigma + 32 * k + 4 * t),
                             *reinterpret_cast<const uint32_t*>(sigma + 32 * k + 16 + 4 * t)};
#pragma unroll
    for (int ww = 0; ww < D / 64; ++ww) pv_step<D>(tile, lut, pb, sig, ww, k, acc[ww]);
  }
#pragma unroll
  for (int ww = 0; ww < D / 64; ++ww)
#pragma unroll
    for (int q = 0; q < 4; ++q)
#pragma unroll
      for (int e = 0; e < 4; ++e) ch.o[4 * ww + q][e] += acc[ww][q][e];
}

// Stage tile `tile` of `pair` with 16-byte cp.async (the tile's bytes are contiguous).
template <int D>
__device__ __forceinline__ void load_stage(uint8_t* stage, const FireqCacheArgs& c, int pair, int tile, int tiles) {
  const uint8_t* src = c.tiles + (int64_t(pair) * tiles + tile) * kTileBytes<D>;
  for (int i = threadIdx.x % 32; i < kTileBytes<D> / 16; i += 32) cp_async_16(stage + 16 * i, src + 16 * i, true);
}

template <int D>
__device__ void run_chain(const FireqDecodeArgs& a, int pair, int chain, uint8_t* mine, const uint4* lut, uint8_t* p,
                          const uint32_t (&qb)[D / 32][2], const float (&c)[2]) {
  const int tiles = int(layout::tiles_for(a.cache.tokens));
  const int first = int(int64_t(chain) * tiles / a.chains), last = int(int64_t(chain + 1) * tiles / a.chains);
  Chain<D> ch;
#pragma unroll
  for (int i = 0; i < 2; ++i) ch.m[i] = -INFINITY, ch.l[i] = 0.f;
#pragma unroll
  for (int mi = 0; mi < D / 16; ++mi)
#pragma unroll
    for (int e = 0; e < 4; ++e) ch.o[mi][e] = 0.f;

#pragma unroll
  for (int st = 0; st < kStages - 1; ++st) {
    if (first + st < last) load_stage<D>(mine + st * kTileBytes<D>, a.cache, pair, first + st, tiles);
    cp_async_commit();
  }
  for (int j = first; j < last; ++j) {
    cp_async_wait<kStages - 2>();  // tile j's stage has landed (this lane's copies) …
    __syncwarp();                  // … and every lane's; the previous tile's reads (stage and P̂) are done
    const uint8_t* stage = mine + ((j - first) % kStages) * kTileBytes<D>;
    const int ahead = j + kStages - 1;  // into the stage tile j − 1 used
    if (ahead < last) load_stage<D>(mine + ((ahead - first) % kStages) * kTileBytes<D>, a.cache, pair, ahead, tiles);
    cp_async_commit();
    float s[4][4];
    scores_tile<D>(stage, lut, qb, s);
    uint32_t pb[2][2];
    softmax_tile<D>(s, min(kT, a.cache.tokens - j * kT), c, ch, p, pb);
    pv_tile<D>(stage, lut, pb, ch);
  }
  cp_async_wait<0>();

  // ℓ over the 8 lanes of a head, O = O/ℓ, L = m + log ℓ (natural units): the output (one chain) or this
  // chain's normalized part for the merge.
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int group = a.q_heads / a.kv_heads, b = pair / a.kv_heads, kvh = pair % a.kv_heads;
  const size_t rows_total = size_t(a.batch) * a.q_heads;
#pragma unroll
  for (int i = 0; i < 2; ++i) {
#pragma unroll
    for (int x = 4; x < 32; x *= 2) ch.l[i] += __shfl_xor_sync(kFull, ch.l[i], x);
    const int head = 2 * t + i;
    if (head >= group) continue;
    const size_t row = size_t(b) * a.q_heads + size_t(kvh) * group + head;
    const bool empty = !(ch.l[i] > 0.f);
    const float inv = empty ? 0.f : 1.f / ch.l[i];
#pragma unroll
    for (int mi = 0; mi < D / 16; ++mi)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int channel = 16 * mi + g + 8 * h;
        const float x = ch.o[mi][2 * h + i] * inv;
        if (a.chains == 1) a.o[row * D + channel] = __float2bfloat16_rn(x);
        else a.workspace[(size_t(chain) * rows_total + row) * D + channel] = x;
      }
    if (g == 0) {
      const float lse = empty ? -INFINITY : (ch.m[i] + log2f(ch.l[i])) / kLog2e;
      if (a.chains == 1) a.lse[row] = lse;
      else a.workspace[size_t(a.chains) * rows_total * D + size_t(chain) * rows_total + row] = lse;
    }
  }
}

#endif  // sm_89

// CTAs per SM the registers are held to: 3 (12 warps) — d 128 takes 147 registers on sm_90 (156 on sm_89; v8 167)
// without spills in the k-step order (v4's word order needed 183 at 2 CTAs, 168 with 28 bytes spilled at 3).
// kernels/PERF.md v8, v10, v11.
constexpr int kCtasPerSm = 3;
// Shared memory: kStages tiles per warp, the tables, and each warp's P̂ (8 heads × 64 tokens).
template <int D>
constexpr int kSmemBytes = kWarps * kStages * kTileBytes<D> + kScales * 16 + kWarps * kRows * kT;

template <int D>
__global__ void __launch_bounds__(kWarps * 32, kCtasPerSm) fireq_chains_kernel(const FireqDecodeArgs a) {
#if __CUDA_ARCH__ >= 890
  extern __shared__ __align__(16) uint8_t smem[];
  uint4* lut = reinterpret_cast<uint4*>(smem + kWarps * kStages * kTileBytes<D>);
  for (int b = threadIdx.x; b < kScales; b += blockDim.x) lut[b] = build_lut(uint32_t(b));
  __syncthreads();  // the only CTA-wide barrier: before any warp may leave
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int id = blockIdx.x * kWarps + warp, pair = id / a.chains, chain = id % a.chains;
  if (pair >= a.cache.pairs) return;
  // Q̂ᵀ as the B operand (k = channels, n = heads): head g of the group, b0 = channels 32j + 4t.., b1 = 32j +
  // 16 + 4t..; heads past the group are 0 (their scores are computed, never stored).
  const int group = a.q_heads / a.kv_heads, b = pair / a.kv_heads, kvh = pair % a.kv_heads;
  const size_t head0 = size_t(b) * a.q_heads + size_t(kvh) * group;
  const uint8_t* q = a.q + (head0 + (g < group ? g : 0)) * D;
  uint32_t qb[D / 32][2];
#pragma unroll
  for (int j = 0; j < D / 32; ++j) {
    qb[j][0] = g < group ? __ldg(reinterpret_cast<const unsigned*>(q + 32 * j + 4 * t)) : 0u;
    qb[j][1] = g < group ? __ldg(reinterpret_cast<const unsigned*>(q + 32 * j + 16 + 4 * t)) : 0u;
  }
  float c[2];  // β·τ·log₂e of heads 2t and 2t + 1 (1 past the group: their zero scores stay finite)
#pragma unroll
  for (int i = 0; i < 2; ++i) c[i] = 2 * t + i < group ? __ldg(a.q_scale + head0 + 2 * t + i) * kLog2e : 1.f;
  uint8_t* p = smem + kWarps * kStages * kTileBytes<D> + kScales * 16 + warp * kRows * kT;
  run_chain<D>(a, pair, chain, smem + warp * kStages * kTileBytes<D>, lut, p, qb, c);
#endif
}

// Merges the chains of one output row (blockDim.x = d threads; kernels/common/chain_merge.cuh).
__global__ void fireq_merge_kernel(const FireqDecodeArgs a) {
  merge_chains_row(a.workspace, a.chains, size_t(a.batch) * a.q_heads, a.cache.head_dim, blockIdx.x, a.o, a.lse);
}

// The LUT test hook: one thread per scale byte converts the 16 codes (words 0x76543210 and 0xFEDCBA98:
// codes 0…7, then −8…−1) through the tables in shared memory, as the kernel does.
__global__ void fireq_lut_probe_kernel(uint8_t* out) {
#if __CUDA_ARCH__ >= 890
  __shared__ uint4 lut[kScales];
  lut[threadIdx.x] = build_lut(threadIdx.x);
  __syncthreads();
  const uint4 T = lut[threadIdx.x];
  uint32_t r[4];
  lut_convert(0x76543210u, T, r[0], r[1]);
  lut_convert(0xFEDCBA98u, T, r[2], r[3]);
  const uint32_t words[4] = {r[2], r[3], r[0], r[1]};  // entry order c + 8: −8…−1, then 0…7
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int k = 0; k < 4; ++k) out[threadIdx.x * 16 + 4 * i + k] = uint8_t(words[i] >> (8 * k));
#endif
}

template <int D>
cudaError_t prepare() {
  return cudaFuncSetAttribute(fireq_chains_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes<D>);
}

template <int D>
cudaError_t occupancy(int& warps) {
  int ctas = 0;
  if (const cudaError_t e = prepare<D>(); e != cudaSuccess) return e;
  const cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&ctas, fireq_chains_kernel<D>, kWarps * 32, kSmemBytes<D>);
  warps = ctas * kWarps;
  return e;
}

template <int D>
cudaError_t launch(const FireqDecodeArgs& a, cudaStream_t stream) {
  if (const cudaError_t e = prepare<D>(); e != cudaSuccess) return e;
  const long warps = long(a.cache.pairs) * a.chains;
  fireq_chains_kernel<D><<<unsigned((warps + kWarps - 1) / kWarps), kWarps * 32, kSmemBytes<D>, stream>>>(a);
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  if (a.chains > 1) {
    fireq_merge_kernel<<<unsigned(size_t(a.batch) * a.q_heads), unsigned(D), 0, stream>>>(a);
    return cudaGetLastError();
  }
  return cudaSuccess;
}

template <class F>
cudaError_t dispatch(int d, F&& f) {
  if (d == 64) return f.template operator()<64>();
  if (d == 128) return f.template operator()<128>();
  return cudaErrorInvalidValue;
}

}  // namespace

bool fireq_decode_supports(int head_dim, int gqa_group) {
  return layout::supports(head_dim) && gqa_group >= 1 && gqa_group <= kRows;
}

int fireq_decode_tiles(const FireqCacheArgs& c) { return int(layout::tiles_for(c.tokens)); }

cudaError_t fireq_decode_warps_per_sm(int head_dim, int& warps) {
  warps = 0;
  return dispatch(head_dim, [&]<int D>() { return occupancy<D>(warps); });
}

int fireq_decode_chains(int pairs, int tiles, int sm_count, int warps_per_sm) {
  static_assert(kTraits.balanced_chains);
  return balanced_warp_chains(pairs, tiles, sm_count, warps_per_sm / kWarps, kWarps, kMaxChains);
}

size_t fireq_decode_workspace_bytes(const FireqDecodeArgs& a) {
  if (a.chains <= 1) return 0;
  return size_t(a.chains) * size_t(a.batch) * a.q_heads * (size_t(a.cache.head_dim) + 1) * sizeof(float);
}

cudaError_t fireq_decode(const FireqDecodeArgs& a, cudaStream_t stream) {
  const FireqCacheArgs& c = a.cache;
  if (a.kv_heads < 1 || a.q_heads % a.kv_heads != 0 || c.pairs != a.batch * a.kv_heads ||
      !fireq_decode_supports(c.head_dim, a.q_heads / a.kv_heads) || c.tokens < 1 || a.chains < 1 ||
      a.chains > fireq_decode_tiles(c) || (a.chains > 1 && a.workspace == nullptr))
    return cudaErrorInvalidValue;
  return dispatch(c.head_dim, [&]<int D>() { return launch<D>(a, stream); });
}

cudaError_t fireq_lut_probe(uint8_t* out, cudaStream_t stream) {
  fireq_lut_probe_kernel<<<1, kScales, 0, stream>>>(out);
  return cudaGetLastError();
}

}  // namespace attnlab::kernels
