// attnlab kernels: KIVI decode attention (TurboAttention §5.3 and §2.4, the KIVI baseline: the cache
// "compresses the key cache per-channel and the value cache per-token using fine-grained grouping", keeps
// the most recent tokens in full precision, and is dequantized to FP16 for FlashAttention). One query
// token per head; the cache in core/variants/kivi_layout.h's layout.
//
// Work split. One warp runs one chain: a contiguous run of one (batch, KV head)'s 64-token tiles
// (quantized slots first, then the FP16 residual's), for all G ≤ 8 query heads of that KV head at once.
// The heads are the MMA's N = 8 columns — Sᵀ = K̂·Qᵀ and Oᵀ = V̂ᵀ·P̃ᵀ with mma.m16n8k16, K̂ and V̂ᵀ the A
// operand — so every loaded tile serves the whole group, and a token block fills the M = 16 rows.
// Four independent warps per CTA, each streaming its quantized tiles (codes, FP16 scales and zeros)
// through its own two-stage cp.async ring; residual tiles are read straight into A fragments with
// 16-byte loads (the layout stores them in fragment order). No CTA-wide barrier. With C > 1 chains per
// pair a second kernel merges their normalized outputs as flash2's decode merge does:
// O = Σ_c e^{L_c − L}·O_c, L = log Σ_c e^{L_c}. C comes from balanced_warp_chains over the CTAs the GPU holds
// (kivi_decode_chains; v5 — decode_splits over its warps before).
//
// Dequantization, exactly as core/quant/kivi.cpp: x̂ = fp16(fl(fl(q·s) + z)) with the group's FP16 s and z.
// q·s is exact in FP32 (q < 2⁴, s has 11 significant bits), so the reference rounds twice: q·s + z to FP32,
// then to FP16. Where q·s + z is itself a float — for every code of every group of a slot, which the host
// records in the slot's flag (core/variants/kivi_image.h fp32_exact; all but ≈ 0.2% of llm_like's slots) — the first
// rounding is none and x̂ is q·s + z rounded once to FP16: one fma.rn.f16x2 per pair of codes on the staged
// FP16 s, z, after one AND-OR and one HFMA2 that turn the two codes into FP16 integers (code_pair). Elsewhere
// (a zero point and a step some 2¹³ or more apart in magnitude, e.g. a group whose minimum is a tiny subnormal, or a
// channel far from zero that barely moves over a group's tokens; the two roundings then differ for 0.5% of such codes)
// the slot takes the FP32 path: codes to FP32, fmaf with s, z widened to FP32, RNE to FP16. On llm_like data ≈ 0.2%
// of slots take it (34 of 16 320 at B 1, H 32, N 32k, d 128, in 21 of the 32 pairs): rare, but in almost every launch,
// so it is a function called out of line (v4: fp32_path_scores, fp32_path_pv) and the loop's registers are the FP16
// path's. Both give the reference's K̂ and V̂ bit for bit (tests/core/variants/test_kivi_layout.cpp on the host, the
// [gpu] probe test in tests/kernels/kivi/test_kivi_decode_kernel.cpp on the device).
//
// Attention, as flash2's kernel computes it on (Q, K̂, V̂): S in FP32 from FP16 products, the online
// softmax in FP32 with 2^x on the SFU (P̃ = ex2(S·scale·log₂e − m)), ℓ summing the FP32 P̃, P̃ rounded to
// FP16 for P̃V̂ (the accumulator moved into B-fragment order by movmatrix), O accumulated in FP32, O/ℓ
// stored in FP16, L = m + log ℓ. The `kivi` reference is flash2's reference on the same (Q, K̂, V̂), so the
// two differ exactly as the flash2 kernel and its reference do: FP32 summation order, ex2.approx against
// exp, and P̃'s FP16 rounding taken against a different running max (other tiles, other chains) — each P̃
// within 2⁻¹¹ of the same real number, so O within ~2⁻¹⁰·max|V̂| before its FP16 store
// (tests/kernels/kivi/test_kivi_decode_kernel.cpp derives the bound).
//
// Versions (kernels/PERF.md, "kivi decode"): v1, measured on the H100 since 2026-11-24 — every code through
// FP32 (a PRMT under 2²³'s exponent, FADD, FFMA, the FP16 pack: ≈ 3.75 instructions a value); v2 — the
// FP16 path above where the slot's flag allows (≈ 1.6 a value), the codes in the layout's new order (two codes
// of a register at one offset of the word's two 16-bit halves); v3 — one LOP3 a register (code_pair); v4 (this) —
// the FP32 path called out of line, its s, z widened in registers: d 128 at 2 bits takes 166 registers, three CTAs
// per SM against v3's two (kMinBlocks). Its merge is kernels/common/chain_merge.cuh, shared with fireq.
#include "kernels/kivi/kivi_decode.h"

#include "core/kernel_traits.h"
#include "core/variants/kivi_layout.h"
#include "kernels/common/chain_merge.cuh"
#include "kernels/common/decode_chain.cuh"
#include "kernels/common/mma.cuh"

#include <cuda_fp16.h>

#include <cstdint>

namespace attnlab::kernels {

namespace {

namespace layout = attnlab::kivi_layout;

// Warps per CTA (one chain each) and quantized tiles per warp (one computed while the next loads): the
// traits row the cost model reads (core/kernel_traits.h), the same at d 64 and 128.
constexpr KernelTraits kTraits = *find_kernel_traits("kivi", 128, 80, true);
constexpr int kWarps = kTraits.warps, kStages = kTraits.stages;
static_assert(kTraits.warp_chains && find_kernel_traits("kivi", 64, 80, true)->warps == kWarps &&
              find_kernel_traits("kivi", 64, 80, true)->stages == kStages);
constexpr int kT = 64;                // tokens per tile
constexpr int kMT = kT / 16;          // 16-token m-tiles (Q·Kᵀ) or k-steps (P·V) per tile
constexpr int kRows = 8;              // query heads per KV head the MMA's N columns hold
constexpr int kMaxChains = kTraits.decode_splits_max;  // the cost model caps balanced_warp_chains by the same row
static_assert(find_kernel_traits("kivi", 64, 80, true)->decode_splits_max == kMaxChains &&
              find_kernel_traits("kivi", 64, 80, true)->balanced_chains == kTraits.balanced_chains,
              "one chain rule for both head dims: kivi_decode_chains does not look at d");
using decode_chain::Chain;
static_assert(layout::kTile == kT, "the kernel's tile is the layout's slot");

// One warp's shared memory, from the cache's shape (the host sizes the launch with the same struct):
// kStages stages of [K codes | V codes | K s,z (FP16) | V s,z (FP16)]. (v3 kept a copy of the tile's s, z widened to
// FP32 for the FP32 path after them; v4's widens them in registers.)
struct WarpSmem {
  int code_bytes, k_param_halves, v_param_halves, stage_bytes, warp_bytes;
  __host__ __device__ WarpSmem(int d, int bits, int group)
      : code_bytes(int(layout::code_bytes(d, bits))),
        k_param_halves(int(layout::k_param_halves(layout::slot_k_groups(group), d))),
        v_param_halves(int(layout::v_param_halves(d, group))),
        stage_bytes(2 * code_bytes + 2 * (k_param_halves + v_param_halves)),
        warp_bytes(kStages * stage_bytes) {}  // every part a multiple of 16 bytes (d ≥ 64)
};

// A pair's tiles: quantized slots [0, quantized), residual slots [quantized, total).
struct Tiles {
  int quantized, residual, total;
  __host__ __device__ explicit Tiles(const KiviCacheArgs& c)
      : quantized(int(layout::slots_for(c.quantized_tokens))),
        residual(int(layout::slots_for(c.residual_tokens))),
        total(quantized + residual) {}
};

// The two codes of A-fragment register r as the half2 (c₀, c₁), exactly. The layout (kivi_layout.h code_bit)
// puts them at the same offset k of the word's two 16-bit halves, in its low byte or, after a shift by 8, in
// its next: one AND-OR (LOP3) leaves the halves 0x6400 | c·2ᵏ = 1024 + c·2ᵏ (k + bits ≤ 8 stays within
// FP16's 10 mantissa bits), and (1024 + c·2ᵏ)·2⁻ᵏ − 1024·2⁻ᵏ = c is exact in one HFMA2. 4-bit: register r at
// k = 4r (r ≥ 2 from the shifted word); 2-bit: outer parity h, register r at k = 8h + 2r.
template <int BITS>
__device__ __forceinline__ __half2 code_pair(uint32_t w, int h, int r) {
  const bool high_byte = BITS == 4 ? r >= 2 : h == 1;
  const int k = BITS == 4 ? 4 * (r % 2) : 2 * r;  // offset within the byte
  const uint32_t mask = (BITS == 4 ? 0x000F000Fu : 0x00030003u) << k;
  // (word & mask) | 0x64006400 as one lop3 (LUT 0xEA = a & b | c): written as & and |, the v2 kernel's SASS executed
  // two LOP3 a register (kernels/PERF.md, "The compressed-decode chains kernels' code").
  uint32_t biased;
  asm("lop3.b32 %0, %1, %2, %3, 0xEA;\n" : "=r"(biased) : "r"(high_byte ? w >> 8 : w), "r"(mask), "r"(0x64006400u));
  const uint32_t inv = uint32_t(15 - k) << 10, off = 0x8000u | uint32_t(25 - k) << 10;  // 2⁻ᵏ, −2¹⁰⁻ᵏ in FP16
  const uint32_t inv2 = inv | inv << 16, off2 = off | off << 16;
  return __hfma2(*reinterpret_cast<const __half2*>(&biased), *reinterpret_cast<const __half2*>(&inv2),
                 *reinterpret_cast<const __half2*>(&off2));
}

// x̂ = fp16(fmaf(q, s, z)) (head comment) for the 8 codes of one A fragment; w is the fragment's code word, h
// the parity of its outer index (2-bit words hold two outer tiles), sz the quad's staged FP16 s, z
// ({s₀s₁, s₂s₃, z₀z₁, z₂z₃}, 16 bytes). Register r uses quad entries j = 2·⌊r/2⌋ + e (kivi_layout.h).
//   Exact (the slot's flag, kivi_image.h fp32_exact): q·s + z is a float for every code, so FP32's rounding
//     is none and x̂ is q·s + z rounded once to FP16 — one HFMA2 per register.
//   Otherwise: the codes to FP32, fmaf with s, z widened to FP32 (exactly), RNE to FP16 — the reference's two
//     roundings.
template <int BITS>
__device__ __forceinline__ void dequant_fragment_fp16(uint32_t w, int h, const uint4& sz, uint32_t (&a)[4]) {
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const __half2 x = __hfma2(code_pair<BITS>(w, h, r), *reinterpret_cast<const __half2*>(r < 2 ? &sz.x : &sz.y),
                              *reinterpret_cast<const __half2*>(r < 2 ? &sz.z : &sz.w));
    a[r] = *reinterpret_cast<const uint32_t*>(&x);
  }
}
template <int BITS>
__device__ __forceinline__ void dequant_fragment_fp32(uint32_t w, int h, const uint4& sz, uint32_t (&a)[4]) {
  const auto widen = [](uint32_t pair) { return __half22float2(*reinterpret_cast<const __half2*>(&pair)); };
  const float2 s01 = widen(sz.x), s23 = widen(sz.y), z01 = widen(sz.z), z23 = widen(sz.w);
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const float2 q = __half22float2(code_pair<BITS>(w, h, r));
    a[r] = r < 2 ? pack_half2(fmaf(q.x, s01.x, z01.x), fmaf(q.y, s01.y, z01.y))
                 : pack_half2(fmaf(q.x, s23.x, z23.x), fmaf(q.y, s23.y, z23.y));
  }
}

// Where a lane's quad of s, z starts (in halves): K's for m-tile mt of k-step kk (key
// group mt >> shift), V's for k-step ks and m-tile mi (value group mi >> shift) — kivi_layout.h's k_scale_at(kg,
// 16·kk + 2t, D) and v_scale_at(16·ks + 2t, vg, D, g), in int arithmetic as the rest of the loop's indices.
__device__ __forceinline__ int k_quad(int D, int kk, int mt, int shift, int t) { return (((mt >> shift) * (D / 16) + kk) * 4 + t) * 8; }
__device__ __forceinline__ int v_quad(int vgroups, int ks, int mi, int shift, int t) { return ((ks * vgroups + (mi >> shift)) * 4 + t) * 8; }

// One fragment's dequantization from the quad of FP16 parameters at `quad` (its index in halves), on the path Exact
// names.
template <int BITS, bool Exact>
__device__ __forceinline__ void dequant_at(uint32_t w, int h, const __half* params, int quad, uint32_t (&a)[4]) {
  const uint4 sz = *reinterpret_cast<const uint4*>(params + quad);
  if constexpr (Exact) dequant_fragment_fp16<BITS>(w, h, sz, a);
  else dequant_fragment_fp32<BITS>(w, h, sz, a);
}

// Sᵀ (tokens × heads) of a quantized tile: per k-step kk, the codes of its 4 m-tiles (one 16-byte load,
// shared by a k-step pair at 2 bits) and the s, z of the m-tile's key group (kg = mt >> shift).
template <int D, int BITS, bool Exact>
__device__ __forceinline__ void scores_quantized(const uint8_t* kc, const __half* kp, int shift,
                                                 const uint32_t (&qf)[D / 16][2], float (&s)[kMT][4]) {
  const int lane = threadIdx.x % 32, t = lane % 4;
  uint32_t w[kMT];
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
    if (BITS == 4 || kk % 2 == 0) {
      const uint4 v = *reinterpret_cast<const uint4*>(kc + 4 * layout::code_word(kk, 0, kMT, lane, BITS));
      w[0] = v.x, w[1] = v.y, w[2] = v.z, w[3] = v.w;
    }
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt) {
      uint32_t a[4];
      dequant_at<BITS, Exact>(w[mt], kk % 2, kp, k_quad(D, kk, mt, shift, t), a);
      mma_f16(s[mt], a, qf[kk][0], qf[kk][1]);
    }
  }
}

// Oᵀ += V̂ᵀ·P̃ᵀ for a quantized tile: per k-step ks, the codes of all d/16 channel m-tiles, the s, z of
// each m-tile's value group (vg = mi >> shift) for the lane's four tokens.
template <int D, int BITS, bool Exact>
__device__ __forceinline__ void pv_quantized(const uint8_t* vc, const __half* vp, int shift, int vgroups,
                                             const uint32_t (&pb)[kMT][2], float (&o)[D / 16][4]) {
  constexpr int MI = D / 16;
  const int lane = threadIdx.x % 32, t = lane % 4;
  uint32_t w[MI];
#pragma unroll
  for (int ks = 0; ks < kMT; ++ks) {
    if (BITS == 4 || ks % 2 == 0) {
#pragma unroll
      for (int c4 = 0; c4 < MI / 4; ++c4) {
        const uint4 v = *reinterpret_cast<const uint4*>(vc + 4 * layout::code_word(ks, 4 * c4, MI, lane, BITS));
        w[4 * c4] = v.x, w[4 * c4 + 1] = v.y, w[4 * c4 + 2] = v.z, w[4 * c4 + 3] = v.w;
      }
    }
#pragma unroll
    for (int mi = 0; mi < MI; ++mi) {
      uint32_t a[4];
      dequant_at<BITS, Exact>(w[mi], ks % 2, vp, v_quad(vgroups, ks, mi, shift, t), a);
      mma_f16(o[mi], a, pb[ks][0], pb[ks][1]);
    }
  }
}

// The two products on the FP32 path, out of line (v4): a call whose arguments and results pass by value, so the
// caller's registers are the FP16 path's (inlined, this rare path set the loop's count: 226 against 166 at d 128, 2
// bits). Same arithmetic as inlined: the bits do not depend on where the code sits.
struct Fp32Scores {
  float s[kMT][4];
};
template <int D>
struct Fp32Acc {
  float o[D / 16][4];
};
template <int D>
struct QueryFrags {
  uint32_t r[D / 16][2];
};
struct ProbFrags {
  uint32_t r[kMT][2];
};
template <int D, int BITS>
__device__ __noinline__ Fp32Scores fp32_path_scores(const uint8_t* kc, const __half* kp, int shift,
                                                    const QueryFrags<D> qf) {
  Fp32Scores out = {};
  scores_quantized<D, BITS, false>(kc, kp, shift, qf.r, out.s);
  return out;
}
template <int D, int BITS>
__device__ __noinline__ Fp32Acc<D> fp32_path_pv(const uint8_t* vc, const __half* vp, int shift, int vgroups,
                                               const ProbFrags pb, Fp32Acc<D> acc) {
  pv_quantized<D, BITS, false>(vc, vp, shift, vgroups, pb.r, acc.o);
  return acc;
}
template <class T, int N, int M>
__device__ __forceinline__ void copy_2d(T (&dst)[N][M], const T (&src)[N][M]) {
#pragma unroll
  for (int i = 0; i < N; ++i)
#pragma unroll
    for (int j = 0; j < M; ++j) dst[i][j] = src[i][j];
}

__device__ __forceinline__ void ld_fragment(const __half* p, uint32_t (&a)[4]) {
  const uint4 v = __ldg(reinterpret_cast<const uint4*>(p));
  a[0] = v.x, a[1] = v.y, a[2] = v.z, a[3] = v.w;
}

// The same two products on a residual tile: its FP16 values are the A fragments, one 16-byte load each
// (residual tiles are a few per pair: no staging).
template <int D>
__device__ __forceinline__ void scores_residual(const __half* kr, const uint32_t (&qf)[D / 16][2], float (&s)[kMT][4]) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk)
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt) {
      uint32_t a[4];
      ld_fragment(kr + ((kk * kMT + mt) * 32 + lane) * 8, a);
      mma_f16(s[mt], a, qf[kk][0], qf[kk][1]);
    }
}

template <int D>
__device__ __forceinline__ void pv_residual(const __half* vr, const uint32_t (&pb)[kMT][2], Chain<D>& ch) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int ks = 0; ks < kMT; ++ks)
#pragma unroll
    for (int mi = 0; mi < D / 16; ++mi) {
      uint32_t a[4];
      ld_fragment(vr + ((ks * (D / 16) + mi) * 32 + lane) * 8, a);
      mma_f16(ch.o[mi], a, pb[ks][0], pb[ks][1]);
    }
}

// Stage quantized slot `slot` of `pair` (codes, s and z in FP16) with 16-byte cp.async.
template <int D, int BITS>
__device__ __forceinline__ void load_stage(uint8_t* stage, const KiviCacheArgs& c, const WarpSmem& ws, int pair,
                                           int slot, int slots) {
  const int lane = threadIdx.x % 32;
  const int64_t code = (int64_t(pair) * slots + slot) * ws.code_bytes;
  for (int i = lane; i < ws.code_bytes / 16; i += 32) {
    cp_async_16(stage + 16 * i, c.k_codes + code + 16 * i, true);
    cp_async_16(stage + ws.code_bytes + 16 * i, c.v_codes + code + 16 * i, true);
  }
  const int64_t k_groups = layout::k_groups(slots, c.group);
  const __half* kp = c.k_params + layout::k_param_halves(int64_t(pair) * k_groups + layout::slot_first_k_group(slot, c.group), D);
  uint8_t* dst = stage + 2 * ws.code_bytes;
  for (int i = lane; i < ws.k_param_halves / 8; i += 32) cp_async_16(dst + 16 * i, kp + 8 * i, true);
  const __half* vp = c.v_params + (int64_t(pair) * slots + slot) * ws.v_param_halves;
  dst += 2 * ws.k_param_halves;
  for (int i = lane; i < ws.v_param_halves / 8; i += 32) cp_async_16(dst + 16 * i, vp + 8 * i, true);
}

template <int D, int BITS>
__device__ void run_chain(const KiviDecodeArgs& a, int pair, int chain, uint8_t* mine, const uint32_t (&qf)[D / 16][2]) {
  const KiviCacheArgs& c = a.cache;
  const WarpSmem ws(D, BITS, c.group);
  const Tiles tiles(c);
  const int first = int(int64_t(chain) * tiles.total / a.chains), last = int(int64_t(chain + 1) * tiles.total / a.chains);
  const int q_end = min(last, tiles.quantized);
  const int shift = __ffs(c.group) - 5;  // log₂(g / 16): m-tile mt lies in key group mt >> shift of its slot
  const int vgroups = int(layout::v_groups(D, c.group));
  const float scale_log2 = a.scale * decode_chain::kLog2e;

  Chain<D> ch;
  ch.start();

#pragma unroll
  for (int st = 0; st < kStages - 1; ++st) {
    if (first + st < q_end) load_stage<D, BITS>(mine + st * ws.stage_bytes, c, ws, pair, first + st, tiles.quantized);
    cp_async_commit();
  }
  uint32_t exact = 0;  // bit i: tile j0 + i's flag (kivi_image.h slot_exact), j0 the last multiple of 32 tiles from first
  for (int j = first; j < q_end; ++j) {
    if ((j - first) % 32 == 0) {  // the next 32 tiles' flags, one byte a lane
      const int tile = j + threadIdx.x % 32;
      exact = __ballot_sync(0xffffffffu, tile < q_end && __ldg(c.slot_exact + int64_t(pair) * tiles.quantized + tile) != 0);
    }
    const bool fp16_path = (exact >> ((j - first) % 32)) & 1u;  // warp-uniform
    cp_async_wait<kStages - 2>();  // tile j's stage has landed (this lane's copies) …
    __syncwarp();                  // … and every lane's; the previous tile's reads are done
    const uint8_t* stage = mine + ((j - first) % kStages) * ws.stage_bytes;
    const __half* staged = reinterpret_cast<const __half*>(stage + 2 * ws.code_bytes);  // K's s,z then V's, FP16
    const int ahead = j + kStages - 1;  // into the stage tile j − 1 used
    if (ahead < q_end) load_stage<D, BITS>(mine + ((ahead - first) % kStages) * ws.stage_bytes, c, ws, pair, ahead, tiles.quantized);
    cp_async_commit();
    float s[kMT][4] = {};
    if (fp16_path) {
      scores_quantized<D, BITS, true>(stage, staged, shift, qf, s);
    } else {
      QueryFrags<D> q;
      copy_2d(q.r, qf);
      copy_2d(s, fp32_path_scores<D, BITS>(stage, staged, shift, q).s);
    }
    uint32_t pb[kMT][2];
    decode_chain::softmax_tile<D, kMT>(s, min(kT, c.quantized_tokens - j * kT), scale_log2, ch, pb);
    if (fp16_path) {
      pv_quantized<D, BITS, true>(stage + ws.code_bytes, staged + ws.k_param_halves, shift, vgroups, pb, ch.o);
    } else {
      ProbFrags p;
      Fp32Acc<D> acc;
      copy_2d(p.r, pb);
      copy_2d(acc.o, ch.o);
      copy_2d(ch.o, fp32_path_pv<D, BITS>(stage + ws.code_bytes, staged + ws.k_param_halves, shift, vgroups, p, acc).o);
    }
    __syncwarp();
  }
  cp_async_wait<0>();
  for (int j = max(first, tiles.quantized); j < last; ++j) {
    const int r = j - tiles.quantized;
    const int64_t at = (int64_t(pair) * tiles.residual + r) * layout::residual_halves(D);
    float s[kMT][4] = {};
    scores_residual<D>(c.k_residual + at, qf, s);
    uint32_t pb[kMT][2];
    decode_chain::softmax_tile<D, kMT>(s, min(kT, c.residual_tokens - r * kT), scale_log2, ch, pb);
    pv_residual<D>(c.v_residual + at, pb, ch);
  }

  const int group = a.q_heads / a.kv_heads, b = pair / a.kv_heads, kvh = pair % a.kv_heads;
  decode_chain::store<D>(ch, group, size_t(b) * a.q_heads + size_t(kvh) * group,
                         {a.o, a.lse, a.workspace, a.chains, chain, size_t(a.batch) * a.q_heads});
}

// CTAs per SM the register budget is held to (ptxas -v on sm_90a, no spills). v3 (the FP32 path inlined): d = 128
// took 224–226 registers (two CTAs, 8 warps per SM; capped at 168 it spilled), d = 64 148–154 (three). v4: d = 128 at
// 2 bits 166 registers, three CTAs (12 warps; 48 KB of shared memory a CTA); at 4 bits 224, two — its 80 KB a CTA
// allow no third; d = 64 128, four CTAs (16 warps; 24 / 40 KB). Measured (H100, B 16, N 32k; kernels/PERF.md, "kivi
// decode v4 measured"): the third CTA took MHA 2 bits 0.714 → 0.667 ms, the issue rate only 0.55 → 0.61 a scheduler-
// cycle (more warps, each waiting longer). Four CTAs at d = 128, 2 bits fit the shared memory, but ptxas then spills
// (128 registers; 32 bytes stored, 56 loaded) and the same call measured them 3% slower than three
// (kernels/bench/decode_session.sh STEP=kivi edits kCtasD128Bits2 for that A/B).
constexpr int kCtasD128Bits2 = 3;
template <int D, int BITS>
constexpr int kMinBlocks = D == 128 ? (BITS == 2 ? kCtasD128Bits2 : 2) : 4;

template <int D, int BITS>
__global__ void __launch_bounds__(kWarps * 32, kMinBlocks<D, BITS>) kivi_chains_kernel(const KiviDecodeArgs a) {
  extern __shared__ __align__(16) uint8_t smem[];
  const int warp = threadIdx.x / 32;
  const int id = blockIdx.x * kWarps + warp, pair = id / a.chains, chain = id % a.chains;
  if (pair >= a.cache.pairs) return;  // no CTA-wide barrier follows
  const WarpSmem ws(D, BITS, a.cache.group);
  const int group = a.q_heads / a.kv_heads, b = pair / a.kv_heads, kvh = pair % a.kv_heads;
  uint32_t qf[D / 16][2];
  decode_chain::load_query<D>(a.q + (size_t(b) * a.q_heads + size_t(kvh) * group) * D, group, qf);
  run_chain<D, BITS>(a, pair, chain, smem + warp * ws.warp_bytes, qf);
}

// Merges the chains of one output row (blockDim.x = d threads; kernels/common/chain_merge.cuh).
__global__ void kivi_merge_kernel(const KiviDecodeArgs a) {
  merge_chains_row(a.workspace, a.chains, size_t(a.batch) * a.q_heads, a.cache.head_dim, blockIdx.x, a.o, a.lse);
}

template <int D, int BITS>
cudaError_t prepare(int group, int& smem_bytes) {
  smem_bytes = kWarps * WarpSmem(D, BITS, group).warp_bytes;
  return cudaFuncSetAttribute(kivi_chains_kernel<D, BITS>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes);
}

template <int D, int BITS>
cudaError_t occupancy(int group, int& warps) {
  int smem = 0, ctas = 0;
  if (const cudaError_t e = prepare<D, BITS>(group, smem); e != cudaSuccess) return e;
  const cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&ctas, kivi_chains_kernel<D, BITS>, kWarps * 32, smem);
  warps = ctas * kWarps;
  return e;
}

template <int D, int BITS>
cudaError_t launch(const KiviDecodeArgs& a, cudaStream_t stream) {
  int smem = 0;
  if (const cudaError_t e = prepare<D, BITS>(a.cache.group, smem); e != cudaSuccess) return e;
  const long warps = long(a.cache.pairs) * a.chains;
  kivi_chains_kernel<D, BITS><<<unsigned((warps + kWarps - 1) / kWarps), kWarps * 32, smem, stream>>>(a);
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  if (a.chains > 1) {
    kivi_merge_kernel<<<unsigned(size_t(a.batch) * a.q_heads), unsigned(D), 0, stream>>>(a);
    return cudaGetLastError();
  }
  return cudaSuccess;
}

// Test support (kivi_dequant_probe): one warp per quantized slot of pair 0 unpacks and dequantizes every A
// fragment of K̂ and V̂ with the chains kernel's functions, on the path the slot's flag picks, and writes the
// values token-major (s, z read where the cache holds them, as the chains kernel reads its staged copy).
template <int D, int BITS>
__global__ void kivi_dequant_probe_kernel(const KiviCacheArgs c, __half* k_hat, __half* v_hat) {
  constexpr int MI = D / 16;
  const int slot = blockIdx.x, lane = threadIdx.x, gr = lane / 4, t = lane % 4;
  const int shift = __ffs(c.group) - 5, vgroups = int(layout::v_groups(D, c.group));
  const int vph = int(layout::v_param_halves(D, c.group));
  const uint32_t* kc = reinterpret_cast<const uint32_t*>(c.k_codes + slot * layout::code_bytes(D, BITS));
  const uint32_t* vc = reinterpret_cast<const uint32_t*>(c.v_codes + slot * layout::code_bytes(D, BITS));
  const __half* kp = c.k_params + layout::k_param_halves(layout::slot_first_k_group(slot, c.group), D);
  const __half* vp = c.v_params + int64_t(slot) * vph;
  const bool fp16_path = c.slot_exact[slot] != 0;
  auto store = [&](__half* out, const uint32_t (&a)[4], bool keys, int outer, int inner) {
#pragma unroll
    for (int r = 0; r < 4; ++r)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int row = 16 * inner + gr + 8 * (r % 2), col = 16 * outer + 2 * t + 8 * (r / 2) + e;  // A (row, col)
        const int token = keys ? row : col, channel = keys ? col : row;
        out[(int64_t(slot) * kT + token) * D + channel] = reinterpret_cast<const __half*>(&a[r])[e];
      }
  };
  for (int kk = 0; kk < D / 16; ++kk)
    for (int mt = 0; mt < kMT; ++mt) {
      const uint32_t w = kc[layout::code_word(kk, mt, kMT, lane, BITS)];
      const int quad = k_quad(D, kk, mt, shift, t);
      uint32_t a[4];
      if (fp16_path) dequant_at<BITS, true>(w, kk % 2, kp, quad, a);
      else dequant_at<BITS, false>(w, kk % 2, kp, quad, a);
      store(k_hat, a, true, kk, mt);
    }
  for (int ks = 0; ks < kMT; ++ks)
    for (int mi = 0; mi < MI; ++mi) {
      const uint32_t w = vc[layout::code_word(ks, mi, MI, lane, BITS)];
      const int quad = v_quad(vgroups, ks, mi, shift, t);
      uint32_t a[4];
      if (fp16_path) dequant_at<BITS, true>(w, ks % 2, vp, quad, a);
      else dequant_at<BITS, false>(w, ks % 2, vp, quad, a);
      store(v_hat, a, false, ks, mi);
    }
}

// The four compiled kernels, by (d, bits).
template <class F>
cudaError_t dispatch(int d, int bits, F&& f) {
  if (d == 64 && bits == 2) return f.template operator()<64, 2>();
  if (d == 64 && bits == 4) return f.template operator()<64, 4>();
  if (d == 128 && bits == 2) return f.template operator()<128, 2>();
  if (d == 128 && bits == 4) return f.template operator()<128, 4>();
  return cudaErrorInvalidValue;
}

}  // namespace

bool kivi_decode_supports(int head_dim, int bits, int group, int gqa_group) {
  return (head_dim == 64 || head_dim == 128) && layout::supports(head_dim, bits, group) && gqa_group >= 1 &&
         gqa_group <= kRows;
}

int kivi_decode_tiles(const KiviCacheArgs& c) { return Tiles(c).total; }

cudaError_t kivi_decode_warps_per_sm(const KiviCacheArgs& c, int& warps) {
  warps = 0;
  return dispatch(c.head_dim, c.bits, [&]<int D, int BITS>() { return occupancy<D, BITS>(c.group, warps); });
}

int kivi_decode_chains(int pairs, int tiles, int sm_count, int warps_per_sm) {
  static_assert(kTraits.balanced_chains);  // the cost model applies the same rule (sim/schedule.cpp)
  return balanced_warp_chains(pairs, tiles, sm_count, warps_per_sm / kWarps, kWarps, kMaxChains);
}

size_t kivi_decode_workspace_bytes(const KiviDecodeArgs& a) {
  if (a.chains <= 1) return 0;
  return size_t(a.chains) * size_t(a.batch) * a.q_heads * (size_t(a.cache.head_dim) + 1) * sizeof(float);
}

cudaError_t kivi_dequant_probe(const KiviCacheArgs& c, __half* k_hat, __half* v_hat) {
  const int slots = Tiles(c).quantized;
  if (!kivi_decode_supports(c.head_dim, c.bits, c.group, 1) || slots < 1 || !c.slot_exact) return cudaErrorInvalidValue;
  return dispatch(c.head_dim, c.bits, [&]<int D, int BITS>() {
    kivi_dequant_probe_kernel<D, BITS><<<unsigned(slots), 32>>>(c, k_hat, v_hat);
    return cudaGetLastError();
  });
}

cudaError_t kivi_decode(const KiviDecodeArgs& a, cudaStream_t stream) {
  const KiviCacheArgs& c = a.cache;
  if (a.kv_heads < 1 || a.q_heads % a.kv_heads != 0 || c.pairs != a.batch * a.kv_heads ||
      !kivi_decode_supports(c.head_dim, c.bits, c.group, a.q_heads / a.kv_heads) || c.quantized_tokens < 0 ||
      c.residual_tokens < 0 || c.quantized_tokens % c.group != 0 || (c.quantized_tokens > 0 && !c.slot_exact) || a.chains < 1 ||
      a.chains > kivi_decode_tiles(c) || (a.chains > 1 && a.workspace == nullptr))
    return cudaErrorInvalidValue;
  return dispatch(c.head_dim, c.bits, [&]<int D, int BITS>() { return launch<D, BITS>(a, stream); });
}

}  // namespace attnlab::kernels
