// attnlab kernels: FlashAttention-2's forward on Hopper's warpgroup MMA (wgmma, sm_90a) — the same
// function as flash2.cu (flash2.h states the contract), for prefill on an sm_90 GPU.
//
// CTA = 2 warpgroups × 64 query rows (B_r = 128) sharing each K/V tile (B_c = 128 keys); K/V tiles are
// three-deep in shared memory (128-byte swizzle, wgmma.cuh; who copies them: below). Not causal at d 128 with
// the producer (flash2.h's wide_tile), FlashAttention-3's tile instead: B_c = 176 keys, two in the ring — a
// third fewer tiles, so a third fewer row reductions, rescales and MMA waits per key (v3). Per warpgroup,
// FlashAttention-3's intra-warpgroup pipelining (Shah et al. 2024, §3.2; the loop is kv_pipeline.cuh or
// kv_ring.cuh, shared with the other Hopper kernels) overlaps the softmax of tile j + 1 with the P̃·V product of tile j:
//   issue  S_{j+1} = Q·K_{j+1}ᵀ                  wgmma, A = Q and B = K from shared memory (K-major)
//   issue  O += P̃_j·V_j                          wgmma, A = P̃_j from registers, B = V (MN-major)
//   wait for S_{j+1}; m, ℓ, P̃_{j+1} = 2^{S·scale·log₂e − m}   (online softmax, App. D; FP32, ex2)
//   wait for O; O ·= 2^{m_j − m_{j+1}}; round P̃_{j+1} to FP16 A fragments
// so the tensor cores are busy while the FP32 pipes run the exponentials — if the machine code keeps that order, which
// v1–v6's did not (ptxas put the wait for O first). v8 (kv_ring.cuh's PvWait; kFlash2PvWait below) waits for O behind
// the next tile's mbarrier waits, where ptxas cannot move it above the softmax; v9 (kFlash2RescaleO) moves O ·= α to
// just before the next P·V's issue, after S_{j+2}'s (FlashAttention-3's place). Rows and keys past the ends are
// zero-filled by the copies (cp.async's or TMA's) and masked in the softmax; causal CTAs stop at the last tile their last row sees.
//
// K/V loads (flash2.h's tma_producer): true adds a producer warpgroup (FlashAttention-3 §3.1's warp
// specialization) — one of its threads copies each K and V tile (and a persistent CTA's Q) with TMA (tma_fill.cuh),
// one load per 64-channel column block of each, into the three-tile ring of kv_ring.cuh (mbarriers: the warpgroups need
// not meet every tile; K and V of a slot on barriers of their own, v3), and setmaxnreg moves registers to the two
// consumer warpgroups (240 each, the producer 24). With ping_pong the consumers' MMA issues alternate (FA3 §3.1's
// ping-pong: one warpgroup's softmax under the other's GEMMs).
// false: every thread copies its share of each tile with cp.async and the CTA meets once per tile
// (kv_pipeline.cuh). The same numbers either way, bit for bit: the loads and the schedule change, not one
// operation of the arithmetic ([gpu] test). Causal CTAs start with the last row blocks (the most tiles), so the
// GPU's last wave holds the short ones (FA3's scheduler does the same); the grid's order changes no number.
#include "kernels/flash2/flash2_sm90.h"

#include "core/kernel_traits.h"
#include "kernels/common/cta_timeline.cuh"
#include "kernels/common/kv_pipeline.cuh"
#include "kernels/common/kv_ring.cuh"
#include "kernels/common/tensor_map.h"
#include "kernels/common/tile_softmax.cuh"
#include "kernels/common/tma_fill.cuh"
#include "kernels/common/tma_store.cuh"
#include "kernels/common/wgmma.cuh"

#include <algorithm>
#include <cmath>

namespace attnlab::kernels {

namespace {

// Bc: the traits' B_c (128), or kWideTile where flash2.h's wide_tile picks it. The ring holds the traits' three
// tiles where they fit beside Q, else as many as do (176 keys at d 128: two, 212 KB with Q).
template <int D, bool Producer, int Bc = find_kernel_traits("flash2", D, 90)->block_c>
struct HopperTile {
  static constexpr KernelTraits kTraits = *find_kernel_traits("flash2", D, 90);
  static constexpr int kBr = kTraits.block_r, kBc = Bc;
  static constexpr int kConsumers = 32 * kTraits.warps, kGroups = kTraits.warps / 4;
  static constexpr int kThreads = kConsumers + (Producer ? 128 : 0);  // + the producer warpgroup
  static constexpr int kQBytes = kBr * D * 2, kKVBytes = kBc * D * 2;
  static constexpr int kStages = flash2_ring_slots(kTraits, D, Bc);  // the model's rule too
  static constexpr size_t kSmemBytes = size_t(kQBytes) + size_t(kStages) * 2 * kKVBytes + 1024;  // + alignment
  static_assert(kBr == 64 * kGroups, "each warpgroup owns one m64 tile of query rows");
  static_assert(kBc == 128 || (kBc == kWideTile && Producer), "S is one m64n128 accumulator, or m64n176 with the producer");
  static_assert(D % 64 == 0, "whole 128-byte swizzle rows");
  static_assert(Producer || kStages == kKvPipelineStages, "kv_pipeline.cuh loads tile j + 2 while tiles j and j + 1 are read");
  static_assert(kStages >= 2 && kSmemBytes <= kSm90SmemPerCta, "Q and the K/V ring in one CTA's shared memory");
};

// One row block of a launch: the x-th of batch·head bh's (a causal head's longest first). The grid's CTA (x, bh) takes
// it; a persistent CTA takes the row blocks w, w + gridDim.x, … of flash2_sm90_persistent_order (Dynamic: blockIdx.x,
// then each next one the counter hands out).
struct RowBlock {
  int bh, bkv, row0, tiles, all_see;
  __device__ RowBlock(const Flash2Args& a, int bh_, int x, int blocks, int br, int bc) : bh(bh_) {
    const int block = a.causal ? blocks - 1 - x : x;
    const int b = bh / a.q_heads, h = bh % a.q_heads;
    bkv = b * a.kv_heads + h / (a.q_heads / a.kv_heads);  // notes §3.1: query head h reads KV head ⌈h/R⌉
    row0 = block * br;
    const int last_row = min(row0 + br, a.q_len) - 1;
    tiles = (visible_keys(last_row, a.q_len, a.kv_len, a.causal) + bc - 1) / bc;  // causal: up to the last row's
    all_see = visible_keys(row0, a.q_len, a.kv_len, a.causal);                  // tiles below need no mask
  }
};

// Whether the kernels record their row blocks' timeline into Flash2Args::timeline (kernels/common/cta_timeline.cuh):
// only where kernels/bench/flash2_timeline.cu builds this file; the library's kernels carry none of it.
#ifndef ATTNLAB_FLASH2_TIMELINE
#define ATTNLAB_FLASH2_TIMELINE 0
#endif
inline constexpr bool kFlash2Timeline = ATTNLAB_FLASH2_TIMELINE;
// Row block rb's record for warpgroup `group` (the grid's index: bh · blocks + the block's row), written by the thread
// that calls it if it is a warpgroup's first (a consumer warpgroup's, or the producer's).
template <int Br>
__device__ __forceinline__ CtaTimeline timeline_record(const Flash2Args& a, const RowBlock& rb, int group) {
  return timeline_of(a.timeline, rb.bh * ((a.q_len + Br - 1) / Br) + rb.row0 / Br, group);
}

// The schedule's choices, one constant each (prefill_session.sh STEP=flash2-ab rebuilds with others and times them):
// where the consumers wait for P·V_j (kv_ring.cuh's PvWait; wgmma v8): behind the next tile's mbarrier waits, so that
// the whole softmax runs under P·V_j (v1–v6: after_softmax, which ptxas moved above the softmax);
inline constexpr PvWait kFlash2PvWait = PvWait::waits_ahead;
// where O ·= α runs (kv_ring.cuh's RescaleO; v9): in the turn, under S_{j+1}'s MMAs, off the path to the next issue;
inline constexpr RescaleO kFlash2RescaleO = RescaleO::under_scores;
// how the epilogue divides by ℓ (tile_softmax.cuh's RowScale; v8): one reciprocal a row;
inline constexpr RowScale kFlash2RowScale = RowScale::reciprocal;
// who loads a grid CTA's Q (with the producer; a persistent CTA's always comes from the producer): consumers — each
// thread its share by cp.async, then a barrier of the 256 (v1–v9); producer — two TMA loads, one per warpgroup's 64
// rows, around the first K/V tile's (the persistent CTA's order), so Q's latency hides behind K's and the consumers
// issue no copy (v10). Measured (H100, locked clocks, B 4, H 16, d 128; kernels/PERF.md "v8's epilogue, v9 and v10
// measured"): producer 0.5% slower at N 4k, 1.6% at 4k causal, equal at 16k — consumers stays the grid's choice.
enum class QLoad { consumers, producer };
inline constexpr QLoad kFlash2GridQ = QLoad::consumers;
// What a grid CTA's producer prefetches into the L2 once it has issued its own loads: none (v1–v10); next_wave — the
// row block one wave on (the CTA %nsmid places later in the grid's order, about the one that will follow this CTA on
// an SM): its Q, which only that CTA reads, so its fill would wait for DRAM, and its first K/V tile, a new head's
// where the wave crosses one. The producer issues its last tile about kStages tiles before the CTA ends: time for the
// L2 to hold them when the next CTA starts, and off this CTA's own fill (v11). The same bytes read, earlier; no number
// changes. Measured (H100, locked clocks, B 4, H 16, d 128; kernels/PERF.md "The timeline, kv_tile auto and v11
// measured"): −1.0% at N 4k, −0.8% at 4k causal, −0.1% and −0.2% at 16k.
enum class Prefetch { none, next_wave };
inline constexpr Prefetch kFlash2GridPrefetch = Prefetch::next_wave;
// How a grid CTA's consumers store O (with the producer): rows — each thread its pairs of each row from registers to
// global memory (v1–v11: D/4 four-byte stores a thread, each warp's instruction 8 rows × 16 bytes; the timeline put
// 2.4–3.2 k cycles between a warpgroup's last P·V and O stored, and the last warpgroup's is on the SM's path to the
// next CTA); tma — each warpgroup's 64 rows into its own rows of Q's tile (no MMA reads Q once its last S landed), in
// Q's swizzle by stmatrix, then one thread's TMA stores (tma_store.cuh; FlashAttention-3's epilogue) (v12). The same
// FP16 values. A persistent CTA stores rows: its producer loads the next block's Q into that tile once the last S
// landed. Measured (H100, locked clocks, B 4, H 16, d 128; kernels/PERF.md "v12 measured"): tma −1.1% at N 4k, −2.0%
// at 4k causal, −0.5% at 16k both ways; the epilogue 2.1–2.3 k cycles (rows: 2.4–3.2 k). rows: v11's .text, kept for
// the A/B.
enum class OStore { rows, tma };
inline constexpr OStore kFlash2GridStore = OStore::tma;
template <bool Producer, bool Persistent>
inline constexpr bool kTmaStoresO = Producer && !Persistent && kFlash2GridStore == OStore::tma;
// Whether a producer kernel's Q comes from the producer (q_full / q_empty, q_map): the kernel's and the launch's test.
template <bool Persistent>
inline constexpr bool kProducerLoadsQ = Persistent || kFlash2GridQ == QLoad::producer;

// The consumers' work on one row block: S, the online softmax, P̃·V over its tiles by run_loop(steps, tiles)
// (kv_ring.cuh or kv_pipeline.cuh), then O = G/ℓ and L = m + log ℓ stored. Tile j lies in the ring's slot
// (first + j) mod kStages: `first` counts a persistent CTA's tiles of earlier row blocks (0 otherwise).
// start: the CTA's (kFlash2Timeline's record; unread otherwise). TmaStore: O by o_map (kTmaStoresO), else by rows.
template <int D, bool Producer, int Bc, bool TmaStore, class RunLoop>
__device__ __forceinline__ void attend_row_block(const Flash2Args& a, const RowBlock& rb, int first, char* smem,
                                                 TimelineStart start, const CUtensorMap* o_map, RunLoop&& run_loop) {
  using T = HopperTile<D, Producer, Bc>;
  constexpr int kBc = T::kBc;
  constexpr float kLog2e = 1.4426950408889634f;
  char* sQ = smem;
  auto stage_k = [&](int s) { return smem + T::kQBytes + s * 2 * T::kKVBytes; };

  const int lane = threadIdx.x % 32, warp = (threadIdx.x / 32) % 4, group = warpgroup_index();
  const int g = lane / 4, t = lane % 4;
  CtaTimeline timeline;  // this warpgroup's record of the block
  // The loop's marks, held in registers and written after it: in the loop every thread reads the clock (no branch on
  // the writing thread, no store between the MMAs), the last tile's values overwriting the earlier ones'.
  unsigned long long first_issue = 0, first_scores = 0, last_scores = 0, last_pv_issue = 0;
  if constexpr (kFlash2Timeline) {
    timeline = timeline_record<T::kBr>(a, rb, group);
    timeline.put(kTimelineSm, timeline_sm());
    timeline.put(kTimelineTiles, static_cast<unsigned long long>(rb.tiles));
    timeline.put(kTimelineCtaStart, start.clock);
    timeline.put(kTimelineCtaStartNs, start.ns);
    timeline.mark(kTimelineBlockStart);
  }
  const __half* q = a.q + (size_t(rb.bh) * a.q_len + rb.row0) * D;
  const __half* k = a.k + size_t(rb.bkv) * a.kv_len * D;
  const __half* v = a.v + size_t(rb.bkv) * a.kv_len * D;
  auto load_kv = [&](int j) {  // the cp.async loads (no producer): every thread its share
    const SwizzledCopier<2 * D, kBc, T::kConsumers> kv_copier(threadIdx.x);
    const int col0 = j * kBc;
    kv_copier.copy(stage_k(j % T::kStages), k + size_t(col0) * D, 2 * D, a.kv_len - col0);  // first = 0 here
    kv_copier.copy(stage_k(j % T::kStages) + T::kKVBytes, v + size_t(col0) * D, 2 * D, a.kv_len - col0);
  };

  // This thread's rows: group·64 + warp·16 + g + 8i, i = 0, 1 (the accumulator layout, wgmma.cuh).
  const int my_row0 = rb.row0 + group * 64 + warp * 16 + g;
  const float scale_log2 = a.scale * kLog2e;

  // Descriptors. Q (A, K-major): this group's 64 rows of each column block; k-step kk reads 16 halves
  // = 32 bytes at column block kk / 4. K (B, K-major): all kBc rows. V (B, MN-major): k-step ks reads
  // keys 16ks..16ks + 15 = 2048 bytes on; its column blocks (64 of d each) lie kKVBytes / kBlocks apart.
  // Each advanced by a constant per k-step (wgmma_descriptor.h's desc_advance) from Q's descriptor, built once, and
  // K's and V's at the tile's slot — written per call, built once a tile where the compiler merges the unrolled
  // k-steps' identical sw128_desc (pure arithmetic on the same slot).
  auto slot = [&](int j) { return (first + j) % T::kStages; };
  const uint64_t q_desc = sw128_desc(sQ + group * 64 * 128, 16, 1024);
  auto desc_q = [&](int kk) { return desc_advance(q_desc, (kk / 4) * (T::kBr * 128) + (kk % 4) * 32); };
  auto desc_k = [&](int j, int kk) {
    return desc_advance(sw128_desc(stage_k(slot(j)), 16, 1024), (kk / 4) * (kBc * 128) + (kk % 4) * 32);
  };
  auto desc_v = [&](int j, int ks) {
    return desc_advance(sw128_desc(stage_k(slot(j)) + T::kKVBytes, kBc * 128, 1024), ks * 16 * 128);
  };

  float s[kBc / 2];      // S (then P̃ in FP32) of the tile in the softmax: m64n(B_c) accumulator
  float o[D / 2] = {};   // O: m64nD accumulator
  uint32_t p[kBc / 16][4];  // P̃ in FP16 as A fragments, one per 16-key k-step
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};  // running max (scaled, log₂) and partial ℓ

  // S ← Q·K_jᵀ (issued, not waited for).
  auto issue_scores = [&](int j) {
    if constexpr (kFlash2Timeline)
      if (j == 0) first_issue = clock64();
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      if constexpr (kBc == 128) wgmma_m64n128k16_f16_ss(s, desc_q(kk), desc_k(j, kk), kk > 0);
      else wgmma_m64n176k16_f16_ss(s, desc_q(kk), desc_k(j, kk), kk > 0);
    }
  };
  // The online softmax of tile j on s (App. D): masks, new running max, P̃ in place; returns α per row.
  auto softmax = [&](int j, float (&alpha)[2]) {
    if constexpr (kFlash2Timeline) {
      last_scores = clock64();
      if (j == 0) first_scores = last_scores;
    }
    const int col0 = j * kBc;
    if (col0 + kBc > rb.all_see) mask_invisible<kBc>(s, col0, my_row0, t, a.q_len, a.kv_len, a.causal);  // diagonal, ragged end
    float shift[2];
    update_running_max<kBc>(s, scale_log2, m, l, alpha, shift);
#pragma unroll
    for (int n = 0; n < kBc / 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        s[4 * n + e] = ex2(fmaf(s[4 * n + e], scale_log2, -shift[e / 2]));  // −∞ → 0
        l[e / 2] += s[4 * n + e];
      }
  };
  // P̃ rounded to FP16 into the A fragments: k-step ks covers accumulator chunks 2ks and 2ks + 1.
  auto round_p = [&]() {
#pragma unroll
    for (int ks = 0; ks < kBc / 16; ++ks) {
      p[ks][0] = pack_half2(s[8 * ks + 0], s[8 * ks + 1]);
      p[ks][1] = pack_half2(s[8 * ks + 2], s[8 * ks + 3]);
      p[ks][2] = pack_half2(s[8 * ks + 4], s[8 * ks + 5]);
      p[ks][3] = pack_half2(s[8 * ks + 6], s[8 * ks + 7]);
    }
  };

  // O += P̃_j·V_j.
  auto issue_pv = [&](int j) {
    if constexpr (kFlash2Timeline) last_pv_issue = clock64();
#pragma unroll
    for (int ks = 0; ks < kBc / 16; ++ks) {
      if constexpr (D == 128) wgmma_m64n128k16_f16_rs_tb(o, p[ks], desc_v(j, ks), j > 0 || ks > 0);
      else wgmma_m64n64k16_f16_rs_tb(o, p[ks], desc_v(j, ks), j > 0 || ks > 0);
    }
  };
  // O ·= α of the next tile, P̃·V_j landed (at the landing, or before P̃·V_{j+1}'s issue: kv_ring.cuh's RescaleO). Once
  // the running maxima settle, α = 1 for every row of the warp: skipping the multiply by 1 is exact.
  auto finish_pv = [&](const float (&alpha)[2], bool rescale) {
    if (rescale && __any_sync(0xffffffffu, alpha[0] != 1.f || alpha[1] != 1.f)) {
#pragma unroll
      for (int n = 0; n < D / 8; ++n) {
        o[4 * n + 0] *= alpha[0], o[4 * n + 1] *= alpha[0];
        o[4 * n + 2] *= alpha[1], o[4 * n + 3] *= alpha[1];
      }
    }
  };
  run_loop(KvSteps{[&] { SwizzledCopier<2 * D, T::kBr, T::kConsumers>(threadIdx.x).copy(sQ, q, 2 * D, a.q_len - rb.row0); },
                   load_kv, issue_scores, issue_pv, softmax, round_p, finish_pv,
                   [&] { pin_registers(s); },
                   [&] {
                     pin_registers(o);
                     pin_registers(p);
                   }},
           rb.tiles);
  if constexpr (kFlash2Timeline) {
    timeline.mark(kTimelineLoopDone);
    timeline.put(kTimelineFirstIssue, first_issue);
    timeline.put(kTimelineFirstScores, first_scores);
    timeline.put(kTimelineLastScores, last_scores);
    timeline.put(kTimelineLastPvIssue, last_pv_issue);
  }

  // Epilogue: O = G/ℓ (kFlash2RowScale), L = m + log ℓ (out_scale 1 is exact).
  float* lse = a.lse + size_t(rb.bh) * a.q_len;
  if constexpr (TmaStore) {  // this warpgroup's rows of each column block of Q's tile (kFlash2GridStore)
    char* tile = sQ + group * 64 * 128;
    stage_rows_sw128<D, kFlash2RowScale>(o, l, m, my_row0, warp, lane, a.q_len, tile, T::kBr * 128, lse, 1.f, 0.f);
    if constexpr (kFlash2Timeline) timeline.mark(kTimelineStaged);
    fence_proxy_async();        // the stmatrix writes, before the copy engine reads them
    warpgroup_sync(4 + group);  // kv_ring.cuh's barriers are 1–3
    if constexpr (kFlash2Timeline) timeline.mark(kTimelineMet);
    const int row0 = rb.row0 + 64 * group;
    if (threadIdx.x % 128 == 0 && row0 < a.q_len) {
#pragma unroll
      for (int c = 0; c < D / 64; ++c) tma_store_3d(o_map, tile + c * T::kBr * 128, 64 * c, row0, rb.bh);
      bulk_commit();
      bulk_wait_read();  // the CTA's shared memory stays until the engine has read it
    }
  } else {
    store_rows<D, kFlash2RowScale>(o, l, m, my_row0, t, a.q_len, a.o + size_t(rb.bh) * a.q_len * D, lse, 1.f, 0.f);
  }
  if constexpr (kFlash2Timeline) {
    timeline.mark(kTimelineStored);
    timeline.put(kTimelineStoredNs, timeline_global_ns());
  }
}

template <int D, bool Producer, bool PingPong, int Bc, bool Persistent, bool Dynamic>
__global__ void __launch_bounds__(HopperTile<D, Producer, Bc>::kThreads, 1)
    flash2_sm90_kernel(Flash2Args a, const __grid_constant__ CUtensorMap k_map,
                       const __grid_constant__ CUtensorMap v_map, const __grid_constant__ CUtensorMap q_map,
                       const __grid_constant__ CUtensorMap o_map) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using T = HopperTile<D, Producer, Bc>;
  static_assert(Producer || !Persistent, "a persistent CTA's Q comes from the producer");
  static_assert(Persistent || !Dynamic, "the dynamic order is a persistent CTA's");
  constexpr bool kProducerQ = kProducerLoadsQ<Persistent>;
  TimelineStart start;
  if constexpr (kFlash2Timeline) start = timeline_start();
  extern __shared__ char smem_raw[];
  char* smem = smem_raw + ((1024u - (smem_addr(smem_raw) & 1023u)) & 1023u);
  auto stage_k = [&](int s) { return smem + T::kQBytes + s * 2 * T::kKVBytes; };
  const int blocks = (a.q_len + T::kBr - 1) / T::kBr, items = blocks * a.batch * a.q_heads;
  auto row_block = [&](int w) {
    int bh, x;
    flash2_sm90_persistent_order(a, w, blocks, bh, x);
    return RowBlock(a, bh, x, blocks, T::kBr, T::kBc);
  };
  auto grid_block = [&] { return RowBlock(a, blockIdx.y, blockIdx.x, blocks, T::kBr, T::kBc); };

  if constexpr (Producer) {  // tma_fill.cuh: the producer warpgroup copies, the consumers compute
    // K and V of a slot on barriers of their own (kv_ring.cuh's ProducerFillsKV): K_{j+2} loads while P·V_j reads V_j.
    // Where the producer loads Q (kProducerQ: persistent, or a grid CTA by kFlash2GridQ), each warpgroup's 64 rows on
    // barriers of their own (ProducerFillsQKV); persistent, the ring runs on across the CTA's row blocks (`first`: its
    // tiles so far) — the next block's Q and K/V load under this one's end.
    __shared__ uint64_t full[2 * T::kStages], empty[2 * T::kStages], q_full[2], q_empty[2];
    // Dynamic (a.dynamic_order; FlashAttention-3's dynamic scheduler): the producer takes each next row block
    // from a counter in the workspace (zeroed by the launch) and hands it to the consumers through two slots of
    // shared memory on barriers of their own — slot k mod 2 holds the successor of the CTA's k-th block.
    __shared__ uint64_t next_full[2], next_empty[2];
    __shared__ int next_block[2];
    constexpr uint32_t kPartBytes[2] = {T::kKVBytes, T::kKVBytes};
    // Tiles [from, to) of row block rb, the ring's tiles first + from … (K: part 0, V: part 1; a load per 64 channels).
    auto produce_tiles = [&](const RowBlock& rb, int first, int from, int to) {
      kv_produce<T::kStages>(
          to - from, kPartBytes,
          [&](int part, int j, uint64_t* bar) {
            char* st = stage_k((first + from + j) % T::kStages) + part * T::kKVBytes;
            const CUtensorMap* map = part == 0 ? &k_map : &v_map;
#pragma unroll
            for (int c = 0; c < D / 64; ++c)
              tma_load_3d(st + c * T::kBc * 128, map, 64 * c, (from + j) * T::kBc, rb.bkv, bar);
            if constexpr (kFlash2Timeline)
              if (part == 0 && from + j == 0) timeline_record<T::kBr>(a, rb, 0).mark(kTimelineKIssued);
          },
          full, empty, first + from);
    };
    // Warpgroup g's 64 rows of rb's Q, once it has given back block n − 1's (its last S landed): Q's phase n mod 2.
    auto produce_q = [&](const RowBlock& rb, int n, int g) {
      if (n > 0) mbar_wait(&q_empty[g], (n - 1) & 1);
      mbar_arrive_expect_tx(&q_full[g], 64 * D * 2);
#pragma unroll
      for (int c = 0; c < D / 64; ++c)
        tma_load_3d(smem + c * T::kBr * 128 + g * 64 * 128, &q_map, 64 * c, rb.row0 + 64 * g, rb.bh, &q_full[g]);
      if constexpr (kFlash2Timeline) timeline_record<T::kBr>(a, rb, g).mark(kTimelineQIssued);
    };
    // Row block rb's Q and tiles, the n-th block with a tile (Q's phase n mod 2): warpgroup 0's Q, the first K/V
    // tile, warpgroup 1's Q, the rest — so the first tile waits for no warpgroup but the first to finish the previous
    // block. A block with no tile loads nothing (the consumers store zeros).
    auto produce_block = [&](const RowBlock& rb, int first, int n) {
      if (rb.tiles <= 0) return;
      produce_q(rb, n, 0);
      produce_tiles(rb, first, 0, 1);
      produce_q(rb, n, 1);
      produce_tiles(rb, first, 1, rb.tiles);
    };
    // kFlash2GridPrefetch: the row block one wave on (%nsmid CTAs later in the grid's order), its Q and first K/V tile.
    auto prefetch_next_wave = [&] {
      if constexpr (kFlash2GridPrefetch == Prefetch::next_wave) {
        unsigned sms;
        asm("mov.u32 %0, %%nsmid;" : "=r"(sms));
        const unsigned next = blockIdx.y * gridDim.x + blockIdx.x + sms;
        if (next >= gridDim.x * gridDim.y) return;
        const RowBlock nb(a, int(next / gridDim.x), int(next % gridDim.x), blocks, T::kBr, T::kBc);
        if (nb.tiles <= 0) return;
        prefetch_l2(a.q + (size_t(nb.bh) * a.q_len + nb.row0) * D, uint32_t(min(T::kBr, a.q_len - nb.row0) * D * 2));
        const uint32_t first_tile = uint32_t(min(T::kBc, a.kv_len) * D * 2);
        prefetch_l2(a.k + size_t(nb.bkv) * a.kv_len * D, first_tile);
        prefetch_l2(a.v + size_t(nb.bkv) * a.kv_len * D, first_tile);
      }
    };
    const bool consumer = split_warpgroups_with<T::kStages, T::kConsumers, 2>(
        [&] {
          for (int g = 0; g < 2; ++g) {
            if constexpr (kProducerQ) mbar_init(&q_full[g], 1), mbar_init(&q_empty[g], 128);
            if constexpr (Persistent) mbar_init(&next_full[g], 1), mbar_init(&next_empty[g], T::kConsumers);
          }
        },
        [&] {
          prefetch_tensor_map(&k_map);
          prefetch_tensor_map(&v_map);
          if constexpr (Persistent) {
            prefetch_tensor_map(&q_map);
            // Dynamic: the k-th block's successor is taken and handed over before the block's loads (the consumers
            // read it as they start the block, for their turns).
            for (int w = blockIdx.x, first = 0, n = 0, k = 0; w < items; ++k) {
              int next = w + int(gridDim.x);
              if constexpr (Dynamic) {  // CTAs start at blockIdx.x: the counter hands out the rest
                next = atomicAdd(reinterpret_cast<int*>(a.workspace), 1) + int(gridDim.x);
                if (k >= 2) mbar_wait(&next_empty[k & 1], ((k >> 1) - 1) & 1);
                next_block[k & 1] = next;
                mbar_arrive(&next_full[k & 1]);  // release: the consumers read next_block after their wait
              }
              const RowBlock rb = row_block(w);
              produce_block(rb, first, n);
              if (rb.tiles > 0) first += rb.tiles, ++n;
              w = next;
            }
          } else if constexpr (kProducerQ) {  // the persistent CTA's order for its one block
            prefetch_tensor_map(&q_map);
            produce_block(grid_block(), 0, 0);
            prefetch_next_wave();
          } else {
            const RowBlock rb = grid_block();
            produce_tiles(rb, 0, 0, rb.tiles);
            prefetch_next_wave();
          }
        },
        full, empty);
    if (!consumer) return;
    auto ring = [&](auto&& steps, int tiles, auto fills) {
      kv_ring<T::kStages, PingPong, kFlash2PvWait, kFlash2RescaleO>(tiles, steps, full, empty, fills);
    };
    if constexpr (Persistent) {
      bool turns_open = false;  // the ping-pong's turns run on from the last block with a tile (kv_ring.cuh)
      for (int w = blockIdx.x, first = 0, n = 0, k = 0; w < items; ++k) {
        const RowBlock rb = row_block(w);
        int next = w + int(gridDim.x);
        if constexpr (Dynamic) {  // the producer's k-th hand-over: this block's successor
          mbar_wait(&next_full[k & 1], (k >> 1) & 1);
          next = next_block[k & 1];
          mbar_arrive(&next_empty[k & 1]);
        }
        // The turns close where the next block has no tile or there is none (a later block with a tile opens them
        // again); n: the blocks with a tile before this one. A block with none takes no turn (kv_ring returns at once).
        const bool next_has_tiles = next < items && row_block(next).tiles > 0;
        const ProducerFillsQKV fills{first, q_full, q_empty, n & 1, !turns_open, !next_has_tiles};
        attend_row_block<D, Producer, Bc, false>(a, rb, first, smem, start, &o_map,
                                                 [&](auto&& steps, int tiles) { ring(steps, tiles, fills); });
        if (rb.tiles > 0) first += rb.tiles, ++n, turns_open = next_has_tiles;
        w = next;
      }
    } else {  // one block (with the producer's Q: its phase 0, the turns opened and closed in it)
      constexpr bool kTmaStore = kTmaStoresO<Producer, Persistent>;
      auto ring_of_block = [&](auto&& steps, int tiles) {
        if constexpr (kProducerQ) ring(steps, tiles, ProducerFillsQKV{0, q_full, q_empty, 0});
        else ring(steps, tiles, ProducerFillsKV{});
      };
      attend_row_block<D, Producer, Bc, kTmaStore>(a, grid_block(), 0, smem, start, &o_map, ring_of_block);
    }
  } else {
    attend_row_block<D, Producer, Bc, false>(a, grid_block(), 0, smem, start, &o_map,
                                             [&](auto&& steps, int tiles) { kv_pipeline(tiles, steps); });
  }
#endif
}

template <int D, bool Producer, bool PingPong, int Bc = HopperTile<D, Producer>::kBc, bool Persistent = false,
          bool Dynamic = false>
cudaError_t launch(const Flash2Args& a, cudaStream_t stream) {
  using T = HopperTile<D, Producer, Bc>;
  // Unread without the producer, q_map also where the consumers load Q, o_map also where they store O by rows.
  CUtensorMap k_map{}, v_map{}, q_map{}, o_map{};
  if constexpr (Producer) {  // K and V alike: (heads, kv_len, d) FP16 rows, 64-channel boxes (tensor_map.h)
    const int64_t heads = int64_t(a.batch) * a.kv_heads;
    cudaError_t e = fp16_rows_tensor_map(k_map, a.k, heads, a.kv_len, D, T::kBc);
    if (e == cudaSuccess) e = fp16_rows_tensor_map(v_map, a.v, heads, a.kv_len, D, T::kBc);
    // Q: (B·Hq, q_len, d), a warpgroup's 64 rows a box.
    if (e == cudaSuccess && kProducerLoadsQ<Persistent>)
      e = fp16_rows_tensor_map(q_map, a.q, int64_t(a.batch) * a.q_heads, a.q_len, D, 64);
    // O: Q's shape and box, so a warpgroup's TMA store reads the tile in the layout a Q load writes.
    if (e == cudaSuccess && kTmaStoresO<Producer, Persistent>)
      e = fp16_rows_tensor_map(o_map, a.o, int64_t(a.batch) * a.q_heads, a.q_len, D, 64);
    if (e != cudaSuccess) return e;
  }
  auto* kernel = flash2_sm90_kernel<D, Producer, PingPong, Bc, Persistent, Dynamic>;
  if (const cudaError_t e =
          cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(T::kSmemBytes));
      e != cudaSuccess)
    return e;
  const int blocks = (a.q_len + T::kBr - 1) / T::kBr;
  dim3 grid(blocks, a.batch * a.q_heads);
  Flash2Args args = a;
  if constexpr (Persistent) {  // one CTA per SM (its shared memory takes the SM's), each looping over row blocks
    int device = 0, sms = 0, l2 = 0;
    cudaError_t e = cudaGetDevice(&device);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device);
    if (e != cudaSuccess) return e;
    grid = dim3(unsigned(std::min<int64_t>(int64_t(blocks) * a.batch * a.q_heads, sms)));
    args.band_heads = a.head_major ? 1 : flash2_sm90_band_heads(a, l2);  // a band of one head: the grid's order
    if constexpr (Dynamic) {  // the row blocks' counter (flash2_workspace_bytes), from 0 at every launch
      if (a.workspace == nullptr) return cudaErrorInvalidValue;
      if (const cudaError_t z = cudaMemsetAsync(a.workspace, 0, sizeof(int), stream); z != cudaSuccess) return z;
    }
  }
  kernel<<<grid, T::kThreads, T::kSmemBytes, stream>>>(args, k_map, v_map, q_map, o_map);
  return cudaGetLastError();
}

template <int D, bool Persistent, bool Dynamic = false>
cudaError_t launch_producer(const Flash2Args& a, cudaStream_t stream) {
  if constexpr (find_kernel_traits("flash2", D, 90)->block_c_not_causal == kWideTile)  // d 128 (kernel_traits.h)
    if (flash2_sm90_wide_tile(a))
      return a.ping_pong ? launch<D, true, true, kWideTile, Persistent, Dynamic>(a, stream)
                         : launch<D, true, false, kWideTile, Persistent, Dynamic>(a, stream);
  constexpr int kBc = HopperTile<D, true>::kBc;
  return a.ping_pong ? launch<D, true, true, kBc, Persistent, Dynamic>(a, stream)
                     : launch<D, true, false, kBc, Persistent, Dynamic>(a, stream);
}

template <int D>
cudaError_t launch_d(const Flash2Args& a, cudaStream_t stream) {
  if (!a.tma_producer) return launch<D, false, false>(a, stream);  // kv_pipeline.cuh has no ping-pong
  if (!flash2_sm90_persistent(a)) return launch_producer<D, false>(a, stream);
  return a.dynamic_order ? launch_producer<D, true, true>(a, stream) : launch_producer<D, true>(a, stream);
}

}  // namespace

bool flash2_sm90_persistent(const Flash2Args& a) { return a.persistent && a.tma_producer; }

int flash2_sm90_band_heads(const Flash2Args& a, int l2_bytes) {
  return persistent_band_heads(a.batch * a.q_heads, a.q_heads / std::max(1, a.kv_heads), a.kv_len, a.head_dim, l2_bytes);
}

bool flash2_sm90_wide_tile(const Flash2Args& a) {
  const KernelTraits* t = find_kernel_traits("flash2", a.head_dim, 90);
  return a.wide_tile && a.tma_producer && !a.causal && t && t->block_c_not_causal == kWideTile;
}

cudaError_t flash2_sm90_forward(const Flash2Args& a, cudaStream_t stream) {
  if (a.splits != 1) return cudaErrorInvalidValue;
  switch (a.head_dim) {
    case 64: return launch_d<64>(a, stream);
    case 128: return launch_d<128>(a, stream);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace attnlab::kernels
