// attnlab kernels: TurboAttention's prefill attention on Hopper (turbo_prefill_sm90.h states the contract).
//
// The loop nest and pipeline of int_flash_sm90.cu (two warpgroups, kv_pipeline.cuh: S_{j+1} issued before
// P·V_j), with the paper's tiles: each warpgroup's 64 query rows are one of Alg. 1's query blocks (B_r = 64,
// one s_Q) and a KV tile is B_c = 64 keys (one s_K, s_V: the cache's block scales). Per tile, as
// core/variants/turbo.cpp rounds it (operation for operation):
//   l. 8   S = fl(S_int·fl(fl(s_Q·s_K)·scale))              wgmma m64n64k32 s8·s8 → s32, exact integers
//   l. 9   (the exponential: SAS in FP32, SAS in FP16x2 — turbo_sas.cuh's SasNonPositive and Sas16NonPositive,
//          the reference's values on t ≤ 0, two scores per HFMA2 in FP16 — or exp2 on the SFU with exact_exp;
//          a template parameter; or the two mixed by sas_share, core/variants/turbo_sas_share.h's rule: of the
//          tile's eight n8 blocks of keys the first sas_blocks take SAS in FP32, the rest exp2 — a block's columns
//          are two per thread in every thread of a warp, so each warp takes one path per block)
//          m_new = max(m, rowmax S), α = SAS(m − m_new) (0 before the first tile; 1 for a row that sees no
//          key of the tile, whose state the reference leaves alone), P̃ = SAS(S − m_new),
//          ℓ = fl(α·ℓ) + Σ P̃ — each thread keeps its share of ℓ (its 16 of the row's 64 terms), the four
//          shares summed at the end: the only difference from the reference, which sums the tile's 64 terms
//          in order (tests/kernels/turbo/test_turbo_prefill_kernel.cpp bounds it)
//   l. 10  s_P = fl(max_tile P̃ / 119) over the warpgroup's 64 × 64 tile: each warp's maximum to shared memory
//          at the end of its softmax, the four read after the pipeline's next CTA barrier (kv_pipeline.cuh's
//          kPackAfterBarrier: no barrier of its own), Q(P̃) = rne(fl(P̃ / s_P)) through rcp.approx with the
//          exact division near half-integers (turbo_quant.cuh derives the test)
//   l. 11  O = fl(fl(α·O) + fl(X·fl(s_P·s_V))), X = Q(P̃)·V^q1 in INT32 (wgmma s8, A from registers, B = Vᵀ):
//          the pipeline adds tile j's term when P·V_j lands and then multiplies by α_{j+1} — the same
//          two roundings per tile in the same order
//   l. 20–22  O = fl(O / ℓ) → FP16, L = m + log ℓ.
// A tile no row of a warpgroup sees (above the causal diagonal) is one the reference's loop never reaches
// for that query block: the warpgroup leaves m, ℓ and O untouched there (α = 1, no codes, X·0).
//
// K/V loads (TurboPrefillArgs::tma_producer, the variant's kv_loads). true, the default: FlashAttention-3 §3.1's
// warp specialization, as int_flash_sm90.cu has it — a producer warpgroup, one of whose threads copies each tile's
// K and Vᵀ with two TMA loads (tma_fill.cuh; K in the d-byte swizzle, Vᵀ's 64-key rows in the 64-byte one) into a
// ring of kRingSlots mbarrier slots (kv_ring.cuh's ProducerFills); setmaxnreg gives the two consumer warpgroups 240
// registers, and with ping_pong their MMA issues alternate. With no CTA barrier left, l. 10's maximum over the
// warpgroup meets at a barrier of the warpgroup's own 128 threads at the start of pack_p (named barrier 4 + group):
// each warp's maximum of tile j + 1 is written in its softmax, read after that barrier; the two parity slots of
// pmax_of suffice, since a warp writes tile j + 2's maximum only after every warp of its group has passed the
// barrier of tile j + 1 — after it read tile j's. false: every thread's cp.async and a CTA barrier per tile
// (kv_pipeline.cuh, the maxima read after the barrier it has anyway: kPackAfterBarrier). Each warpgroup runs the
// same operations in the same order either way — the same bits ([gpu] test). Causal CTAs start with the last row
// blocks (the most tiles), so the GPU's last wave holds the short ones; the grid's order changes no number.
#include "kernels/turbo/turbo_prefill_sm90.h"

#include "core/kernel_traits.h"
#include "core/variants/turbo_sas_share.h"
#include "kernels/common/kv_pipeline.cuh"
#include "kernels/common/kv_ring.cuh"
#include "kernels/common/tensor_map.h"
#include "kernels/common/tile_softmax.cuh"
#include "kernels/common/tma_fill.cuh"
#include "kernels/turbo/turbo_quant.cuh"
#include "kernels/turbo/turbo_sas.cuh"
#include "kernels/common/wgmma.cuh"

#include <cfloat>
#include <cmath>

namespace attnlab::kernels {

namespace {

// The tiling is the traits row's (core/kernel_traits.h), which the cost model reads too; d 64 and 128 alike.
constexpr KernelTraits kTraits = *find_kernel_traits("turbo", 128, 90);
constexpr int kBr = kTraits.block_r, kBc = kTraits.block_c, kConsumers = 32 * kTraits.warps;
constexpr int kRowsPerGroup = kTraits.warpgroup_rows();  // Alg. 1's B_r: one query block per warpgroup
// The producer's ring: the traits' slots (16 KB each at d 128: 512 keys ahead); the cp.async pipeline keeps its 3.
constexpr int kRingSlots = kTraits.stages;
static_assert(kTraits.arch == 90 && kBr == 2 * kRowsPerGroup && kConsumers == 256 && kBc == kTurboBlock,
              "two warpgroups of one query block each; the pre-pass's blocks are the KV tiles");
static_assert(find_kernel_traits("turbo", 64, 90)->block_r == kBr && find_kernel_traits("turbo", 64, 90)->block_c == kBc &&
              find_kernel_traits("turbo", 64, 90)->warps == kTraits.warps &&
              find_kernel_traits("turbo", 64, 90)->stages == kRingSlots);

template <int D, bool Producer>
struct PrefillTile {
  static constexpr int kThreads = kConsumers + (Producer ? 128 : 0);  // + the TMA producer warpgroup
  static constexpr int kStages = Producer ? kRingSlots : kKvPipelineStages;
  static constexpr int kQBytes = kBr * D, kKBytes = kBc * D, kVBytes = D * kBc;
  static constexpr int kStageBytes = kKBytes + kVBytes;  // multiples of 1024: swizzle blocks stay aligned
  static constexpr size_t kSmemBytes = size_t(kQBytes) + size_t(kStages) * kStageBytes + 1024 + 512;  // + align, LUTs, s_P
  static_assert(kStageBytes % 1024 == 0 && kQBytes % 1024 == 0);
  static_assert(kSmemBytes + 2 * kStages * sizeof(uint64_t) <= kSm90SmemPerCta, "the ring and its mbarriers fit");
};

// The exponential, chosen at compile time: SAS in FP32, SAS in FP16x2 (sas_precision fp16), exp2 (exact_exp), or
// SAS in FP32 on the first a.exp.sas_blocks n8 blocks of a tile and exp2 on the rest (sas_share below 1).
enum ExpKind { kSas32 = 0, kSas16 = 1, kExp2 = 2, kMixed = 3 };
static_assert(kBc == variants::kSasSpan && variants::kSasBlock == 8, "sas_share's blocks are the tile's n8 blocks");

// Producer, PingPong: the K/V loads and schedule (the head comment); the maps are read by the producer only.
template <int D, int EXPK, bool DUMP, bool Producer, bool PingPong>
__global__ void __launch_bounds__(PrefillTile<D, Producer>::kThreads, 1)
    turbo_prefill_kernel(TurboPrefillArgs a, const __grid_constant__ CUtensorMap k_map,
                         const __grid_constant__ CUtensorMap vt_map) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using T = PrefillTile<D, Producer>;
  constexpr int kStages = T::kStages, kThreads = T::kThreads;
  extern __shared__ char smem_raw[];
  char* smem = smem_raw + ((1024u - (smem_addr(smem_raw) & 1023u)) & 1023u);
  char* sQ = smem;
  auto stage = [&](int j) { return smem + T::kQBytes + (j % kStages) * T::kStageBytes; };  // K, Vᵀ
  float* lut = reinterpret_cast<float*>(smem + T::kQBytes + kStages * T::kStageBytes);
  __half* lut16 = reinterpret_cast<__half*>(lut + 32);
  float* pmax_of = lut + 48;  // [group][tile parity][warp]
  for (int i = threadIdx.x; i < kSasLutEntries; i += kThreads)  // entry 31: 0 (turbo_sas.cuh's zero slot)
    lut[i] = i < 31 ? a.exp.lut[i] : 0.f, lut16[i] = __float2half_rn(i < 31 ? a.exp.lut16[i] : 0.f);
  __syncthreads();
  // Every exponential here has t ≤ 0 or −∞ (S − m_new and m_old − m_new): SAS's non-positive forms apply.
  const SasNonPositive sas32 = make_sas_non_positive(a.exp, lut);
  const Sas16NonPositive sas16 = make_sas16_non_positive(a.exp, lut16);
  const Exp<true> exp2 = make_exp<true>(a.exp, lut);
  const int sas_blocks = a.exp.sas_blocks;  // kMixed: the n8 blocks of each tile whose P̃ takes SAS
  auto sas = [&](float x) {
    if constexpr (EXPK == kSas16) return sas16(x);
    else if constexpr (EXPK == kExp2) return exp2(x);
    else return sas32(x);
  };

  const int lane = threadIdx.x % 32, warp = (threadIdx.x / 32) % 4, group = warpgroup_index();
  const int t = lane % 4;
  const int bh = blockIdx.y, b = bh / a.q_heads, h = bh % a.q_heads;
  const int pair = b * a.kv_heads + h / (a.q_heads / a.kv_heads);
  const int row_block = a.causal ? int(gridDim.x - 1 - blockIdx.x) : int(blockIdx.x);  // causal: the longest first
  const int row0 = row_block * kBr;
  const int last_row = min(row0 + kBr, a.q_len) - 1;
  const int tiles = (visible_keys(last_row, a.q_len, a.kv_len, a.causal) + kBc - 1) / kBc;
  // This warpgroup's query block: its s_Q, and the keys its last row sees (tiles past them are skipped).
  const int block = (row0 + group * kRowsPerGroup) / kRowsPerGroup;
  const int group_last = min(row0 + group * kRowsPerGroup + kRowsPerGroup, a.q_len) - 1;
  const int group_sees = group_last >= row0 + group * kRowsPerGroup ? visible_keys(group_last, a.q_len, a.kv_len, a.causal) : 0;
  const int q_blocks = (a.q_len + kRowsPerGroup - 1) / kRowsPerGroup;
  const float s_q = block < q_blocks ? a.s_q[size_t(bh) * q_blocks + block] : 1.0f;
  const int8_t* k = a.k8 + size_t(pair) * a.pad * D;
  const int8_t* vt = a.vt8 + size_t(pair) * D * a.pad;
  const float* bscale = a.block_scales + size_t(pair) * a.slots * 2;

  auto load_kv = [&](int j) {  // the cp.async loads (no producer): every thread its share
    if constexpr (!Producer) {
      const int col0 = j * kBc;
      SwizzledCopier<D, kBc, kConsumers, D>(threadIdx.x).copy(stage(j), k + size_t(col0) * D, D, a.kv_len - col0);
      SwizzledCopier<kBc, D, kConsumers, kBc>(threadIdx.x)  // Vᵀ: D rows of 64 keys
          .copy(stage(j) + T::kKBytes, vt + col0, a.pad, D);
    }
  };

  const int my_row0 = row0 + group * 64 + warp * 16 + lane / 4;  // rows my_row0 + 8i (wgmma.cuh's layout)
  // Descriptors advanced by the k-step's constant (wgmma_descriptor.h's desc_advance), Q's built once.
  const uint64_t q_desc = sw_desc<D>(sQ + group * 64 * D, 16, 8 * D);
  auto desc_q = [&](int kk) { return desc_advance(q_desc, kk * 32); };
  auto desc_k = [&](int j, int kk) { return desc_advance(sw_desc<D>(stage(j), 16, 8 * D), kk * 32); };
  auto desc_v = [&](int j, int ks) { return desc_advance(sw_desc<kBc>(stage(j) + T::kKBytes, 16, 8 * kBc), ks * 32); };

  int si[kBc / 2];      // S in INT32: the m64n64 accumulator
  float o[D / 2] = {};  // O in FP32
  int acc[D / 2];       // P·V_j in INT32
  uint32_t p[2][4];     // P's codes as A fragments (two k-steps of 32 keys)
  float pt[kBc / 2];    // P̃ of the tile whose codes wait for the warpgroup's s_P (softmax → pack_p)
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};
  float pending_sv = 0.f;     // s_V of that tile
  int pending_slot = 0;       // its tile parity: pmax_of's slot
  bool pending_live = false;  // false: the warpgroup does not see that tile (no codes, X·0)
  float c_pv = 0.f;           // fl(s_P·s_V) of the tile whose P·V is in flight

  auto issue_scores = [&](int j) {
#pragma unroll
    for (int kk = 0; kk < D / 32; ++kk) wgmma_m64n64k32_s8_ss(si, desc_q(kk), desc_k(j, kk), kk > 0);
  };
  auto issue_pv = [&](int j) {
#pragma unroll
    for (int ks = 0; ks < 2; ++ks) {
      if constexpr (D == 128) wgmma_m64n128k32_s8_rs(acc, p[ks], desc_v(j, ks), ks > 0);
      else wgmma_m64n64k32_s8_rs(acc, p[ks], desc_v(j, ks), ks > 0);
    }
  };
  // Lines 8–9 for tile j, and l. 10's maximum: P̃ into pt, α per row, this warp's max P̃ into pmax_of.
  auto softmax = [&](int j, float (&alpha)[2]) {
    const int col0 = j * kBc;
    if (col0 >= group_sees) {  // the reference's loop for this query block ends before tile j
      alpha[0] = alpha[1] = 1.f;
      pending_live = false;
      return;
    }
    if constexpr (DUMP) store_int_scores<kBc>(si, a.scores + size_t(bh) * a.q_len * a.kv_len, col0, my_row0, t, a.q_len, a.kv_len);
    const float2 sk = *reinterpret_cast<const float2*>(bscale + 2 * j);  // s_K, s_V
    const float f = __fmul_rn(__fmul_rn(s_q, sk.x), a.scale);
#pragma unroll
    for (int e = 0; e < kBc / 2; ++e) pt[e] = __fmul_rn(exact_float(si[e]), f);
    if (col0 + kBc > visible_keys(row0 + group * 64, a.q_len, a.kv_len, a.causal))
      mask_invisible<kBc>(pt, col0, my_row0, t, a.q_len, a.kv_len, a.causal);
    float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int e = 0; e < kBc / 2; ++e) mx[(e / 2) % 2] = fmaxf(mx[(e / 2) % 2], pt[e]);
    float shift[2];
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      mx[i] = fmaxf(mx[i], __shfl_xor_sync(0xffffffffu, mx[i], 1));
      mx[i] = fmaxf(mx[i], __shfl_xor_sync(0xffffffffu, mx[i], 2));
      const float m_new = fmaxf(m[i], mx[i]);
      // A row that sees no key of this tile keeps its state (core/online_softmax.h): α = 1, not SAS(0).
      alpha[i] = isinf(mx[i]) ? 1.f : isinf(m[i]) ? 0.f : sas(__fsub_rn(m[i], m_new));
      shift[i] = isinf(m_new) ? 0.f : m_new;
      m[i] = m_new;
    }
    float sum[2] = {0.f, 0.f}, pmax = 0.f;
    // Rows past q_len (a ragged last block's padding, Q = 0) are not the reference's: kept out of s_P.
    const bool real[2] = {my_row0 < a.q_len, my_row0 + 8 < a.q_len};
#pragma unroll
    for (int e = 0; e < kBc / 2; e += 2) {  // (e, e + 1): one row's two adjacent keys
      const int i = (e / 2) % 2;
      if constexpr (EXPK == kSas16) {
        const float2 v = sas16(__fsub_rn(pt[e], shift[i]), __fsub_rn(pt[e + 1], shift[i]));
        pt[e] = v.x, pt[e + 1] = v.y;
      } else if constexpr (EXPK == kMixed) {  // n8 block e / 4: keys 8·(e / 4) + 2t, + 1 of the tile
        const float t0 = __fsub_rn(pt[e], shift[i]), t1 = __fsub_rn(pt[e + 1], shift[i]);
        if (e / 4 < sas_blocks) pt[e] = sas32(t0), pt[e + 1] = sas32(t1);
        else pt[e] = exp2(t0), pt[e + 1] = exp2(t1);
      } else {
        pt[e] = sas(__fsub_rn(pt[e], shift[i])), pt[e + 1] = sas(__fsub_rn(pt[e + 1], shift[i]));
      }
      sum[i] = __fadd_rn(__fadd_rn(sum[i], pt[e]), pt[e + 1]);
      if (real[i]) pmax = fmaxf(pmax, fmaxf(pt[e], pt[e + 1]));
    }
#pragma unroll
    for (int i = 0; i < 2; ++i) l[i] = __fadd_rn(__fmul_rn(alpha[i], l[i]), sum[i]);
#pragma unroll
    for (int o2 = 16; o2 > 0; o2 /= 2) pmax = fmaxf(pmax, __shfl_xor_sync(0xffffffffu, pmax, o2));
    if (lane == 0) pmax_of[(group * 2 + (j & 1)) * 4 + warp] = pmax;  // read after the next CTA barrier
    pending_sv = sk.y, pending_slot = j & 1, pending_live = true;
  };
  // After P·V of the oldest pending tile has landed: O = fl(O + fl(X·c)), then O ·= α of the next tile.
  // fl(O·1) = O: a warp whose rows all keep their maximum (the common case past the first tiles) skips it.
  auto finish_tile = [&](const float (&alpha)[2], bool rescale) {
#pragma unroll
    for (int e = 0; e < D / 2; ++e) o[e] = __fadd_rn(o[e], __fmul_rn(exact_float(acc[e]), c_pv));
    if (rescale && __any_sync(0xffffffffu, alpha[0] != 1.f || alpha[1] != 1.f)) {
#pragma unroll
      for (int n = 0; n < D / 8; ++n) {
        o[4 * n + 0] = __fmul_rn(o[4 * n + 0], alpha[0]), o[4 * n + 1] = __fmul_rn(o[4 * n + 1], alpha[0]);
        o[4 * n + 2] = __fmul_rn(o[4 * n + 2], alpha[1]), o[4 * n + 3] = __fmul_rn(o[4 * n + 3], alpha[1]);
      }
    }
  };
  // l. 10 for the pending tile, after the CTA barrier that follows its softmax (kv_pipeline.cuh's
  // kPackAfterBarrier): s_P = fl(max P̃ / 119) over the warpgroup's four warps, Q(P̃) = ⌈P̃ / s_P⌋
  // (turbo_quant.cuh, as the bits of code + 1.5·2²³), then C layout → A layout (k32) as in
  // int_flash_sm90.cu: the keys land in Vᵀ's permuted order.
  auto pack_p = [&]() {
    if constexpr (Producer) warpgroup_sync(4 + group);  // every warp's maximum of the pending tile is in pmax_of
    if (!pending_live) {  // X·0: no codes (uniform over the warpgroup)
      c_pv = 0.f;
#pragma unroll
      for (int ks = 0; ks < 2; ++ks) p[ks][0] = p[ks][1] = p[ks][2] = p[ks][3] = 0u;
      return;
    }
    const float* pm = pmax_of + (group * 2 + pending_slot) * 4;
    const float sp = turbo_quant::scale_for_span(fmaxf(fmaxf(pm[0], pm[1]), fmaxf(pm[2], pm[3])));
    c_pv = __fmul_rn(sp, pending_sv);
    int code[kBc / 2];  // low bytes: the codes
    turbo_quant::p_code_bits<kBc / 2>(pt, sp, code);
#pragma unroll
    for (int ks = 0; ks < 2; ++ks) {
      const int* cc = code + 16 * ks;
      p[ks][0] = pack_s8x4(cc[0], cc[1], cc[4], cc[5]);
      p[ks][1] = pack_s8x4(cc[2], cc[3], cc[6], cc[7]);
      p[ks][2] = pack_s8x4(cc[8], cc[9], cc[12], cc[13]);
      p[ks][3] = pack_s8x4(cc[10], cc[11], cc[14], cc[15]);
    }
  };

  auto steps = KvSteps{[&] { SwizzledCopier<D, kBr, kConsumers, D>(threadIdx.x)
                                 .copy(sQ, a.q8 + (size_t(bh) * a.q_len + row0) * D, D, a.q_len - row0); },
                       load_kv, issue_scores, issue_pv, softmax, pack_p, finish_tile,
                       [&] { pin_registers(si); },
                       [&] {
                         pin_registers(o);
                         pin_registers(acc);
                         pin_registers(p);
                       }};
  if constexpr (Producer) {  // FlashAttention-3 §3.1: the producer warpgroup copies, the consumers compute
    __shared__ uint64_t full[kStages], empty[kStages];
    const bool consumer = split_warpgroups<kStages, kConsumers>(
        tiles, T::kStageBytes,
        [&] {
          prefetch_tensor_map(&k_map);
          prefetch_tensor_map(&vt_map);
        },
        [&](int j, uint64_t* bar) {
          tma_load_3d(stage(j), &k_map, 0, j * kBc, pair, bar);                // K rows j·64 …, d bytes each
          tma_load_3d(stage(j) + T::kKBytes, &vt_map, j * kBc, 0, pair, bar);  // Vᵀ: d rows, keys j·64 …
        },
        full, empty);
    if (!consumer) return;
    kv_ring<kStages, PingPong>(tiles, steps, full, empty, ProducerFills{});
  } else {
    kv_pipeline<true>(tiles, steps);
  }

  // l. 20–22: ℓ's shares summed over the quad, O = fl(O/ℓ) in FP16, L = m + log ℓ (natural units).
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    l[i] = __fadd_rn(l[i], __shfl_xor_sync(0xffffffffu, l[i], 1));
    l[i] = __fadd_rn(l[i], __shfl_xor_sync(0xffffffffu, l[i], 2));
    const int row = my_row0 + 8 * i;
    if (row >= a.q_len) continue;
    const bool empty = !(l[i] > 0.f);
    __half* orow = a.o + (size_t(bh) * a.q_len + row) * D;
#pragma unroll
    for (int n = 0; n < D / 8; ++n) {
      const float x0 = empty ? 0.f : __fdiv_rn(o[4 * n + 2 * i], l[i]);
      const float x1 = empty ? 0.f : __fdiv_rn(o[4 * n + 2 * i + 1], l[i]);
      *reinterpret_cast<__half2*>(orow + n * 8 + 2 * t) = __floats2half2_rn(x0, x1);
    }
    if (t == 0) a.lse[size_t(bh) * a.q_len + row] = empty ? -INFINITY : __fadd_rn(m[i], logf(l[i]));
  }
#endif
}

template <int D, int EXPK, bool DUMP, bool Producer, bool PingPong>
cudaError_t launch(const TurboPrefillArgs& a, cudaStream_t stream) {
  using T = PrefillTile<D, Producer>;
  const auto kernel = turbo_prefill_kernel<D, EXPK, DUMP, Producer, PingPong>;
  // Unread without the producer. K^q1 is (pairs, pad, d) and Vᵀ (pairs, d, pad): both maps span the pad, whose keys
  // past kv_len the pre-pass wrote as 0 (what the cp.async copier's zero-fill gives).
  CUtensorMap k_map{}, vt_map{};
  if constexpr (Producer) {
    const int64_t pairs = int64_t(a.batch) * a.kv_heads;
    cudaError_t e = k8_tensor_map(k_map, a.k8, pairs, a.pad, D, kBc);
    if (e == cudaSuccess) e = vt8_tensor_map(vt_map, a.vt8, pairs, a.pad, D, kBc);
    if (e != cudaSuccess) return e;
  }
  if (const cudaError_t e =
          cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(T::kSmemBytes));
      e != cudaSuccess)
    return e;
  const dim3 grid((a.q_len + kBr - 1) / kBr, a.batch * a.q_heads);
  kernel<<<grid, T::kThreads, T::kSmemBytes, stream>>>(a, k_map, vt_map);
  return cudaGetLastError();
}

// The loads and schedule `a` asks for (tma_producer, ping_pong: the head comment).
template <int D, int EXPK, bool DUMP = false>
cudaError_t launch_loads(const TurboPrefillArgs& a, cudaStream_t stream) {
  if (!a.tma_producer) return launch<D, EXPK, DUMP, false, false>(a, stream);
  return a.ping_pong ? launch<D, EXPK, DUMP, true, true>(a, stream) : launch<D, EXPK, DUMP, true, false>(a, stream);
}

}  // namespace

bool turbo_prefill_supports(int head_dim) { return head_dim == 64 || head_dim == 128; }

cudaError_t turbo_prefill_forward(const TurboPrefillArgs& a, cudaStream_t stream) {
  if (!turbo_prefill_supports(a.head_dim) || a.pad % kBc != 0 || a.pad < a.kv_len || a.q_heads % a.kv_heads != 0)
    return cudaErrorInvalidValue;
  // sas_share 0 is the exact_exp run, α included (core/variants/turbo.cpp); the FP16x2 SAS does not mix.
  if (a.exp.fp16 && a.exp.sas_blocks != 8) return cudaErrorInvalidValue;
  const int kind = a.exp.exact_exp || a.exp.sas_blocks == 0 ? kExp2
                   : a.exp.fp16                             ? kSas16
                   : a.exp.sas_blocks < 8                   ? kMixed
                                                            : kSas32;
  if (a.scores != nullptr) {
    if (kind != kSas32) return cudaErrorInvalidValue;
    return a.head_dim == 64 ? launch_loads<64, kSas32, true>(a, stream) : launch_loads<128, kSas32, true>(a, stream);
  }
  if (a.head_dim == 64)
    return kind == kExp2    ? launch_loads<64, kExp2>(a, stream)
           : kind == kSas16 ? launch_loads<64, kSas16>(a, stream)
           : kind == kMixed ? launch_loads<64, kMixed>(a, stream)
                            : launch_loads<64, kSas32>(a, stream);
  return kind == kExp2    ? launch_loads<128, kExp2>(a, stream)
         : kind == kSas16 ? launch_loads<128, kSas16>(a, stream)
         : kind == kMixed ? launch_loads<128, kMixed>(a, stream)
                          : launch_loads<128, kSas32>(a, stream);
}

}  // namespace attnlab::kernels
