// attnlab kernels: FireQ decode (FireQ §3.1.1 Step 1, §3.2.2 Alg. 1 at one query token) on FP8 tensor cores
// (mma.sync.m16n8k32 e4m3, sm_89 and later), reading the INT4 K̃/V cache of core/variants/fireq_layout.h where
// it lies: every code becomes its E4M3 operand in registers through §3.1.1's 16-entry lookup table.
//
// Work split. One warp runs one chain: a contiguous run of one (batch, KV head)'s 64-token tiles, for all
// G ≤ 8 query heads of that KV head at once — they are the MMA's M rows g (rows g + 8 stay 0), so every
// tile loaded serves the whole group (GQA). S = Q̂·K̂ᵀ (B = K̂: k = channels, n = 8 tokens) and O = P̂·V̂
// (A = P̂: k = tokens; B = V̂: n = 8 channels). Four independent warps per CTA, each streaming its tiles
// through its own two-stage cp.async ring; with C > 1 chains per pair a second kernel merges their
// normalized outputs (O = Σ_c e^{L_c − L}·O_c, L = log Σ_c e^{L_c}); C from decode_splits over warps.
//
// INT4 → FP8 (§3.1.1 Step 1): the operand of code c of a token with scale σ is LUT_σ[c] = FP8(c·σ), as the
// reference's fireq::int4_fp8_lut. σ is an E4M3 byte, so there are 128 tables (σ ≥ 0; 0x7F is NaN and never
// stored): each CTA builds them all once into 2 KB of shared memory (one thread per scale, 16 entries by
// cvt.rn.satfinite.e4m3x2 from c·σ, exact in FP32), and a token's table is one 16-byte load indexed by its
// σ byte. The conversion itself is byte permutes (lut_convert): a word of 8 codes indexes the positive
// half-table (c ∈ [0, 7]) and the negative one (c ∈ [−8, −1]) by each nibble's low 3 bits, and PRMT's
// sign-replicating mode turns each nibble's sign bit into a byte mask that picks between them — 11
// instructions for 8 codes, no arithmetic on values. K's operand bytes of one register belong to one
// token (k = channels). V's do not (k = tokens): a lane converts four tokens' slices, each through its own
// table, and transposes the 4×4 bytes (8 PRMTs).
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
// The differences from the reference, which tests/kernels/test_fireq_decode_kernel.cpp bounds: the tensor
// core's accumulation of FP8 products (Hopper keeps about 14 bits of the running sum within an MMA's k32
// step, not the exact FP32 sum the reference takes: tests/kernels/test_flash3_fp8_kernel.cpp's finding),
// ex2.approx for exp, FP32 summation order of ℓ and O, and P̃'s E4M3 rounding taken against a different
// running max (other tiles, other chains: the reference runs one row block over B_c = block_c tiles).
//
// Versions: v1 (this), measured in kernels/PERF.md.
#include "kernels/fireq_decode.h"

#include "core/kernel_traits.h"
#include "core/variants/fireq_layout.h"
#include "kernels/mma.cuh"

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
constexpr int kRows = 8;        // query heads per KV head (MMA rows g)
constexpr int kMaxChains = 128;  // flash2's decode_splits_max
constexpr int kScales = 128;     // E4M3 bytes of a scale σ ≥ 0 (0x7F, NaN, is never stored)
static_assert(layout::kTile == kT, "the kernel's tile is the layout's");
static_assert(kTraits.block_c == kT && kTraits.block_r == kRows);

template <int D>
constexpr int kTileBytes = int(layout::tile_bytes(D));
static_assert(kTileBytes<64> % 16 == 0 && kTileBytes<128> % 16 == 0, "16-byte copies");

// One chain's online-softmax state for query head g (lane (g, t)): the running max m (log₂ units), its
// partial ℓ over the lane's tokens, and O's accumulators for channels 8·nt + 2t and 8·nt + 2t + 1.
template <int D>
struct Chain {
  float m, l;
  float o[D / 8][2];
};

// The device code needs sm_89's FP8 conversions and MMA: other targets compile empty kernels (the backend
// refuses their GPUs).
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 890
constexpr int kNT = kT / 8;  // 8-token n-tiles of S per tile
constexpr unsigned kFull = 0xffffffffu;
constexpr float kLog2e = 1.4426950408889634f;

__device__ __forceinline__ uint32_t prmt(uint32_t a, uint32_t b, uint32_t sel) {
  uint32_t d;
  asm("prmt.b32 %0, %1, %2, %3;\n" : "=r"(d) : "r"(a), "r"(b), "r"(sel));
  return d;
}

// Four FP32 values rounded to E4M3 (RNE, saturating: formats::round_fp8) and packed, the first in the lowest
// byte. cvt's e4m3x2 puts its first source in the upper byte.
__device__ __forceinline__ uint32_t pack_e4m3x4(float b0, float b1, float b2, float b3) {
  uint16_t lo, hi;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;\n" : "=h"(lo) : "f"(b1), "f"(b0));
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;\n" : "=h"(hi) : "f"(b3), "f"(b2));
  return uint32_t(lo) | (uint32_t(hi) << 16);
}

// d[0..1] (row g) += A·B with A's rows g + 8 zero: a0 = (g, k 4t..4t+3), a2 = (g, k 16+4t..); rows g + 8's
// results are dropped.
__device__ __forceinline__ void mma_e4m3(float (&d)[2], uint32_t a0, uint32_t a2, uint32_t b0, uint32_t b1) {
  float rows8[2] = {0.f, 0.f};  // rows g + 8: 0 in, dropped out
  asm("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(rows8[0]), "+f"(rows8[1])
      : "r"(a0), "r"(0u), "r"(a2), "r"(0u), "r"(b0), "r"(b1));
}

// E4M3 byte b < 0x7F as a float, exactly: (8 + m)·2^(e − 10), or m·2⁻⁹ for e = 0.
__device__ __forceinline__ float e4m3_value(uint32_t b) {
  const int e = int(b >> 3) & 0xF, m = int(b & 7);
  return e == 0 ? ldexpf(float(m), -9) : ldexpf(float(8 + m), e - 10);
}

// §3.1.1 Step 1's table of scale byte b: x = LUT[0..3], y = LUT[4..7] (c ≥ 0), z = LUT[−8..−5],
// w = LUT[−4..−1], the first entry of each in the lowest byte. c·σ is exact in FP32 (4 + 3 significant bits).
__device__ __forceinline__ uint4 build_lut(uint32_t b) {
  const float s = e4m3_value(b);
  auto quad = [&](int c) { return pack_e4m3x4(float(c) * s, float(c + 1) * s, float(c + 2) * s, float(c + 3) * s); };
  return make_uint4(quad(0), quad(4), quad(-8), quad(-4));
}

// The operand bytes of 8 codes (nibble k of w = code k) through table T: lo = codes 0–3, hi = codes 4–7.
// A nibble's low 3 bits index both half-tables (c and c + 8 for a negative c, its two's complement); PRMT
// with selector nibble 8 + i replicates bit 7 of byte i, so the mask of nibble k's sign bit comes from w
// (odd nibbles: bit 7 of their byte) and w << 4 (even nibbles: bit 3 moved to bit 7).
__device__ __forceinline__ void lut_convert(uint32_t w, const uint4& T, uint32_t& lo, uint32_t& hi) {
  const uint32_t idx = w & 0x77777777u, idx_hi = idx >> 16, w4 = w << 4;
  const uint32_t mask_lo = prmt(w4, w, 0xD9C8u);  // signs of nibbles 0, 1, 2, 3 (bytes 0, 4, 1, 5)
  const uint32_t mask_hi = prmt(w4, w, 0xFBEAu);  // nibbles 4, 5, 6, 7 (bytes 2, 6, 3, 7)
  const uint32_t pos_lo = prmt(T.x, T.y, idx), neg_lo = prmt(T.z, T.w, idx);
  const uint32_t pos_hi = prmt(T.x, T.y, idx_hi), neg_hi = prmt(T.z, T.w, idx_hi);
  lo = (pos_lo & ~mask_lo) | (neg_lo & mask_lo);
  hi = (pos_hi & ~mask_hi) | (neg_hi & mask_hi);
}

// r[i] holds 4 bytes of token i; afterwards r[m] holds byte m of tokens 0–3 (a 4×4 byte transpose).
__device__ __forceinline__ void transpose4(uint32_t (&r)[4]) {
  const uint32_t t0 = prmt(r[0], r[1], 0x5140u), t1 = prmt(r[0], r[1], 0x7362u);
  const uint32_t t2 = prmt(r[2], r[3], 0x5140u), t3 = prmt(r[2], r[3], 0x7362u);
  r[0] = prmt(t0, t2, 0x5410u), r[1] = prmt(t0, t2, 0x7632u);
  r[2] = prmt(t1, t3, 0x5410u), r[3] = prmt(t1, t3, 0x7632u);
}

// The token (of the tile) in column `col` of S's n-tile nt. Chosen so that S's accumulator is P̂'s A
// fragment as it stands: lane (g, t) holds columns 2t, 2t + 1 of every n-tile, and P̂·V̂'s k-step c wants
// (k = 4t..4t+3) and (k = 16 + 4t..16 + 4t + 3) — n-tiles 4c, 4c + 1 give the first four, 4c + 2, 4c + 3 the
// second, and the V layout's k order is the token order (fireq_layout.h).
__device__ __forceinline__ int score_token(int nt, int col) {
  const int c = nt >> 2, n = nt & 3;
  return 32 * c + 16 * (n >> 1) + 4 * (col >> 1) + 2 * (n & 1) + (col & 1);
}

// S (head g, the lane's columns 2t, 2t + 1 of each n-tile) of one tile: per n-tile, the lane's token's
// K slice (one load), its table (one load), and d/32 MMAs.
template <int D>
__device__ __forceinline__ void scores_tile(const uint8_t* tile, const uint4* lut, const uint32_t (&qa)[D / 32][2],
                                            float (&s)[kNT][2]) {
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const uint8_t* sigma = tile + layout::sigma_k_offset(D);
#pragma unroll
  for (int nt = 0; nt < kNT; ++nt) {
    const int tok = score_token(nt, g);
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
    s[nt][0] = s[nt][1] = 0.f;
#pragma unroll
    for (int j = 0; j < D / 32; ++j) {
      uint32_t b0, b1;
      lut_convert(w[j], T, b0, b1);
      mma_e4m3(s[nt], qa[j][0], qa[j][1], b0, b1);
    }
  }
}

// The online softmax of one tile (Alg. 1 l. 8, 13, 15): tokens ≥ valid masked, m_new = max(m, S·c) with
// c = β·τ·log₂e, P̃ = 2^{S·c − m_new}, ℓ and O rescaled by 2^{m_old − m_new}; returns P̂ = FP8(P̃) as the
// A fragments (a0, a2) of P̂·V̂'s two k-steps (score_token's order).
template <int D>
__device__ __forceinline__ void softmax_tile(float (&s)[kNT][2], int valid, float c, Chain<D>& ch,
                                             uint32_t (&pa)[2][2]) {
  const int t = threadIdx.x % 4;
  if (valid < kT) {
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
      for (int e = 0; e < 2; ++e)
        if (score_token(nt, 2 * t + e) >= valid) s[nt][e] = -INFINITY;
  }
  float mx = -INFINITY;
#pragma unroll
  for (int nt = 0; nt < kNT; ++nt) mx = fmaxf(mx, fmaxf(s[nt][0], s[nt][1]));
  mx = fmaxf(mx, __shfl_xor_sync(kFull, mx, 1));
  mx = fmaxf(mx, __shfl_xor_sync(kFull, mx, 2));
  const float m_new = fmaxf(ch.m, mx * c);
  const float shift = m_new == -INFINITY ? 0.f : m_new;  // a head that has seen nothing yet stays empty
  const float alpha = ch.m == -INFINITY ? 0.f : ex2(ch.m - m_new);
  ch.m = m_new;
  ch.l *= alpha;
#pragma unroll
  for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      s[nt][e] = ex2(fmaf(s[nt][e], c, -shift));  // −∞ → 0
      ch.l += s[nt][e];
    }
  // Once the running maxima settle, α = 1 for every head of the warp: skipping the multiply is exact.
  if (__any_sync(kFull, alpha != 1.f)) {
#pragma unroll
    for (int nt = 0; nt < D / 8; ++nt) ch.o[nt][0] *= alpha, ch.o[nt][1] *= alpha;
  }
#pragma unroll
  for (int k = 0; k < 2; ++k) {
    pa[k][0] = pack_e4m3x4(s[4 * k][0], s[4 * k][1], s[4 * k + 1][0], s[4 * k + 1][1]);
    pa[k][1] = pack_e4m3x4(s[4 * k + 2][0], s[4 * k + 2][1], s[4 * k + 3][0], s[4 * k + 3][1]);
  }
}

// O += P̂·V̂ for one tile: per word ww of the lane's V slices (d/64 of them) and k-step k (32 tokens), the
// lane's 8 tokens' word ww (two 16-byte loads, fireq_layout.h's V order), each converted through its token's
// table and transposed 4×4 into B fragments (k = tokens 4t.., 16 + 4t..; n = channel g of n-tiles
// 8·ww … 8·ww + 7), and 8 MMAs into an accumulator zeroed per (tile, ww): the tensor core's narrow sum then
// spans this tile's 2 k-steps only, and O takes it in FP32 (O = α·O + P̂·V̂).
template <int D>
__device__ __forceinline__ void pv_tile(const uint8_t* tile, const uint4* lut, const uint32_t (&pa)[2][2],
                                        Chain<D>& ch) {
  constexpr int kWords = D / 64;  // words of a token's V slice (d/16 bytes)
  const int lane = threadIdx.x % 32, t = lane % 4;
  const uint8_t* v = tile + layout::v_offset(D);
  const uint8_t* sigma = tile + layout::sigma_v_offset(D);
  uint32_t sig[2][2];  // [k][half]: the σ bytes of tokens 32k + 4t.. and 32k + 16 + 4t..
#pragma unroll
  for (int k = 0; k < 2; ++k)
#pragma unroll
    for (int half = 0; half < 2; ++half) sig[k][half] = *reinterpret_cast<const uint32_t*>(sigma + 32 * k + 16 * half + 4 * t);
#pragma unroll
  for (int ww = 0; ww < kWords; ++ww) {
    float acc[8][2] = {};
#pragma unroll
    for (int k = 0; k < 2; ++k) {
      uint32_t b[2][8];
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const uint4 x = *reinterpret_cast<const uint4*>(v + k * 16 * D + ((2 * ww + half) * 32 + lane) * 16);
        const uint32_t words[4] = {x.x, x.y, x.z, x.w};  // word ww of tokens 4·half + r
        uint32_t lo[4], hi[4];
#pragma unroll
        for (int r = 0; r < 4; ++r) lut_convert(words[r], lut[(sig[k][half] >> (8 * r)) & (kScales - 1)], lo[r], hi[r]);
        transpose4(lo);  // lo[m]: channel g + 8·(8·ww + m) of the four tokens
        transpose4(hi);  // hi[m]: channel g + 8·(8·ww + 4 + m)
#pragma unroll
        for (int m = 0; m < 4; ++m) b[half][m] = lo[m], b[half][4 + m] = hi[m];
      }
#pragma unroll
      for (int n = 0; n < 8; ++n) mma_e4m3(acc[n], pa[k][0], pa[k][1], b[0][n], b[1][n]);
    }
#pragma unroll
    for (int n = 0; n < 8; ++n) ch.o[8 * ww + n][0] += acc[n][0], ch.o[8 * ww + n][1] += acc[n][1];
  }
}

// Stage tile `tile` of `pair` with 16-byte cp.async (the tile's bytes are contiguous).
template <int D>
__device__ __forceinline__ void load_stage(uint8_t* stage, const FireqCacheArgs& c, int pair, int tile, int tiles) {
  const uint8_t* src = c.tiles + (int64_t(pair) * tiles + tile) * kTileBytes<D>;
  for (int i = threadIdx.x % 32; i < kTileBytes<D> / 16; i += 32) cp_async_16(stage + 16 * i, src + 16 * i, true);
}

template <int D>
__device__ void run_chain(const FireqDecodeArgs& a, int pair, int chain, uint8_t* mine, const uint4* lut,
                          const uint32_t (&qa)[D / 32][2], float c) {
  const int tiles = int(layout::tiles_for(a.cache.tokens));
  const int first = int(int64_t(chain) * tiles / a.chains), last = int(int64_t(chain + 1) * tiles / a.chains);
  Chain<D> ch;
  ch.m = -INFINITY, ch.l = 0.f;
#pragma unroll
  for (int nt = 0; nt < D / 8; ++nt) ch.o[nt][0] = ch.o[nt][1] = 0.f;

#pragma unroll
  for (int st = 0; st < kStages - 1; ++st) {
    if (first + st < last) load_stage<D>(mine + st * kTileBytes<D>, a.cache, pair, first + st, tiles);
    cp_async_commit();
  }
  for (int j = first; j < last; ++j) {
    cp_async_wait<kStages - 2>();  // tile j's stage has landed (this lane's copies) …
    __syncwarp();                  // … and every lane's; the previous tile's reads are done
    const uint8_t* stage = mine + ((j - first) % kStages) * kTileBytes<D>;
    const int ahead = j + kStages - 1;  // into the stage tile j − 1 used
    if (ahead < last) load_stage<D>(mine + ((ahead - first) % kStages) * kTileBytes<D>, a.cache, pair, ahead, tiles);
    cp_async_commit();
    float s[kNT][2];
    scores_tile<D>(stage, lut, qa, s);
    uint32_t pa[2][2];
    softmax_tile<D>(s, min(kT, a.cache.tokens - j * kT), c, ch, pa);
    pv_tile<D>(stage, lut, pa, ch);
  }
  cp_async_wait<0>();

  // ℓ over the 4 lanes of a head, O = O/ℓ, L = m + log ℓ (natural units): the output (one chain) or this
  // chain's normalized part for the merge.
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  ch.l += __shfl_xor_sync(kFull, ch.l, 1);
  ch.l += __shfl_xor_sync(kFull, ch.l, 2);
  const int group = a.q_heads / a.kv_heads, b = pair / a.kv_heads, kvh = pair % a.kv_heads;
  if (g >= group) return;
  const size_t rows_total = size_t(a.batch) * a.q_heads;
  const size_t row = size_t(b) * a.q_heads + size_t(kvh) * group + g;
  const bool empty = !(ch.l > 0.f);
  const float inv = empty ? 0.f : 1.f / ch.l;
#pragma unroll
  for (int nt = 0; nt < D / 8; ++nt) {
    const int channel = 8 * nt + 2 * t;
    const float x0 = ch.o[nt][0] * inv, x1 = ch.o[nt][1] * inv;
    if (a.chains == 1) {
      *reinterpret_cast<__nv_bfloat162*>(a.o + row * D + channel) = __floats2bfloat162_rn(x0, x1);
    } else {
      *reinterpret_cast<float2*>(a.workspace + (size_t(chain) * rows_total + row) * D + channel) = make_float2(x0, x1);
    }
  }
  if (t == 0) {
    const float lse = empty ? -INFINITY : (ch.m + log2f(ch.l)) / kLog2e;
    if (a.chains == 1) a.lse[row] = lse;
    else a.workspace[size_t(a.chains) * rows_total * D + size_t(chain) * rows_total + row] = lse;
  }
}

#endif  // sm_89

// CTAs per SM the registers are held to (ptxas -v: d 128 takes 202 registers at 2, spills at 3).
#ifndef FIREQ_CTAS
#define FIREQ_CTAS 2
#endif
constexpr int kCtasPerSm = FIREQ_CTAS;
// Shared memory: kStages tiles per warp and the tables.
template <int D>
constexpr int kSmemBytes = kWarps * kStages * kTileBytes<D> + kScales * 16;

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
  // Q̂ as the A operand (rows = heads g of the group, k = channels): a0 = channels 32j + 4t.., a2 = 32j + 16 +
  // 4t..; heads past the group are 0 (their scores are computed, never stored).
  const int group = a.q_heads / a.kv_heads, b = pair / a.kv_heads, kvh = pair % a.kv_heads;
  const size_t head = size_t(b) * a.q_heads + size_t(kvh) * group + (g < group ? g : 0);
  const uint8_t* q = a.q + head * D;
  uint32_t qa[D / 32][2];
#pragma unroll
  for (int j = 0; j < D / 32; ++j) {
    qa[j][0] = g < group ? __ldg(reinterpret_cast<const unsigned*>(q + 32 * j + 4 * t)) : 0u;
    qa[j][1] = g < group ? __ldg(reinterpret_cast<const unsigned*>(q + 32 * j + 16 + 4 * t)) : 0u;
  }
  const float c = g < group ? __ldg(a.q_scale + head) * kLog2e : 1.f;
  run_chain<D>(a, pair, chain, smem + warp * kStages * kTileBytes<D>, lut, qa, c);
#endif
}

// Merges the chains of one output row (blockDim.x = d threads): O = Σ_c e^{L_c − L}·O_c, L = log Σ_c e^{L_c}.
__global__ void fireq_merge_kernel(const FireqDecodeArgs a) {
  const int d = a.cache.head_dim;
  const size_t rows_total = size_t(a.batch) * a.q_heads, row = blockIdx.x;
  const float* lse_c = a.workspace + size_t(a.chains) * rows_total * d;
  float top = -INFINITY;
  for (int c = 0; c < a.chains; ++c) top = fmaxf(top, lse_c[c * rows_total + row]);
  float total = 0.f, acc = 0.f;
  for (int c = 0; c < a.chains; ++c) {
    const float w = top == -INFINITY ? 0.f : expf(lse_c[c * rows_total + row] - top);
    total += w;
    acc += w * a.workspace[(c * rows_total + row) * d + threadIdx.x];
  }
  a.o[row * d + threadIdx.x] = __float2bfloat16_rn(total > 0.f ? acc / total : 0.f);
  if (threadIdx.x == 0) a.lse[row] = total > 0.f ? top + logf(total) : -INFINITY;
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

int fireq_decode_chains(int pairs, int tiles, long gpu_warps) {
  if (tiles < 1) return 1;
  return decode_splits(pairs, gpu_warps > 0 ? gpu_warps : 1, tiles, kMaxChains);
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
