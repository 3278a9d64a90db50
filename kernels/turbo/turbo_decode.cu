// attnlab kernels: TurboAttention decode (App. A Alg. 2; §3.1–3.3 FlashQ's cache and buffer; §4 SAS) on
// INT8 tensor cores (mma.sync.m16n8k32), reading the progressive INT4/INT2 cache where it lies and
// never dequantizing to floats.
//
// Work split. One warp runs one chain (core/variants/turbo_chains.h): Alg. 2's loop over a contiguous
// run of one (batch, KV head)'s tiles, for all G ≤ 8 query heads of that KV head at once — they are the
// rows of the MMA's M dimension, so every K/V block loaded serves the whole group (GQA). Four independent
// warps per CTA, each streaming its blocks through its own three-deep cp.async ring in shared memory;
// a second kernel merges the chains in order (turbo_chains.h's rule). No CTA-wide barrier in the loop.
//
// Q·Kᵀ without dequantizing K (Eq. 7–8 folded into the product). A cache block holds codes k ∈ [0, L],
// L = 2^b − 1, with per-channel integers s_c, z_c: K̂ = sat₁₂₇((k + z_c)·s_c) (core/quant/progressive.h).
// Where no value of channel c can saturate,
//     Σ_c q_c·K̂_c = Σ_c (q_c·s_c)·k_c + Σ_c (q_c·s_c)·z_c,
// with q_c·s_c ∈ [−127·85, 127·85] split as 128·hi + lo (lo ∈ [0, 127]): hi goes in MMA row g and lo in
// row g + 8 (rows the group leaves empty), the codes themselves are the B operand (a mask of the loaded word;
// at 2 bits the codes times a power of 4, divided back from the product: v21), and the accumulator starts at
// Σ hi·z | Σ lo·z (one more MMA with z as B's column 0):
// S_int = 128·C[g] + C[g + 8], exactly the INT32 product of Q^q1 with the reference's INT8 K̂.
// Saturation (progressive.h): a 4-bit prefill block never saturates (|K̂| ≤ 119 + 8); otherwise a
// channel may only if z·s < −127 or (L + z)·s > 127 — a bit per channel the cache writer stores beside s and z
// (turbo_layout.h's saturation flags). Such channels (≈1% of channels, but in ~70% of
// 2-bit blocks, measured on llm_like and normal data) are left out of the fold (their q·s is set to 0)
// and added per token with the saturating dequantization: S_int += q_c·sat((k + z_c)·s_c).
// P·V likewise: Σ_t P_t·V̂_tc = s_c·(Σ_t P_t·k_tc + z_c·Σ_t P_t) for a channel that cannot saturate, so the
// MMA multiplies the P codes by the raw V codes and the block's per-channel s_c, z_c are applied once per
// block to the INT32 result; saturating channels are summed per token instead.
// Every product is exact in INT32, so S and P̃V equal the reference's GEMMs on integer-valued floats.
//
// The softmax (Alg. 2 l. 4–8 with SAS) in FP32, operation for operation as core/variants/turbo.cpp and
// core/sas.cpp round them: S = fl(S_int·fl(fl(s_Q·s_K)·scale)), t = S − m ≤ 0, SAS(t) bit for bit (on that domain
// by FRND.FLOOR and a LUT whose entry 31 is Eq. 14's 0: turbo_sas.cuh's SasNonPositive), s_P = fl(max P̃ / 119),
// P^q = rne(fl(P̃ / s_P)), O = fl(fl(α·O) + fl(X·fl(s_P·s_V))), the merge's products rounded before
// their sum. The only difference from the reference is the order of ℓ's sums: the reference adds a
// tile's 64 terms and then fl(α·ℓ); a lane of the kernel keeps its share of ℓ (fl(α·ℓ) plus its 2·G
// terms per tile) and the shares are summed at the chain's end. So O and the logsumexp agree to a few FP32
// ulps (tests/kernels/turbo/test_turbo_decode_kernel.cpp derives the
// bound). With exact_exp the kernel takes ex2.approx on the SFU instead of the reference's exp.
//
// Launches. Each width's path through the loop is its own fully unrolled code (80–200 KB of SASS per
// instantiation), and a 2-bit block needs half a 4-bit block's shared memory. At d 128 and G ≤ 2 that buys
// the 2-bit code 16 warps per SM against 4-bit's 8 (kCtasPerSm), so the 4-bit pairs (the first of
// TurboCacheArgs::pair_order) are one launch and the 2-bit pairs another. At d 128 and GE 4 it buys 12 warps
// against 8: a cache of 2-bit pairs only runs the 2-bit code alone at three CTAs per SM. Elsewhere one launch takes
// both widths, each warp at its pair's (launch_chains).
//
// Versions (kernels/PERF.md, "turbo decode"): v1 — the structure above; v2 — SAS or exp2 chosen at
// compile time, P̃'s quantization through the reciprocal with an exact fallback near half-integers;
// v3, v4 — integer index arithmetic, the saturation test only where a block may saturate; v5 — the
// softmax and the saturating channels in the spread layout (softmax_tile's comment), pair order; v6 —
// P·V's results and O spread the same way; v7 — at G = 1 the fold's products spread too; v9 —
// one launch per width, 2-bit at 16 warps per SM; v10 — one launch over both widths where that gains
// nothing, P·V's rows spread through shared memory; v11 — the MMA's rows replicated (row g holds
// query row g mod GE), so the scores' spread is a choice among registers and Z needs no shuffle, and the
// P codes gathered through shared memory; v13 — the saturating channels' loops rolled at GE ≥ 4; v14 — at
// GE = 4 the two lanes of a replicated row fold half the k-steps each and swap the words; v15 — the
// saturating channels' loops skipped where no channel of the block may saturate; v16 — the saturation flags
// read from the cache (written with s and z) instead of tested per channel and tile; v17 — at GE 4 a cache
// of 2-bit pairs at three CTAs per SM, with turbo_chains.h's 1536 chains; v18 — SAS on the softmax's
// domain t ≤ 0 (chain_exp); v19 — the fold's bytes by PRMT (core/variants/turbo_fold.h). (v19 as first
// written also formed the ring's copy addresses once a load: 5–16 registers more, spills at d 64 GE 4 and 1–4% slower
// there, measured; in git at 1d6623f, kernels/PERF.md.) v20 — on sm_90 the ring's stages filled by the copy engine
// (StageRing; lane 0's branch is still issued by the whole warp: 49 instructions a tile fewer, the same time at GQA,
// 3% less at MHA on an H200); v21 (this) — the 2-bit codes of an n-tile in one field of every word (turbo_layout.h),
// an operand one mask, the products 4^f times too large and divided back exactly (shift_spread): 2-bit GQA 5.5% faster.
#include "kernels/turbo/turbo_decode.h"

#include "core/kernel_traits.h"
#include "core/variants/turbo_chains.h"
#include "core/variants/turbo_fold.h"
#include "core/variants/turbo_layout.h"
#include "kernels/common/mma.cuh"
#include "kernels/common/tma_fill.cuh"
#include "kernels/turbo/turbo_compress.cuh"
#include "kernels/turbo/turbo_quant.cuh"
#include "kernels/turbo/turbo_sas.cuh"

#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

namespace attnlab::kernels {

namespace {

namespace layout = attnlab::turbo_layout;

// Warps per CTA (one chain each) and cache blocks in flight per warp (2 measured slower: kernels/PERF.md,
// v1): the traits row the cost model reads (core/kernel_traits.h), the same at d 64 and 128.
constexpr KernelTraits kTraits = *find_kernel_traits("turbo", 128, 80, true);
constexpr int kWarps = kTraits.warps, kStages = kTraits.stages;
static_assert(kTraits.warp_chains && kTraits.block_c == kTurboBlock && find_kernel_traits("turbo", 64, 80, true)->warps == kWarps &&
              find_kernel_traits("turbo", 64, 80, true)->stages == kStages);
constexpr int kRows = 8;    // query heads per KV head the MMA rows hold (rows g; g + 8 carry lo)
constexpr unsigned kFull = 0xffffffffu;

template <int D>
struct Shape {
  static constexpr int KS = D / 32;  // k-steps of Q·Kᵀ
  static constexpr int NJ = D / 8;   // n-tiles (8 channels) of P·V
};
// One ring stage: a cache block's K and V codes, its scale array (s/z, 4 per channel, and the saturation flags:
// turbo_layout.h) and its two FP32 block scales. BITS = 0 is the launch over both widths (launch_chains): its ring
// is sized for 4-bit blocks.
template <int D>
constexpr int kScaleBytes = int(layout::scale_zero_bytes(D));
static_assert(kScaleBytes<64> % 16 == 0 && kScaleBytes<128> % 16 == 0, "the scale array is staged in 16-byte copies");
template <int D, int BITS>
constexpr int kStageBytes = 2 * kTurboBlock * D * (BITS == 0 ? 4 : BITS) / 8 + kScaleBytes<D> + 16;
// Rows of Q codes a warp keeps: the GE rows of the spread (rows ≥ G hold zeros), at least the 128 bytes the
// G = 1 fold reads as 32 words.
template <int D, int GE>
constexpr int kQRows = GE * D >= 128 ? GE : 128 / D;
// A warp's shared memory: its ring, then the Q codes, their scales s_Q (≤ 8 floats) and the ring's mbarriers (v20;
// kBarBytes keeps the next warp's ring 16-byte aligned).
constexpr int kBarBytes = 32;
static_assert(kStages * 8 <= kBarBytes);
template <int D, int GE, int BITS>
constexpr int kWarpBytes = kStages * kStageBytes<D, BITS> + kQRows<D, GE> * D + 32 + kBarBytes;
template <int D, int GE, int BITS>
constexpr int kSmemBytes = kWarps * kWarpBytes<D, GE, BITS> + 32 * 4;  // + the SAS table
// CTAs per SM: 4 (16 warps) where shared memory allows it; 3 (12 warps) for the 2-bit code at GE ≤ 4 where three
// fit (d 128, GE 4: 57 KB a CTA, 156 registers — GE 8's 186 would spill under launch bounds of three); else 2.
// Three CTAs run only a cache whose pairs are all 2-bit, with turbo_chains.h's ≤ 1536 chains — one wave of 12 warps
// (12 chains a pair at B 16 × 8 KV heads): 0.2076 ms against two CTAs' 0.2236 at B 16, H 32/8, N 32k (v17; the A/B
// in kernels/PERF.md); a mixed cache keeps one launch sized for 4 bits (three CTAs' two launches measured 1.7% slower
// there). v9 measured three
// CTAs slower with the chain count of two, 2048 (0.427 against 0.397 ms): 12 warps per SM leave a partial last wave
// of 2048 chains. The padding assumes the H100's 228 KB per SM: on other GPUs it only lowers occupancy (kernels/
// PERF.md, v9). A 2-bit block needs half a 4-bit block's ring, so 2-bit launches at G ≤ 2 run 16 warps per SM. The
// launch bounds ask the compiler for registers to match, and the launch asks for enough shared memory that one CTA
// more than kCtasPerSm does not fit (kSmemRequest).
constexpr int kSmemPerSm = 233472, kSmemPerCtaReserved = 1024;  // H100: 228 KB per SM, 1 KB reserved per CTA
template <int D, int GE, int BITS>
constexpr int kCtasFitting = kSmemPerSm / (kSmemBytes<D, GE, BITS> + kSmemPerCtaReserved);
template <int D, int GE, int BITS>
constexpr int kCtasPerSm = kCtasFitting<D, GE, BITS> >= 4                                  ? 4
                           : BITS == 2 && GE <= 4 && kCtasFitting<D, GE, BITS> == 3 ? 3
                                                                                     : 2;
template <int D, int GE, int BITS>
constexpr int kSmemRequest = kCtasFitting<D, GE, BITS> <= kCtasPerSm<D, GE, BITS>
                                 ? kSmemBytes<D, GE, BITS>
                                 : kSmemPerSm / (kCtasPerSm<D, GE, BITS> + 1) - kSmemPerCtaReserved + 16;
// Where the 2-bit kernel gains occupancy (and so runs as its own launch: launch_chains).
static_assert(kCtasPerSm<128, 1, 2> == 4 && kCtasPerSm<128, 2, 2> == 4 && kCtasPerSm<128, 4, 2> == 3 &&
              kCtasPerSm<128, 8, 2> == 2);
static_assert(kCtasPerSm<128, 1, 4> == 2 && kCtasPerSm<128, 4, 0> == 2 && kCtasPerSm<64, 8, 4> == 4 &&
              kCtasPerSm<64, 8, 0> == 4);
// turbo_chains.h's chain target assumes 16 warps per SM exactly where the 2-bit code fits 4 CTAs, and 12 where a
// 2-bit cache fits 3: the rules are written apart (the reference cannot see this file), so they are held together
// here (GE 4 stands for groups 3 and 4, GE 8 for 5–8).
template <int D, int GE>
constexpr bool kChainTargetAgrees =
    (kCtasPerSm<D, GE, 2> == 4) == (turbo_chains::chain_target(D, GE, false) == turbo_chains::kTwoWaves16) &&
    (kCtasPerSm<D, GE, 2> == 3) == (turbo_chains::chain_target(D, GE, true) == turbo_chains::kOneWave12);
static_assert(kChainTargetAgrees<64, 1> && kChainTargetAgrees<64, 2> && kChainTargetAgrees<64, 4> &&
              kChainTargetAgrees<64, 8> && kChainTargetAgrees<128, 1> && kChainTargetAgrees<128, 2> &&
              kChainTargetAgrees<128, 4> && kChainTargetAgrees<128, 8>);

__device__ __forceinline__ void cp_async_8(void* smem, const void* gmem) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8;\n" ::"r"(smem_addr(smem)), "l"(gmem));
}

__device__ __forceinline__ int sat127(int x) { return min(max(x, -127), 127); }

// The tiles of a pair's cache: coded blocks (the prefill's, its last maybe short, then flushed ones) and
// the pending buffer as the last tile.
struct Tiles {
  int prefill_blocks, prefill_tail, coded, pending, total;
  __device__ __host__ explicit Tiles(const TurboCacheArgs& c) {
    prefill_blocks = (c.prefill_tokens + kTurboBlock - 1) / kTurboBlock;
    prefill_tail = c.prefill_tokens - (prefill_blocks - 1) * kTurboBlock;
    const int appended = c.tokens - c.prefill_tokens;
    coded = prefill_blocks + appended / kTurboBlock;
    pending = appended % kTurboBlock;
    total = coded + (pending > 0 ? 1 : 0);
  }
  __device__ int rows(int j) const {
    return j == prefill_blocks - 1 ? prefill_tail : j < coded ? kTurboBlock : pending;
  }
};

// One warp's chain state, in the spread layout (softmax_tile's comment): the online softmax of the lane's
// row g' = g mod GE (m the row's; ℓ the lane's share, summed over the row at the chain's end) and O's
// accumulators for its channels 8·jc + 2t + e, jc = R·i + ⌊g/GE⌋ (slot i).
template <int D, int GE>
struct Chain {
  static constexpr int NO = Shape<D>::NJ * GE / 8;  // O slots per lane
  float m = -INFINITY, l = 0.0f;
  float o[NO][2];
};

// The softmax's layout (v5). The MMAs leave row g's 64 scores of a tile in the four lanes (g, t), 16 each,
// but only the group's G rows are queries: at MHA (G = 1) seven of eight lanes would run SAS on empty
// rows. So the scores are spread: with GE = G rounded up to a power of two and R = 8/GE, lane (g, t)
// takes row g' = g mod GE, and of its tokens 8j + 2t + e those of the tiles j ≡ ⌊g/GE⌋ (mod R): 2·GE
// scores per lane (slot i ↔ j = R·i + ⌊g/GE⌋). The saturating channels' per-token terms, the softmax and
// the P codes are computed there; the codes are gathered back into the MMA's A fragment for P·V.
// Lanes g < GE hold their own row (⌊g/GE⌋ = 0), so O, m and ℓ stay where the chain's output expects them.
template <int GE>
struct Spread {
  static constexpr int R = 8 / GE;  // lanes' rows that share one query row
  static __device__ __forceinline__ int row() { return (threadIdx.x / 4 % 8) % GE; }
  static __device__ __forceinline__ int part() { return (threadIdx.x / 4 % 8) / GE; }
  // The token of slot i, element e.
  static __device__ __forceinline__ int token(int i, int e) { return 8 * (R * i + part()) + 2 * (threadIdx.x % 4) + e; }
};

// A reduction over the lanes holding one row: t (xor 1, 2), then the R copies (xor 4·GE … 16). The order
// of a float sum is fixed by the offsets (the tests' bound on ℓ allows any order).
template <int GE, class T, class Op>
__device__ __forceinline__ T row_reduce(T x, Op op) {
#pragma unroll
  for (int o = 1; o < 32; o = o == 2 ? 4 * GE : 2 * o) x = op(x, __shfl_xor_sync(kFull, x, o));
  return x;
}
// At G = 1 a row is the whole warp, and a maximum or an integer sum is one redux.sync (v10) instead of five
// dependent shuffles and operations. The maximum of floats goes through integers that order as the floats
// do (non-negative: the bits; negative: the bits with all but the sign flipped) — exact, −∞ included.
__device__ __forceinline__ int float_order(int bits) { return bits >= 0 ? bits : bits ^ 0x7fffffff; }  // an involution
template <int GE>
__device__ __forceinline__ float row_max(float x) {
  if constexpr (GE == 1) return __int_as_float(float_order(__reduce_max_sync(kFull, float_order(__float_as_int(x)))));
  else return row_reduce<GE>(x, [](float a, float b) { return fmaxf(a, b); });
}
template <int GE>
__device__ __forceinline__ float row_sum(float x) { return row_reduce<GE>(x, [](float a, float b) { return __fadd_rn(a, b); }); }
template <int GE>
__device__ __forceinline__ int row_sum(int x) {
  if constexpr (GE == 1) return __reduce_add_sync(kFull, x);
  else return row_reduce<GE>(x, [](int a, int b) { return a + b; });
}

// MMA fragments (row g, columns 8j + 2t + e for n-tiles j < N: the scores' tokens, or P·V's channels) →
// the spread layout: slot i holds n-tile j = R·i + ⌊g/GE⌋ of row g mod GE. Two ways: through shared memory
// (spread_via), or, where the MMA's rows are replicated, a choice among registers (spread_local). v5–v10
// also moved the scores by 2N shuffles and selects.
// Through shared memory (v10): the lanes of rows g < GE store their fragments, each lane
// loads its slots — N stores and N·GE/8 loads of two words where the shuffles take 2N shuffles and 2N
// selects. scratch: GE rows of 8N ints, the warp's own; the caller's next __syncwarp orders its reuse.
template <int GE, int N>
__device__ __forceinline__ void spread_via(int* scratch, const int (&in)[N][2], int (&out)[N * GE / 8][2]) {
  constexpr int R = Spread<GE>::R;
  const int g = threadIdx.x / 4 % 8, t = threadIdx.x % 4;
  __syncwarp();  // the scratch's earlier readers (other lanes) are done before it is written
  if (g < GE) {
#pragma unroll
    for (int j = 0; j < N; ++j) *reinterpret_cast<int2*>(scratch + g * 8 * N + 8 * j + 2 * t) = make_int2(in[j][0], in[j][1]);
  }
  __syncwarp();
  const int* row = scratch + Spread<GE>::row() * 8 * N;
#pragma unroll
  for (int i = 0; i < N * GE / 8; ++i) {
    const int2 v = *reinterpret_cast<const int2*>(row + 8 * (R * i + Spread<GE>::part()) + 2 * t);
    out[i][0] = v.x, out[i][1] = v.y;
  }
}

// Where the MMA's rows are replicated (v11: row g holds query row g mod GE — the fold's and
// P's A fragments are built so), so every lane already holds its slots' tiles: a choice among R registers,
// no data movement.
template <int GE, int N>
__device__ __forceinline__ void spread_local(const int (&in)[N][2], int (&out)[N * GE / 8][2]) {
  constexpr int R = Spread<GE>::R;
  const int part = Spread<GE>::part();
#pragma unroll
  for (int i = 0; i < N * GE / 8; ++i)
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      int v[R];  // a tree of selects on part's bits: log₂R predicates live, not R − 1
#pragma unroll
      for (int r = 0; r < R; ++r) v[r] = in[R * i + r][e];
#pragma unroll
      for (int bit = 1; bit < R; bit *= 2)
#pragma unroll
        for (int r = 0; r < R; r += 2 * bit) v[r] = part & bit ? v[r + bit] : v[r];
      out[i][e] = v[0];
    }
}

// v21's 2-bit products back to scale, in the spread layout: slot i holds n-tile j = R·i + ⌊g/GE⌋ (of the scores or of
// P·V's channels), whose 2-bit operands were 4^(j mod 4) times the codes (turbo_layout.h); every term of its sums was,
// so the arithmetic shift divides exactly.
template <int GE, int N>
__device__ __forceinline__ void shift_spread(int (&x)[N][2]) {
#pragma unroll
  for (int i = 0; i < N; ++i) {
    const int shift = 2 * ((Spread<GE>::R * i + Spread<GE>::part()) % 4);
    x[i][0] >>= shift, x[i][1] >>= shift;
  }
}

// The P codes (spread, each < 128) → the A fragment of P·V: k-step κ, a0 = tiles j = 4κ, 4κ + 1 and
// a2 = 4κ + 2, 4κ + 3, each 32-bit word the bytes of tokens (8j + 2t, +1) of two tiles.
template <int GE>
__device__ __forceinline__ void gather_codes(const int (&pq)[GE][2], uint32_t (&ap)[2][2], uint16_t* scratch) {
  constexpr int R = Spread<GE>::R;
  const int t = threadIdx.x % 4, row = Spread<GE>::row();
  if constexpr (GE == 8) {
    uint32_t pair[8];  // tile j's two codes of this lane's row, as the low 16 bits
#pragma unroll
    for (int j = 0; j < 8; ++j) pair[j] = uint32_t(pq[j][0]) | (uint32_t(pq[j][1]) << 8);
#pragma unroll
    for (int k = 0; k < 2; ++k) {
      ap[k][0] = pair[4 * k] | (pair[4 * k + 1] << 16);
      ap[k][1] = pair[4 * k + 2] | (pair[4 * k + 3] << 16);
    }
  } else {
    // Through shared memory (v11; v5–v10 took 8 shuffles): the lanes of row r, column t store tile j's two
    // codes at pairs (r, t, j); each lane reads its row's eight as one 16-byte word, which is already
    // a0 | a2 of both k-steps (pair 2i in the low half of word i). scratch: GE·64 bytes, 16-aligned; the
    // __syncwarp before the stores waits for the scratch's earlier readers (other lanes).
    __syncwarp();
#pragma unroll
    for (int i = 0; i < GE; ++i)
      scratch[(row * 4 + t) * 8 + R * i + Spread<GE>::part()] = uint16_t(pq[i][0] | (pq[i][1] << 8));
    __syncwarp();
    const uint4 w = *reinterpret_cast<const uint4*>(scratch + (row * 4 + t) * 8);
    ap[0][0] = w.x, ap[0][1] = w.y, ap[1][0] = w.z, ap[1][1] = w.w;
  }
}

// Alg. 2 l. 4–8 for one tile, from the spread scores: the SAS online softmax, s_P and the P codes (pq,
// spread; ap, gathered for P·V). Sets sp, psum and rescales O by α.
template <int D, int GE, class Exp>
__device__ __forceinline__ void softmax_tile(const int (&sint)[GE][2], int rows, float f_s, const Exp& exp_fn,
                                             Chain<D, GE>& ch, int (&pq)[GE][2], uint32_t (&ap)[2][2], float& sp,
                                             int& psum, uint16_t* scratch) {
  float s[GE][2];
  float mt = -INFINITY;
#pragma unroll
  for (int i = 0; i < GE; ++i)
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      s[i][e] = Spread<GE>::token(i, e) < rows ? __fmul_rn(exact_float(sint[i][e]), f_s) : -INFINITY;  // l. 3
      mt = fmaxf(mt, s[i][e]);
    }
  mt = row_max<GE>(mt);
  const float m_new = fmaxf(ch.m, mt);                               // l. 4
  const float alpha = isinf(ch.m) ? 0.0f : exp_fn(__fsub_rn(ch.m, m_new));
  float sum = 0.0f, pmax = 0.0f;
#pragma unroll
  for (int i = 0; i < GE; ++i)
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      s[i][e] = exp_fn(__fsub_rn(s[i][e], m_new));                    // l. 5: P̃ = SAS(S − m)
      sum = __fadd_rn(sum, s[i][e]);
      pmax = fmaxf(pmax, s[i][e]);
    }
  pmax = row_max<GE>(pmax);
  // l. 6 per lane: the lane's share of ℓ (α is the row's), summed over the row's lanes once, at the chain's
  // end (v10: one reduction per chain instead of one per tile; the order of ℓ's sum is all that moves).
  ch.l = __fadd_rn(__fmul_rn(alpha, ch.l), sum);
  ch.m = m_new;
  sp = turbo_quant::scale_for_span(pmax);                             // l. 7: s_P = max P̃ / 119
  turbo_quant::p_codes<2 * GE>(&s[0][0], sp, &pq[0][0]);              // Q(P̃) = ⌈P̃ / s_P⌋ (turbo_quant.cuh)
  psum = 0;
#pragma unroll
  for (int i = 0; i < GE; ++i) psum += pq[i][0] + pq[i][1];
  psum = row_sum<GE>(psum);
  gather_codes<GE>(pq, ap, scratch);  // tokens 32κ …; V's stored order matches (turbo_layout.h)
#pragma unroll
  for (int i = 0; i < Chain<D, GE>::NO; ++i) ch.o[i][0] = __fmul_rn(ch.o[i][0], alpha), ch.o[i][1] = __fmul_rn(ch.o[i][1], alpha);
}

// l. 8: O += s_P·s_V·(P^q·V̂), X the exact integer product per channel (spread layout).
template <int D, int GE>
__device__ __forceinline__ void accumulate(Chain<D, GE>& ch, const int (&x)[Chain<D, GE>::NO][2], float f_pv) {
#pragma unroll
  for (int i = 0; i < Chain<D, GE>::NO; ++i)
#pragma unroll
    for (int e = 0; e < 2; ++e) ch.o[i][e] = __fadd_rn(ch.o[i][e], __fmul_rn(exact_float(x[i][e]), f_pv));
}

// The scores of one tile for the tests (TurboDecodeArgs::scores), from the spread layout: row g' at
// dump[g'·row_stride], token τ (rows GE … 7 are not written).
template <int GE>
__device__ __forceinline__ void dump_scores(int32_t* dump, int64_t row_stride, const int (&s)[GE][2]) {
  if (dump == nullptr) return;
#pragma unroll
  for (int i = 0; i < GE; ++i)
#pragma unroll
    for (int e = 0; e < 2; ++e) dump[Spread<GE>::row() * row_stride + Spread<GE>::token(i, e)] = s[i][e];
}

// The fold's A words for four channels (q·s = 128·hi + lo; a flagged channel 0): core/variants/turbo_fold.h, which the
// CPU tests hold to that definition (v19: one PRMT a byte, one mask for the flags, hi and lo two products at a time).
__device__ __forceinline__ void fold_words(uint32_t qw, uint32_t sw, uint32_t flags, uint32_t& hw, uint32_t& lw) {
  const turbo_fold::FoldWords f = turbo_fold::fold_words(qw, sw, flags);
  hw = f.hi, lw = f.lo;
}

// flags[i] for a channel block i that the compiler does not know (a rolled loop's): selects, so the flags stay in
// registers (an array indexed at run time would go to local memory).
template <int KS>
__device__ __forceinline__ uint32_t flags_of_block(const uint32_t (&flags)[KS], int i) {
  uint32_t m = flags[0];
#pragma unroll
  for (int k = 1; k < KS; ++k) m = i == k ? flags[k] : m;
  return m;
}

// Whether any channel of the block's flags (flags_of_block's words) may saturate.
template <int KS>
__device__ __forceinline__ bool any_flag(const uint32_t (&flags)[KS]) {
  uint32_t m = 0;
#pragma unroll
  for (int k = 0; k < KS; ++k) m |= flags[k];
  return m != 0;
}

// One coded block (its stage in shared memory) of a BITS-wide pair.
template <int D, int GE, int BITS, class Exp>
__device__ void coded_tile(uint8_t* stage, const int8_t* q8, float s_q, int rows, bool may_saturate, float scale,
                           const Exp& exp_fn, Chain<D, GE>& ch, int32_t* dump, int64_t row_stride) {
  using S = Shape<D>;
  constexpr int KS = S::KS, NJ = S::NJ, L = (1 << BITS) - 1;
  constexpr int kCodeBytes = kTurboBlock * D * BITS / 8;
  constexpr uint32_t kMask = BITS == 4 ? 0x0F0F0F0Fu : 0x03030303u;
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const uint8_t* kc = stage;
  const uint8_t* vc = stage + kCodeBytes;
  const int8_t* sz = reinterpret_cast<const int8_t*>(stage + 2 * kCodeBytes);
  const uint32_t* flag_words =
      reinterpret_cast<const uint32_t*>(stage + 2 * kCodeBytes + layout::saturation_flags_at(D));
  const float2 bs = *reinterpret_cast<const float2*>(stage + 2 * kCodeBytes + kScaleBytes<D>);

  // Channels that may saturate (see the head comment), one bit per channel: the flags the cache writer derived
  // from s/z (turbo_layout.h, v16; before, two ballots per 32 channels here, ≈ 105 instructions a tile).
  // may_saturate is uniform across the warp: a 4-bit prefill block never saturates, whatever its flags say.
  uint32_t kflag[KS] = {}, vflag[KS] = {};
  if (may_saturate) {
#pragma unroll
    for (int i = 0; i < KS; ++i)
      kflag[i] = flag_words[layout::saturation_flag_word(D, 0, 32 * i)],
      vflag[i] = flag_words[layout::saturation_flag_word(D, 1, 32 * i)];
  }

  // A fragments of the fold: row g holds hi, row g + 8 lo of q·s (0 for saturating channels) of query row
  // g mod GE — the rows are replicated (v11), so every lane's accumulators hold its row's scores for all
  // eight n-tiles and the spread is a choice among registers (spread_local); rows ≥ G are never read.
  uint32_t a[KS][4];
  if constexpr (GE == 1) {
    // One query row (MHA): 32 channels per lane (0, t), the same in every row g. The products are spread
    // instead — lane L computes channels 4L … 4L + 3 (L < D/4) — and every lane (g, t) gathers word
    // 8ks + 4h + t (channels 32ks + 16h + 4t …) by shuffles.
    const uint32_t qw = *reinterpret_cast<const uint32_t*>(q8 + 4 * lane);  // row 0 (reads stay in the rows)
    const uint32_t sw = *reinterpret_cast<const uint32_t*>(sz + 4 * lane);
    uint32_t kf = kflag[0];
#pragma unroll
    for (int ks = 1; ks < KS; ++ks) kf = lane / 8 == ks ? kflag[ks] : kf;
    uint32_t hw, lw;
    fold_words(qw, sw, kf >> (4 * (lane % 8)), hw, lw);
#pragma unroll
    for (int ks = 0; ks < KS; ++ks)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const uint32_t hv = __shfl_sync(kFull, hw, 8 * ks + 4 * h + t), lv = __shfl_sync(kFull, lw, 8 * ks + 4 * h + t);
        a[ks][2 * h] = hv;
        a[ks][2 * h + 1] = lv;
      }
  } else if constexpr (GE == 4) {
    // Lanes g and g + 4 hold the same query row (g mod 4): each folds half the k-steps and takes the other half's
    // words from its partner (lane ^ 16) — the same words as the branch below, half the fold's instructions (v14).
    const bool upper = g >= 4;
    uint32_t mine[KS / 2][4];
#pragma unroll
    for (int kk = 0; kk < KS / 2; ++kk) {
      const int ks = upper ? KS / 2 + kk : kk;
      // kflag[ks] by a select: indexed by a lane's own k-step, kflag would go to local memory.
      const uint32_t kf = upper ? kflag[KS / 2 + kk] : kflag[kk];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int c0 = 32 * ks + 16 * h + 4 * t;
        const uint32_t qw = *reinterpret_cast<const uint32_t*>(q8 + (g % GE) * D + c0);
        const uint32_t sw = *reinterpret_cast<const uint32_t*>(sz + c0);
        fold_words(qw, sw, kf >> (16 * h + 4 * t), mine[kk][2 * h], mine[kk][2 * h + 1]);
      }
    }
#pragma unroll
    for (int kk = 0; kk < KS / 2; ++kk)
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        const uint32_t theirs = __shfl_xor_sync(kFull, mine[kk][r], 16);
        a[kk][r] = upper ? theirs : mine[kk][r];
        a[KS / 2 + kk][r] = upper ? mine[kk][r] : theirs;
      }
  } else {
#pragma unroll
    for (int ks = 0; ks < KS; ++ks)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int c0 = 32 * ks + 16 * h + 4 * t;
        const uint32_t qw = *reinterpret_cast<const uint32_t*>(q8 + (g % GE) * D + c0);  // replicated rows
        const uint32_t sw = *reinterpret_cast<const uint32_t*>(sz + c0);
        fold_words(qw, sw, kflag[ks] >> (16 * h + 4 * t), a[ks][2 * h], a[ks][2 * h + 1]);
      }
  }
  // Z = Σ (q·s)·z: z as every column of B (each lane g loads it: v11, no selects), so every lane's
  // accumulators hold Z of rows g and g + 8 (v10 put z in column 0 and shuffled it from lane (g, 0)).
  int zacc[4] = {0, 0, 0, 0};
#pragma unroll
  for (int ks = 0; ks < KS; ++ks) {
    const uint32_t b0 = *reinterpret_cast<const uint32_t*>(sz + D + 32 * ks + 4 * t);
    const uint32_t b1 = *reinterpret_cast<const uint32_t*>(sz + D + 32 * ks + 16 + 4 * t);
    const uint32_t af[4] = {a[ks][0], a[ks][1], a[ks][2], a[ks][3]};
    mma_s8(zacc, af, b0, b1);
  }
  const int z_hi = zacc[0], z_lo = zacc[2];

  // S_int for the lane's 16 tokens 8j + 2t + e. 2 bits (v21, turbo_layout.h's order): n-tile j's codes are field
  // f = j mod 4 of the words of n-tiles 4⌊j/4⌋ … + 3, masked in place — operands 4^f·k (unsigned bytes ≤ 192), so
  // the accumulator starts at 4^f·Z and ends at 4^f·S_int. |S_int| < 2²¹ (128 channels of |q·K̂| ≤ 119·127), so
  // 4^f·S_int fits in 32 bits; 128·hi + lo is formed modulo 2³² (hi alone may pass 2³¹/128) and is exact there.
  // The division by 4^f waits for the spread, where a lane holds 2·GE of the 16 scores (shift_spread).
  int sint[8][2];
  uint32_t w[BITS == 4 ? KS : 2 * KS];
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    if constexpr (BITS == 4) {
      int acc[4] = {z_hi, z_hi, z_lo, z_lo};
#pragma unroll
      for (int ks = 0; ks < KS; ++ks) w[ks] = reinterpret_cast<const uint32_t*>(kc)[(j * 32 + lane) * KS + ks];
#pragma unroll
      for (int ks = 0; ks < KS; ++ks) {
        const uint32_t af[4] = {a[ks][0], a[ks][1], a[ks][2], a[ks][3]};
        mma_s8(acc, af, w[ks] & kMask, (w[ks] >> 4) & kMask);
      }
      sint[j][0] = 128 * acc[0] + acc[2];
      sint[j][1] = 128 * acc[1] + acc[3];
    } else {
      const int f = j % 4;
      if (f == 0) {
#pragma unroll
        for (int p = 0; p < 2 * KS; p += 4) {
          const uint4 q = reinterpret_cast<const uint4*>(kc)[((j / 4) * 32 + lane) * (KS / 2) + p / 4];
          w[p] = q.x, w[p + 1] = q.y, w[p + 2] = q.z, w[p + 3] = q.w;
        }
      }
      const uint32_t m = kMask << (2 * f);
      int acc[4] = {z_hi << (2 * f), z_hi << (2 * f), z_lo << (2 * f), z_lo << (2 * f)};
#pragma unroll
      for (int ks = 0; ks < KS; ++ks) {
        const uint32_t af[4] = {a[ks][0], a[ks][1], a[ks][2], a[ks][3]};
        mma_s8u8(acc, af, w[2 * ks] & m, w[2 * ks + 1] & m);
      }
      sint[j][0] = int(128u * uint32_t(acc[0]) + uint32_t(acc[2]));
      sint[j][1] = int(128u * uint32_t(acc[1]) + uint32_t(acc[3]));
    }
  }
  int ss[GE][2];
  spread_local<GE, 8>(sint, ss);
  if constexpr (BITS == 2) shift_spread<GE>(ss);
  // Saturating K channels, token by token, in the spread layout (2·GE tokens per lane). At GE ≥ 4 (one kernel for
  // both widths) the loop over the channel blocks stays rolled: unrolled, its token loop's body came KS times per
  // width into the tile loop (v12: the instruction fetch bounds the 2-bit path at GQA; a block that does not
  // saturate never runs it). At GE ≤ 2 rolled costs spills (ptxas: 68 bytes at d 128, 2-bit), so it unrolls.
  constexpr int kSaturationUnroll = GE >= 4 ? 1 : KS;
  const int row = Spread<GE>::row();
  // Rolled, the loop is skipped as a whole where no K channel of the block may saturate (warp-uniform: the flags are
  // ballots), so such a block pays one test instead of the KS iterations (≈ 44 instructions a tile at GE = 4, v15).
  // Unrolled, each block's own test is already that cheap, and the skip's test cost the G = 1 kernels spills.
  if (kSaturationUnroll == KS || any_flag<KS>(kflag)) {
#pragma unroll kSaturationUnroll
    for (int i = 0; i < KS; ++i)
      for (uint32_t m = flags_of_block<KS>(kflag, i); m != 0; m &= m - 1) {
        const int c = 32 * i + __ffs(m) - 1;
        const int s = sz[c], z = sz[D + c], qv = q8[row * D + c];
#pragma unroll
        for (int i2 = 0; i2 < GE; ++i2)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const auto at = layout::k_code_at(Spread<GE>::token(i2, e), c, D, BITS);  // int arithmetic
            const int code = (kc[at.byte] >> at.shift) & L;
            ss[i2][e] += qv * sat127((code + z) * s);
          }
      }
  }
  dump_scores<GE>(dump, row_stride, ss);

  uint32_t ap[2][2];
  int pq[GE][2];
  float sp;
  int psum;
  // The K codes are spent (the saturating channels above were their last reader): the P codes' gather and
  // then P·V's spread use their place in the stage; the ring's next load into it follows StageRing::done().
  softmax_tile<D, GE>(ss, rows, __fmul_rn(__fmul_rn(s_q, bs.x), scale), exp_fn, ch, pq, ap, sp, psum,
                      reinterpret_cast<uint16_t*>(stage));

  // P·V: the P codes times the raw V codes; then, spread (a lane's channels 8jc + 2t + e of its row,
  // jc = R·i + ⌊g/GE⌋), s_c·(X + z_c·ΣP) per channel.
  int pv[NJ][2];
  constexpr int kTilesPerLoad = BITS == 4 ? 4 : 8;  // n-tiles one 16-byte load covers
#pragma unroll
  for (int grp = 0; grp < NJ / kTilesPerLoad; ++grp) {
    int acc[kTilesPerLoad][4];
#pragma unroll
    for (int q = 0; q < kTilesPerLoad; ++q) acc[q][0] = acc[q][1] = acc[q][2] = acc[q][3] = 0;
#pragma unroll
    for (int k = 0; k < 2; ++k) {
      const uint4 w4 = reinterpret_cast<const uint4*>(vc)[(k * (NJ / kTilesPerLoad) + grp) * 32 + lane];
      const uint32_t w[4] = {w4.x, w4.y, w4.z, w4.w};
      const uint32_t af[4] = {ap[k][0], 0u, ap[k][1], 0u};
#pragma unroll
      for (int q = 0; q < kTilesPerLoad; ++q) {
        if constexpr (BITS == 4) {
          mma_s8(acc[q], af, w[q] & kMask, (w[q] >> 4) & kMask);
        } else {  // v21: n-tile 8·grp + q in field q mod 4 of the words (q / 4, b0) and (q / 4, b1): 4^(q mod 4)·X
          const uint32_t m = kMask << (2 * (q % 4));
          mma_s8u8(acc[q], af, w[2 * (q / 4)] & m, w[2 * (q / 4) + 1] & m);
        }
      }
    }
#pragma unroll
    for (int q = 0; q < kTilesPerLoad; ++q) pv[grp * kTilesPerLoad + q][0] = acc[q][0], pv[grp * kTilesPerLoad + q][1] = acc[q][1];
  }
  constexpr int NO = Chain<D, GE>::NO;
  int x[NO][2];
  // P's A rows are replicated (gather_codes), so P·V's are too: at G ≥ 4 a choice among R = 2 registers
  // (spread_local), at G ≤ 2 through the spent K codes (spread_via: fewer instructions than R − 1 selects).
  static_assert(GE == 8 || GE * D * 4 <= kCodeBytes, "P·V's rows fit where the K codes were");
  static_assert(GE == 8 || GE * 64 <= kCodeBytes, "the P codes' gather fits where the K codes were");
  if constexpr (GE >= 4) spread_local<GE, NJ>(pv, x);
  else spread_via<GE, NJ>(reinterpret_cast<int*>(stage), pv, x);
  if constexpr (BITS == 2) shift_spread<GE>(x);  // 4^(jc mod 4)·X → X (v21)
#pragma unroll
  for (int i = 0; i < NO; ++i)
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const int c = Spread<GE>::token(i, e);  // the channel (same index rule as the tokens of a tile)
      x[i][e] = int(sz[2 * D + c]) * (x[i][e] + int(sz[3 * D + c]) * psum);
    }
  // Saturating V channels: the row's sum over its 64 tokens, from the spread P codes (rolled and skipped as K's).
  if (kSaturationUnroll == KS || any_flag<KS>(vflag)) {
#pragma unroll kSaturationUnroll
    for (int i = 0; i < KS; ++i)
      for (uint32_t m = flags_of_block<KS>(vflag, i); m != 0; m &= m - 1) {
        const int c = 32 * i + __ffs(m) - 1;
        const int s = sz[2 * D + c], z = sz[3 * D + c];
        int part = 0;
#pragma unroll
        for (int i2 = 0; i2 < GE; ++i2)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const auto at = layout::v_code_at(Spread<GE>::token(i2, e), c, D, BITS);
            const int code = (vc[at.byte] >> at.shift) & L;
            part += pq[i2][e] * sat127((code + z) * s);
          }
        part = row_sum<GE>(part);
#pragma unroll
        for (int i2 = 0; i2 < NO; ++i2)
#pragma unroll
          for (int e = 0; e < 2; ++e)
            if (c == Spread<GE>::token(i2, e)) x[i2][e] = part;
      }
  }
  accumulate<D, GE>(ch, x, __fmul_rn(sp, bs.y));
}

// The pending buffer's tile: INT8 K and V (the universal scales), an ordinary INT8 product.
template <int D, int GE, class Exp>
__device__ void buffer_tile(const int8_t* kb, const int8_t* vb, const int8_t* q8, float s_q, float2 universal,
                            int rows, float scale, const Exp& exp_fn, Chain<D, GE>& ch, int32_t* dump,
                            int64_t row_stride, uint16_t* scratch) {
  using S = Shape<D>;
  constexpr int KS = S::KS, NJ = S::NJ;
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  uint32_t aq[KS][4];
#pragma unroll
  for (int ks = 0; ks < KS; ++ks) {
    aq[ks][0] = *reinterpret_cast<const uint32_t*>(q8 + (g % GE) * D + 32 * ks + 4 * t);  // replicated rows
    aq[ks][2] = *reinterpret_cast<const uint32_t*>(q8 + (g % GE) * D + 32 * ks + 16 + 4 * t);
    aq[ks][1] = aq[ks][3] = 0u;
  }
  int sint[8][2];
  const uint32_t* kw = reinterpret_cast<const uint32_t*>(kb);
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    int acc[4] = {0, 0, 0, 0};
#pragma unroll
    for (int ks = 0; ks < KS; ++ks) {
      const int64_t w = ((int64_t(j) * 32 + lane) * KS + ks) * 2;
      mma_s8(acc, aq[ks], __ldg(kw + w), __ldg(kw + w + 1));
    }
    sint[j][0] = acc[0], sint[j][1] = acc[1];
  }
  int ss[GE][2];
  spread_local<GE, 8>(sint, ss);
  dump_scores<GE>(dump, row_stride, ss);
  uint32_t ap[2][2];
  int pq[GE][2];
  float sp;
  int psum;
  softmax_tile<D, GE>(ss, rows, __fmul_rn(__fmul_rn(s_q, universal.x), scale), exp_fn, ch, pq, ap, sp, psum, scratch);
  int pv[NJ][2];
  const uint32_t* vw = reinterpret_cast<const uint32_t*>(vb);
#pragma unroll
  for (int jc = 0; jc < NJ; ++jc) {
    int acc[4] = {0, 0, 0, 0};
#pragma unroll
    for (int k = 0; k < 2; ++k) {
      const int64_t w = ((int64_t(k) * NJ + jc) * 32 + lane) * 2;
      const uint32_t af[4] = {ap[k][0], 0u, ap[k][1], 0u};
      mma_s8(acc, af, __ldg(vw + w), __ldg(vw + w + 1));
    }
    pv[jc][0] = acc[0], pv[jc][1] = acc[1];
  }
  int x[Chain<D, GE>::NO][2];
  spread_local<GE, NJ>(pv, x);
  accumulate<D, GE>(ch, x, __fmul_rn(sp, universal.y));
}

// The ring a warp streams its chain's coded blocks through: kStages stages, block j in stage (j − first) mod kStages,
// each holding the block's K and V codes, its scale array and its two block scales. v20: on sm_90 the copy engine
// fills a stage — lane 0 announces the bytes on the stage's mbarrier, issues two bulk copies (the codes, the scale
// array) and a cp.async of the 8 bytes of block scales (a bulk copy moves multiples of 16), whose landing is the
// barrier's second arrival — and every lane waits on the barrier's phase (the n-th fill of a stage completes phase
// n, parity n mod 2). Before v20, and on other GPUs, every lane copies its share by 16-byte cp.async: at d 128, 2 bits,
// GQA 4:1 that was 135 of a tile's 1 464 instructions (kernels/PERF.md, v18's phases). Measured (v21's phases, an
// H200): 86 — the warp issues lane 0's branch whole — and the wait on the barrier took what the 49 saved.
template <int D, int BITS>
struct StageRing {
  static constexpr int kCodeBytes = kTurboBlock * D * BITS / 8, kStage = kStageBytes<D, BITS>;
  uint8_t* ring;
  uint64_t* full;  // a barrier per stage (sm_90)
  const TurboCacheArgs& c;
  int pair, first, end;  // the chain's coded blocks [first, end)

  __device__ uint8_t* stage(int j) const { return ring + ((j - first) % kStages) * kStage; }

  // Block j into its stage.
  __device__ void load(int j) const {
    uint8_t* s = stage(j);
    const uint8_t* codes = c.codes + c.code_offset[pair] + int64_t(j) * 2 * kCodeBytes;
    const int8_t* sz = c.scale_zero + (int64_t(pair) * c.slots + j) * kScaleBytes<D>;
    const float* bs = c.block_scales + (int64_t(pair) * c.slots + j) * 2;
#if __CUDA_ARCH__ >= 900
    if (threadIdx.x % 32 == 0) {
      uint64_t* bar = &full[(j - first) % kStages];
      mbar_arrive_expect_tx(bar, uint32_t(2 * kCodeBytes + kScaleBytes<D>));
      bulk_load(s, codes, 2 * kCodeBytes, bar);
      bulk_load(s + 2 * kCodeBytes, sz, kScaleBytes<D>, bar);
      cp_async_8(s + 2 * kCodeBytes + kScaleBytes<D>, bs);
      cp_async_arrive_noinc(bar);
    }
#else
    const int lane = threadIdx.x % 32;
#pragma unroll
    for (int i = lane; i < 2 * kCodeBytes / 16; i += 32) cp_async_16(s + 16 * i, codes + 16 * i, true);
#pragma unroll
    for (int i = lane; i < kScaleBytes<D> / 16; i += 32) cp_async_16(s + 2 * kCodeBytes + 16 * i, sz + 16 * i, true);
    if (lane == 0) cp_async_8(s + 2 * kCodeBytes + kScaleBytes<D>, bs);
#endif
  }

  // Before the chain's first block: blocks first … first + kStages − 2 on their way.
  __device__ void start() const {
#if __CUDA_ARCH__ >= 900
    if (threadIdx.x % 32 == 0) {
      for (int s = 0; s < kStages; ++s) mbar_init(&full[s], 2);  // lane 0's expect_tx and its cp.async's arrival
      fence_proxy_async();  // the initialized barriers before the copy engine completes bytes on them
    }
    __syncwarp();
#pragma unroll
    for (int s = 0; s < kStages - 1; ++s)
      if (first + s < end) load(first + s);
#else
#pragma unroll
    for (int s = 0; s < kStages - 1; ++s) {
      if (first + s < end) load(first + s);
      cp_async_commit();
    }
#endif
  }

  // Block j is in its stage, seen by every lane; block j + kStages − 1 goes into the stage block j − 1 left (done()).
  __device__ void next(int j) const {
    const int ahead = j + kStages - 1;
#if __CUDA_ARCH__ >= 900
    mbar_wait(&full[(j - first) % kStages], ((j - first) / kStages) & 1);
    if (ahead < end) load(ahead);
#else
    cp_async_wait<kStages - 2>();
    __syncwarp();
    if (ahead < end) load(ahead);
    cp_async_commit();
#endif
  }

  // Every lane is done with block j's stage — its reads, and the tile's scratch writes into it (the P codes' gather,
  // P·V's spread) — before the stage is filled again.
  __device__ void done() const {
#if __CUDA_ARCH__ >= 900
    fence_proxy_async();  // generic writes ordered before the copy engine's into the same bytes
#endif
    __syncwarp();
  }

  // Nothing in flight any more (on sm_90 every fill was waited for in next()).
  __device__ void drain() const {
#if __CUDA_ARCH__ < 900
    cp_async_wait<0>();
#endif
  }
};

template <int D, int GE, int BITS, class Exp>
__device__ void run_chain(const TurboDecodeArgs& a, int pair, int chain, uint8_t* ring, uint64_t* full,
                          const int8_t* q8, float s_q, const Exp& exp_fn) {
  const Tiles tiles(a.cache);
  const int first = chain * tiles.total / a.chains, last = (chain + 1) * tiles.total / a.chains;
  const int coded_end = min(last, tiles.coded);
  const int64_t row_stride = int64_t(tiles.total) * kTurboBlock;
  auto dump_at = [&](const TurboDecodeArgs& args, int p, int j) {
    return args.scores ? args.scores + int64_t(p) * kRows * row_stride + int64_t(j) * kTurboBlock : nullptr;
  };
  Chain<D, GE> ch;
#pragma unroll
  for (int i = 0; i < Chain<D, GE>::NO; ++i) ch.o[i][0] = ch.o[i][1] = 0.0f;
  const StageRing<D, BITS> loads{ring, full, a.cache, pair, first, coded_end};
  loads.start();
  for (int j = first; j < coded_end; ++j) {
    loads.next(j);
    const bool may_saturate = !(BITS == 4 && j < tiles.prefill_blocks);  // progressive.h: 4-bit prefill never
    coded_tile<D, GE, BITS>(loads.stage(j), q8, s_q, tiles.rows(j), may_saturate, a.scale, exp_fn, ch,
                            dump_at(a, pair, j), row_stride);
    loads.done();
  }
  loads.drain();
  if (last > tiles.coded) {  // the chain ends with the pending buffer
    const int64_t off = int64_t(pair) * kTurboBlock * D;
    const float2 universal = *reinterpret_cast<const float2*>(a.cache.universal + 2 * pair);
    // The ring is idle (every stage waited for and read): its first bytes are the P codes' gather scratch.
    buffer_tile<D, GE>(a.cache.k_buffer + off, a.cache.v_buffer + off, q8, s_q, universal, tiles.pending, a.scale,
                       exp_fn, ch, dump_at(a, pair, tiles.coded), row_stride, reinterpret_cast<uint16_t*>(ring));
  }
  // The chain's (m, ℓ, O) for the merge, from the spread layout: every lane holds channels of row g'.
  const float l = row_sum<GE>(ch.l);  // ℓ: the lanes' shares of the row (softmax_tile, l. 6)
  const int t = threadIdx.x % 4, row = Spread<GE>::row();
  const int group = a.q_heads / a.kv_heads;
  if (row < group) {
    const int64_t part = (int64_t(pair) * a.chains + chain) * kRows + row;
    float* ml = a.workspace;
    float* po = a.workspace + int64_t(a.batch) * a.kv_heads * a.chains * kRows * 2;
    if (t == 0 && Spread<GE>::part() == 0) ml[2 * part] = ch.m, ml[2 * part + 1] = l;
#pragma unroll
    for (int i = 0; i < Chain<D, GE>::NO; ++i)
      *reinterpret_cast<float2*>(po + part * D + Spread<GE>::token(i, 0)) = make_float2(ch.o[i][0], ch.o[i][1]);
  }
}

// The chains' exponential. Its arguments are t = fl(S − m) with m the row's running maximum after this tile's scores
// (so t ≤ 0 exactly, +0 where S = m), α's fl(m_old − m_new) ≤ 0, and −∞ (tokens past the tile's rows): the domain of
// turbo_sas.cuh's SasNonPositive, which equals Exp<false> there bit for bit in about half its instructions (v18; the
// prefill took it in its v2), its LUT's entry 31 the 0 of Eq. 14. EXACT: 2^(t·log₂e) on the SFU, as before.
template <bool EXACT>
__device__ __forceinline__ auto chain_exp(const TurboExpArgs& e, const float* lut) {
  if constexpr (EXACT) return make_exp<true>(e, lut);
  else return make_sas_non_positive(e, lut);
}

// The chains of the pairs pair_order[begin … begin + count): BITS wide, or with BITS = 0 each pair at its
// own width (the first wide_pairs of pair_order are 4-bit) — launch_chains says when which.
template <int D, int GE, int BITS, bool EXACT>
__global__ void __launch_bounds__(kWarps * 32, (kCtasPerSm<D, GE, BITS>)) turbo_chains_kernel(const TurboDecodeArgs a,
                                                                                           int begin, int count) {
  extern __shared__ __align__(16) uint8_t smem[];
  float* lut = reinterpret_cast<float*>(smem);
  for (int i = threadIdx.x; i < kSasLutEntries; i += blockDim.x)  // entry 31: 0 (turbo_sas.cuh's zero slot)
    lut[i] = i < 31 ? a.exp.lut[i] : 0.0f;
  __syncthreads();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int id = blockIdx.x * kWarps + warp, chain = id % a.chains;
  if (id / a.chains >= count) return;
  const int pair = a.cache.pair_order[begin + id / a.chains];
  uint8_t* mine = smem + 32 * 4 + warp * kWarpBytes<D, GE, BITS>;
  int8_t* q8 = reinterpret_cast<int8_t*>(mine + kStages * kStageBytes<D, BITS>);
  float* s_q_rows = reinterpret_cast<float*>(q8 + kQRows<D, GE> * D);
  uint64_t* full = reinterpret_cast<uint64_t*>(s_q_rows + 8);
  static_assert(kWarpBytes<D, GE, BITS> % 16 == 0 && kStageBytes<D, BITS> % 16 == 0,
                "each warp's ring and stage 16-byte aligned: the bulk copies' destinations");

  // Alg. 2 l. 1: the group's queries to INT8, s_Q = max|q| / 119 per head (quant::quantize, one row).
  const int group = a.q_heads / a.kv_heads, b = pair / a.kv_heads, hk = pair % a.kv_heads;
  for (int g = 0; g < kQRows<D, GE>; ++g) {
    float q[D / 32], span = 0.0f;
    const float* src = a.q + (int64_t(b) * a.q_heads + hk * group + g) * D;
#pragma unroll
    for (int i = 0; i < D / 32; ++i) {
      q[i] = g < group ? src[32 * i + lane] : 0.0f;
      span = fmaxf(span, fabsf(q[i]));
    }
#pragma unroll
    for (int o = 16; o > 0; o /= 2) span = fmaxf(span, __shfl_xor_sync(kFull, span, o));
    const float s = turbo_quant::scale_for_span(span);
#pragma unroll
    for (int i = 0; i < D / 32; ++i)
      q8[g * D + 32 * i + lane] = int8_t(min(max(__float2int_rn(__fdiv_rn(q[i], s)), -119), 119));
    if (lane == 0) s_q_rows[g] = s;
  }
  __syncwarp();
  const float s_q = s_q_rows[Spread<GE>::row()];  // the scores' row (the spread layout)
  const auto exp_fn = chain_exp<EXACT>(a.exp, lut);
  if constexpr (BITS == 0) {
    if (begin + id / a.chains < a.cache.wide_pairs) run_chain<D, GE, 4>(a, pair, chain, mine, full, q8, s_q, exp_fn);
    else run_chain<D, GE, 2>(a, pair, chain, mine, full, q8, s_q, exp_fn);
  } else {
    run_chain<D, GE, BITS>(a, pair, chain, mine, full, q8, s_q, exp_fn);
  }
}

// turbo_chains.h's merge, one thread per channel of one query head; then O = G / ℓ in FP16, L = m + log ℓ.
template <int D>
__global__ void __launch_bounds__(D) turbo_merge_kernel(const TurboDecodeArgs a) {
  __shared__ float lut[32];
  for (int i = threadIdx.x; i < 31; i += blockDim.x) lut[i] = a.exp.lut[i];
  __syncthreads();
  const Exp<false> sas = make_exp<false>(a.exp, lut);
  const Exp<true> sas_exact = make_exp<true>(a.exp, lut);
  const int row = blockIdx.x;  // b·Hq + hq
  const auto exp_fn = [&](float t) { return a.exp.exact_exp ? sas_exact(t) : sas(t); };
  const int group = a.q_heads / a.kv_heads, b = row / a.q_heads, hq = row % a.q_heads;
  const int pair = b * a.kv_heads + hq / group, g = hq % group, c = threadIdx.x;
  const float* ml = a.workspace;
  const float* po = a.workspace + int64_t(a.batch) * a.kv_heads * a.chains * kRows * 2;
  float M = -INFINITY, L = 0.0f, G = 0.0f;
  for (int k = 0; k < a.chains; ++k) {
    const int64_t part = (int64_t(pair) * a.chains + k) * kRows + g;
    const float mc = ml[2 * part], lc = ml[2 * part + 1], gc = po[part * D + c];
    if (isinf(mc)) continue;
    if (isinf(M)) {
      M = mc, L = lc, G = gc;
      continue;
    }
    const float m_new = fmaxf(M, mc);
    const float alpha = exp_fn(__fsub_rn(M, m_new)), beta = exp_fn(__fsub_rn(mc, m_new));
    L = __fadd_rn(__fmul_rn(alpha, L), __fmul_rn(beta, lc));
    G = __fadd_rn(__fmul_rn(alpha, G), __fmul_rn(beta, gc));
    M = m_new;
  }
  a.o[int64_t(row) * D + c] = __float2half_rn(L > 0.0f ? __fdiv_rn(G, L) : 0.0f);
  if (c == 0) a.lse[row] = L > 0.0f ? __fadd_rn(M, logf(L)) : -INFINITY;
}

// §3.3: append one token per pair; a full buffer becomes the next cache block (Eq. 10 in integers).
template <int D>
__global__ void __launch_bounds__(D) turbo_append_kernel(const TurboCacheArgs c, const float* k, const float* v,
                                                         bool up) {
  __shared__ uint32_t words[2 * kTurboBlock * D * 4 / 8 / 4];  // K | V codes of one block at ≤ 4 bits
  const int pair = blockIdx.x, ch = threadIdx.x;
  const Tiles tiles(c);
  const int pos = tiles.pending;  // where this token goes
  int8_t* kb = c.k_buffer + int64_t(pair) * kTurboBlock * D;
  int8_t* vb = c.v_buffer + int64_t(pair) * kTurboBlock * D;
  const float su_k = c.universal[2 * pair], su_v = c.universal[2 * pair + 1];
  // quant::DecodeBuffer::append: ⌈x / s⌋ with the universal scale, clamped to ±127.
  const float qk = rintf(__fdiv_rn(k[int64_t(pair) * D + ch], su_k));
  const float qv = rintf(__fdiv_rn(v[int64_t(pair) * D + ch], su_v));
  kb[layout::k8_at(pos, ch, D)] = int8_t(fminf(fmaxf(qk, -127.0f), 127.0f));
  vb[layout::v8_at(pos, ch, D)] = int8_t(fminf(fmaxf(qv, -127.0f), 127.0f));
  if (pos + 1 < kTurboBlock) return;  // uniform across the block

  // Flush into slot `coded` (quant::progressive_compress on the buffer, the universal scale as scale8).
  const int bits = c.bits[pair], slot = tiles.coded;
  const int code_bytes = kTurboBlock * D * bits / 8;
  for (int i = ch; i < 2 * code_bytes / 4; i += D) words[i] = 0u;
  __syncthreads();
  int8_t* sz = c.scale_zero + (int64_t(pair) * c.slots + slot) * layout::scale_zero_bytes(D);
  for (int which = 0; which < 2; ++which) {
    const int8_t* buf = which == 0 ? kb : vb;
    int8_t q[kTurboBlock];
    for (int tau = 0; tau < kTurboBlock; ++tau) q[tau] = buf[which == 0 ? layout::k8_at(tau, ch, D) : layout::v8_at(tau, ch, D)];
    int s, z;
    turbo_compress::compress_channel(q, kTurboBlock, ch, D, bits, up, which == 1, code_bytes, words, s, z);
    sz[2 * D * which + ch] = int8_t(s);
    sz[2 * D * which + D + ch] = int8_t(z);
    turbo_compress::write_flag_word(sz, D, which, ch, layout::may_saturate(s, z, bits));
  }
  __syncthreads();
  uint32_t* dst = reinterpret_cast<uint32_t*>(c.codes + c.code_offset[pair] + int64_t(slot) * 2 * code_bytes);
  for (int i = ch; i < 2 * code_bytes / 4; i += D) dst[i] = words[i];
  if (ch == 0) c.block_scales[(int64_t(pair) * c.slots + slot) * 2] = su_k, c.block_scales[(int64_t(pair) * c.slots + slot) * 2 + 1] = su_v;
  uint32_t* kz = reinterpret_cast<uint32_t*>(kb);
  uint32_t* vz = reinterpret_cast<uint32_t*>(vb);
  for (int i = ch; i < kTurboBlock * D / 4; i += D) kz[i] = 0u, vz[i] = 0u;  // the buffer starts empty again
}

template <int D, int GE, int BITS, bool EXACT>
cudaError_t launch_width(const TurboDecodeArgs& a, int begin, int count, cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  constexpr int smem = kSmemRequest<D, GE, BITS>;
  const auto kernel = turbo_chains_kernel<D, GE, BITS, EXACT>;
  cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  if (e != cudaSuccess) return e;
  const int warps = count * a.chains;
  kernel<<<(warps + kWarps - 1) / kWarps, kWarps * 32, smem, stream>>>(a, begin, count);
  return cudaGetLastError();
}

// Where the 2-bit kernel runs four CTAs per SM and the 4-bit one fewer (d 128, G ≤ 2): the 4-bit pairs (the
// first wide_pairs of pair_order), then the 2-bit ones, one launch per width, one after the other (v9: the
// 2-bit launch on a second stream beside the 4-bit one measured 4% slower at the mix). Where it runs three (d 128,
// GE 4): its own launch for a cache of 2-bit pairs only (v17); a mixed cache one launch over both widths, as
// elsewhere — each warp at its pair's: two launches would gain little occupancy and leave two tails (v9's GQA 4:1
// mix, 0.342 → 0.367 ms; v17's A/B, three CTAs for the 2-bit launch, 0.2426 → 0.2468).
template <int D, int GE>
constexpr bool kSplitWidths = kCtasPerSm<D, GE, 2> == 4 && kCtasPerSm<D, GE, 4> < 4;
template <int D, int GE>
constexpr bool kNarrowAlone = !kSplitWidths<D, GE> && kCtasPerSm<D, GE, 2> > kCtasPerSm<D, GE, 0>;

template <int D, int GE, bool EXACT>
cudaError_t launch_chains(const TurboDecodeArgs& a, cudaStream_t stream) {
  const int pairs = a.batch * a.kv_heads, wide = a.cache.wide_pairs;
  if constexpr (kSplitWidths<D, GE>) {
    const cudaError_t e = launch_width<D, GE, 4, EXACT>(a, 0, wide, stream);
    return e != cudaSuccess ? e : launch_width<D, GE, 2, EXACT>(a, wide, pairs - wide, stream);
  } else if constexpr (kNarrowAlone<D, GE>) {
    return wide == 0 ? launch_width<D, GE, 2, EXACT>(a, 0, pairs, stream)
                     : launch_width<D, GE, 0, EXACT>(a, 0, pairs, stream);
  } else {
    return launch_width<D, GE, 0, EXACT>(a, 0, pairs, stream);
  }
}

// f(std::integral_constant<int, GE>) with the spread's GE: the group rounded up to a power of two (≤ 8).
template <class F>
auto with_ge(int group, F&& f) {
  if (group == 1) return f(std::integral_constant<int, 1>{});
  if (group == 2) return f(std::integral_constant<int, 2>{});
  if (group <= 4) return f(std::integral_constant<int, 4>{});
  return f(std::integral_constant<int, 8>{});
}

template <int D, bool EXACT>
cudaError_t launch_for_group(const TurboDecodeArgs& a, cudaStream_t stream) {
  return with_ge(a.q_heads / a.kv_heads, [&](auto ge) { return launch_chains<D, decltype(ge)::value, EXACT>(a, stream); });
}

template <int D>
cudaError_t launch(const TurboDecodeArgs& a, cudaStream_t stream) {
  const cudaError_t e = a.exp.exact_exp ? launch_for_group<D, true>(a, stream) : launch_for_group<D, false>(a, stream);
  if (e != cudaSuccess) return e;
  turbo_merge_kernel<D><<<a.batch * a.q_heads, D, 0, stream>>>(a);
  return cudaGetLastError();
}

}  // namespace

bool turbo_decode_supports(int head_dim, int group) { return (head_dim == 64 || head_dim == 128) && group >= 1 && group <= kRows; }

namespace {

// launch_chains' requests: one launch per width where the 2-bit kernel runs four CTAs, the 2-bit kernel alone where
// it runs three and every pair is 2-bit, else one launch sized for 4 bits.
template <int D, int GE>
int smem_of_launches(bool wide, bool narrow) {
  if constexpr (kSplitWidths<D, GE>)
    return std::max(wide ? kSmemRequest<D, GE, 4> : 0, narrow ? kSmemRequest<D, GE, 2> : 0);
  else if constexpr (kNarrowAlone<D, GE>)
    return !wide ? kSmemRequest<D, GE, 2> : kSmemRequest<D, GE, 0>;
  else
    return kSmemRequest<D, GE, 0>;
}

template <int D>
int smem_for_group(int group, bool wide, bool narrow) {
  return with_ge(group, [&](auto ge) { return smem_of_launches<D, decltype(ge)::value>(wide, narrow); });
}

}  // namespace

int turbo_decode_smem_bytes(int head_dim, int group, bool wide, bool narrow) {
  if (!turbo_decode_supports(head_dim, group)) return 0;
  return head_dim == 64 ? smem_for_group<64>(group, wide, narrow) : smem_for_group<128>(group, wide, narrow);
}

size_t turbo_decode_workspace_bytes(const TurboDecodeArgs& a) {
  const size_t parts = size_t(a.batch) * a.kv_heads * a.chains * kRows;
  return parts * (2 + size_t(a.cache.head_dim)) * sizeof(float);
}

int turbo_decode_tiles(const TurboCacheArgs& c) { return Tiles(c).total; }

cudaError_t turbo_decode_attend(const TurboDecodeArgs& a, cudaStream_t stream) {
  if (!turbo_decode_supports(a.cache.head_dim, a.q_heads / a.kv_heads) || a.chains < 1 ||
      a.chains > Tiles(a.cache).total || a.cache.pair_order == nullptr || a.cache.wide_pairs < 0 ||
      a.cache.wide_pairs > a.batch * a.kv_heads)
    return cudaErrorInvalidValue;
  return a.cache.head_dim == 64 ? launch<64>(a, stream) : launch<128>(a, stream);
}

cudaError_t turbo_decode_append(const TurboCacheArgs& c, const float* k, const float* v, bool int_scale_up,
                                cudaStream_t stream) {
  if (c.head_dim == 64) turbo_append_kernel<64><<<c.pairs, 64, 0, stream>>>(c, k, v, int_scale_up);
  else if (c.head_dim == 128) turbo_append_kernel<128><<<c.pairs, 128, 0, stream>>>(c, k, v, int_scale_up);
  else return cudaErrorInvalidValue;
  return cudaGetLastError();
}

}  // namespace attnlab::kernels
