// attnlab kernels: the KV loop of kv_pipeline.cuh (the same KvSteps, S_{j+1} issued before P·V_j) with the
// per-tile CTA barrier replaced by mbarriers on a deeper ring, so the two warpgroups of a CTA need not meet
// every tile: one may run up to a tile ahead of the other, and its softmax then runs under the other's MMAs
// (what FlashAttention-3's ping-pong schedules explicitly).
//
// kStages tiles in shared memory; each tile t has two mbarriers of the CTA's thread count:
//   full[t mod kStages]   every thread arrives once its own cp.async copies of tile t have landed (and after
//                         fence.proxy.async: generic-proxy writes before the tensor cores' reads); a thread
//                         waits on it before its warpgroup issues S_t. Copies of tile t are issued 4 tiles
//                         ahead (at iteration t − 4) and arrived at iteration t − 2: a thread reading tile t+1
//                         needs the others only to have reached iteration t − 1.
//   empty[t mod kStages]  every thread arrives once its P·V_t has landed (at iteration t; with PvWait
//                         waits_ahead after iteration t + 1's mbarrier waits, moved up to iteration t); the copies of
//                         tile t + kStages wait on it (issued at iteration t + 2: the others need only have passed
//                         iteration t + 1's waits).
// A barrier serves tile t, t + kStages, …: its phase parity is (t / kStages) mod 2. Every thread issues and
// commits one copy group per iteration (empty where no tile is left), so cp.async.wait_group counts alike.
// The last tile is peeled out of the loop, as in kv_pipeline.cuh (a branch around a wgmma serializes it).
//
// Converting rings (a `convert` step; fireq_prefill_sm90.cu's INT4 mode): load_kv(t) copies tile t's raw
// bytes into a staging area of the kernel's, and convert(t) — called by every thread once its own copies of
// tile t have landed (iteration t − 2), before the fence and its arrival on full[t] — turns the bytes this
// thread copied into its share of the tile in slot t mod kStages (st.shared). The slot is written only then,
// so the empty wait moves from the copies to the conversion: it waits for tile t − kStages's P·V, which
// every thread has waited for by iteration t − kStages. Tiles j − 1 … j + 2 are then resident at iteration j (the
// other warpgroup may be a tile behind), so 4 slots suffice; staging holds tiles j + 2 … j + 4 (3 slots, the
// kernel's, each read only by the thread that copied into it, tile t in slot t mod 3; the prologue converts
// tiles 0 and 1 before it issues tile 3's copies).
//
// Filled rings (ProducerFills): another warpgroup writes the slots and arrives on full[t]; it waits on empty[t]
// before it refills the slot with tile t + kStages. The consumers only wait, compute and arrive on empty.
#pragma once

#include "core/kernel_traits.h"
#include "kernels/common/kv_pipeline.cuh"

#include <algorithm>
#include <cstddef>
#include <type_traits>

namespace attnlab::kernels {

// kSm90SmemPerCta and ring_slots, the rings' sizes: core/kernel_traits.h (the cost model reads them too).

__device__ __forceinline__ void mbar_init(uint64_t* bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {  // release, CTA scope
  asm volatile("{\n.reg .b64 state;\nmbarrier.arrive.shared::cta.b64 state, [%0];\n}\n" ::"r"(smem_addr(bar)) : "memory");
}
// try_wait with a suspend-time hint: a thread whose phase is not complete may stay suspended until it completes, up to
// the hint's 10 ms (a hint: it may wake earlier), instead of returning after the hardware's own, evidently short,
// limit. Without the hint (flash2 wgmma v1–v5) the consumers' waits spun: Nsight Compute on the H100 at B 4, H 16, N 4k, d 128 counted 15.8 M SYNCS and
// 18.2 M BRA warp instructions where FlashAttention-3's kernel (the same tile, CUTLASS's ClusterBarrier::wait with
// this hint) executes 1.4 M and 1.9 M — issue slots the other warpgroup's softmax shares
// (kernels/bench/h100-flash2-fa3-cudnn-ncu-2026-12-06.txt).
inline constexpr uint32_t kMbarSuspendHintNs = 10'000'000;
__device__ __forceinline__ void mbar_wait(uint64_t* bar, int parity) {  // acquire, CTA scope
  asm volatile(
      "{\n.reg .pred done;\nWAIT:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1, %2;\n"
      "@!done bra WAIT;\n}\n" ::"r"(smem_addr(bar)),
      "r"(parity), "r"(kMbarSuspendHintNs)
      : "memory");
}

// Named barriers 1 and 2 (0 is __syncthreads) for ping-pong: warpgroup g waits on 1 + g before issuing its
// MMAs, and lets the other go (arrives on 2 − g) once it has. Both warpgroups' counts: 256 threads.
__device__ __forceinline__ void named_sync(int id) { asm volatile("bar.sync %0, 256;\n" ::"r"(id) : "memory"); }
__device__ __forceinline__ void named_arrive(int id) { asm volatile("bar.arrive %0, 256;\n" ::"r"(id) : "memory"); }
// Named barriers 4 and 5: a warpgroup's own 128 threads (turbo_prefill_sm90.cu's l. 10 maximum over its four warps;
// warpgroup g takes 4 + g). Shared-memory writes before it are visible to the warpgroup after it.
__device__ __forceinline__ void warpgroup_sync(int id) { asm volatile("bar.sync %0, 128;\n" ::"r"(id) : "memory"); }

// kPingPong (two warpgroups): their MMA issues alternate — warpgroup 0, then 1, then 0 … — so that while one
// warpgroup's MMAs run, the other's softmax does (FlashAttention-3 §3.1's ping-pong scheduling). Each issues
// tiles + 1 times (S_0, then S_{j+1} with P·V_j, then the last P·V); warpgroup 1 opens the first turn and
// skips its last hand-over, so every bar.sync meets exactly one bar.arrive — per call, or over a persistent CTA's
// row blocks (ProducerFillsQKV's opens_turns and closes_turns, below).
// The step of a ring that copies tiles straight into their slots.
struct NoConvert {
  __device__ void operator()(int) const {}
};
// The tag of a ring whose tiles a producer warpgroup fills (FlashAttention-3's warp specialization; e.g.
// tma_fill.cuh's kv_produce): the consumers' kv_ring then issues no copy and arrives on no full barrier; it
// loads Q (its own cp.async, then a barrier among the 256 consumer threads, named barrier 3) and computes. The
// kernel initializes the barriers — full[] counts the producer's arrivals, empty[] the 256 consumers — and
// syncs the CTA before the warpgroups part.
struct ProducerFills {};
// A filled ring whose K and V parts of a slot have barriers of their own (FlashAttention-3's separate K and V
// pipelines; tma_fill.cuh's kv_produce with two parts): full[s] and empty[s] for tile s's K, full[kStages + s] and
// empty[kStages + s] for its V. The consumers wait for K_{j+1} before S_{j+1} and for V_j before P·V_j, and give
// K's slot back once S has landed — an iteration before V's — so K_{j+2} loads while P·V_j still reads V_j. With
// two slots (flash2's 176-key tile) that is what keeps the loads a whole iteration ahead of the MMAs.
struct ProducerFillsKV {};
// ProducerFillsKV for one row block of a persistent CTA (flash2_sm90.cu's row_blocks = persistent), or of a grid CTA
// whose producer loads Q (flash2's kFlash2GridQ; first = 0, q_parity = 0): the producer also loads Q — each consumer
// warpgroup's 64 rows on a barrier pair of its own — and, persistent, the ring runs on across the CTA's row blocks.
// `first` is the ring's count of tiles before this block's (slots and phases go on from there); the warpgroup waits
// on q_full[group] (phase q_parity, the block's count mod 2) instead of copying Q, and arrives on q_empty[group] (128
// arrivals: its threads) once its last S has landed — Q's last reader — so the producer loads the next block's Q
// while this one's last P·V and its epilogue run.
// With ping-pong the turns run on across the CTA's row blocks as its ring does (FlashAttention-3's persistent kernel
// keeps its warp-scheduler barrier's order across tiles): warpgroup 1 opens the first turn only where the turns are
// not already open (`opens_turns`: the CTA's first block with a tile, or the first after a block with none) and skips
// its last hand-over only where the next block has no tile or there is none (`closes_turns`), so warpgroup 0
// issues the next block's first S as soon as warpgroup 1 has issued this block's last P·V — not after warpgroup 1's
// epilogue, where a grid's CTA (and v4's persistent one) drains the pipeline at every row block.
struct ProducerFillsQKV {
  int first;
  uint64_t* q_full;
  uint64_t* q_empty;
  int q_parity;
  bool opens_turns = true, closes_turns = true;
};

// Where a warpgroup waits for its P·V_j (FlashAttention-3 §3.2 waits after the softmax of tile j + 1, which runs under
// it). after_softmax: right after it in the program (wgmma v1–v6 of flash2; every other kernel). waits_ahead (flash2
// v8): after it too, but behind iteration j + 1's mbarrier waits, moved up to the end of iteration j — their try_wait
// loops end the softmax's basic block, so ptxas cannot move the wait above the softmax (see land_pv below). Two
// orders measured and dropped (kernels/PERF.md, wgmma v7 and v8): the wait at the top of iteration j + 1 after its
// waits (the same cycle, the loop not rotated: the landing skipped at j = 0 cost ptxas the 176-key tile's registers),
// and between the row maxima and the exponentials behind a warpgroup-wide vote (the vote's barrier cost more than
// the exponentials under P·V gained).
enum class PvWait { after_softmax, waits_ahead };
// Where O ·= α_j runs (the steps' finish_pv(α, true); O holds P·V_{j−1}, landed). on_landing: as soon as P·V_{j−1} has
// landed, at the end of iteration j − 1 — before the turn, so the next issue waits for it. under_scores
// (FlashAttention-3's order, its rescale_o between the two GEMMs): in iteration j's turn, between S_{j+1}'s issue and
// P·V_j's, while the tensor cores run S_{j+1}; a second wgmma.fence then orders the multiplies before P·V_j reads O.
// The same multiplies on the same values before the same P·V: the same bits. under_scores needs a finish_pv(α, true)
// that is O's rescale alone, and finish_pv(α, false) nothing, as flash2's (other kernels finish P·V there: int_flash
// dequantizes it).
enum class RescaleO { on_landing, under_scores };

template <int kStages, bool kPingPong = false, PvWait kPvWait = PvWait::after_softmax,
          RescaleO kRescaleO = RescaleO::on_landing, class Steps, class Convert = NoConvert>
__device__ __forceinline__ void kv_ring(int tiles, Steps& k, uint64_t* full, uint64_t* empty, Convert convert = {}) {
  constexpr bool kWaitsAhead = kPvWait == PvWait::waits_ahead;
  constexpr bool kProducerQ = std::is_same_v<Convert, ProducerFillsQKV>;
  constexpr bool kSplitKV = kProducerQ || std::is_same_v<Convert, ProducerFillsKV>;
  constexpr bool kFilled = kSplitKV || std::is_same_v<Convert, ProducerFills>;
  constexpr bool kConverts = !kFilled && !std::is_same_v<Convert, NoConvert>;
  static_assert(kStages >= (kConverts ? 4 : kFilled ? 2 : 6),
                "tiles j−2 … j+3 resident while j+4 loads (converting: j−1 … j+2; filled: the producer waits on "
                "empty, any depth ≥ 2)");
  // waits_ahead gives tile t's slot back after iteration t + 1's wait for tile t + 2's K (moved up to iteration t): in
  // a filled ring of two whole-tile slots that K would be the one the producer can write only into t's slot — no
  // iteration would ever pass its wait. Split rings free K a tile earlier; three slots leave one between.
  static_assert(!kWaitsAhead || kSplitKV || !kFilled || kStages >= 3,
                "waits_ahead in a filled ring of whole-tile slots needs three of them");
  constexpr int kAhead = 4;  // copies of tile t issued at iteration t − kAhead
  if (tiles <= 0) return;
  if constexpr (!kFilled) {
    const int threads = blockDim.x;
    if (threadIdx.x == 0)
      for (int s = 0; s < kStages; ++s) mbar_init(&full[s], threads), mbar_init(&empty[s], threads);
    __syncthreads();  // the barriers initialized before anyone uses them
  }
  int first = 0;  // the ring's tiles before this call's (ProducerFillsQKV: a persistent CTA's earlier row blocks)
  if constexpr (kProducerQ) first = convert.first;
  auto parity = [&](int t) { return ((first + t) / kStages) & 1; };
  auto slot = [&](int t) { return (first + t) % kStages; };
  const int group = threadIdx.x / 128;
  // Tile t's K (all of it where K and V share a barrier) and, split, its V: waited for, given back. With the
  // producer's Q, the last tile's S is Q's last reader: the warpgroup gives Q back with that K.
  auto wait_k = [&](int t) { mbar_wait(&full[slot(t)], parity(t)); };
  auto wait_v = [&](int t) {
    if constexpr (kSplitKV) mbar_wait(&full[kStages + slot(t)], parity(t));
  };
  auto release_k = [&](int t) {
    if constexpr (kSplitKV) mbar_arrive(&empty[slot(t)]);
    if constexpr (kProducerQ)
      if (t == tiles - 1) mbar_arrive(&convert.q_empty[group]);
  };
  auto release_v = [&](int t) { mbar_arrive(&empty[(kSplitKV ? kStages : 0) + slot(t)]); };
  int turns_left = tiles + 1;  // this warpgroup's MMA issues
  bool opens_turns = true, closes_turns = true;  // ProducerFillsQKV: the turns run on across row blocks
  if constexpr (kProducerQ) opens_turns = convert.opens_turns, closes_turns = convert.closes_turns;
  auto my_turn = [&] {
    if constexpr (kPingPong) named_sync(1 + group);
  };
  auto your_turn = [&] {
    if constexpr (kPingPong)
      if (--turns_left > 0 || group == 0 || !closes_turns) named_arrive(2 - group);
  };
  if constexpr (kPingPong)
    if (group == 1 && opens_turns) named_arrive(1);  // warpgroup 0 goes first
  // Prologue: Q with tile 0, then tiles 1 … kAhead − 1, one group each (filled: Q alone; the producer's Q: its wait).
  if constexpr (kProducerQ) {
    mbar_wait(&convert.q_full[group], convert.q_parity);
  } else {
    k.load_q();
  }
  if constexpr (kFilled && !kProducerQ) {
    cp_async_commit();
    cp_async_wait<0>();
    fence_proxy_async();
    named_sync(3);  // every consumer's share of Q
  }
  if constexpr (!kFilled) k.load_kv(0);
  cp_async_commit();
  for (int t = 1; t < kAhead && !kFilled; ++t) {
    if constexpr (kConverts)
      if (t == kAhead - 1) {  // tiles 0 and 1 out of staging before tile 3's copies take tile 0's slot
        cp_async_wait<kAhead - 3>();
        convert(0);
        if (tiles > 1) convert(1);
      }
    if (t < tiles) k.load_kv(t);
    cp_async_commit();
  }
  if constexpr (!kFilled) {
    cp_async_wait<kAhead - 2>();  // Q, tiles 0 and 1 (this thread's copies)
    fence_proxy_async();
    mbar_arrive(&full[0]);
    if (tiles > 1) mbar_arrive(&full[1]);
  }
  wait_k(0);
  my_turn();
  wgmma_fence();
  k.issue_scores(0);
  wgmma_commit();
  your_turn();
  wgmma_wait<0>();
  k.pin_scores();
  release_k(0);
  float alpha[2];
  k.softmax(0, alpha);
  k.pack_p();
  if constexpr (kWaitsAhead) {  // iteration 0's waits, ahead of it
    if (tiles > 1) wait_k(1);
    wait_v(0);
  }
  // P·V_t has landed: V_t given back, O ·= α of tile t + 1 (under_scores: at P·V_{t+1}'s issue), P̃_{t+1} rounded to
  // A fragments — after the softmax of tile t + 1 (waits_ahead: and after iteration t + 1's mbarrier waits). Why
  // waits_ahead: the wait has no operands, so ptxas schedules it as early as its basic block allows, and the H100's
  // SASS of flash2 v6 had it before the softmax's first row maximum — 11.9% of the kernel's warp samples stalled on
  // it, where FlashAttention-3's comes after its row maxima (0.5%; kernels/PERF.md, wgmma v7). The try_wait loops of
  // the next waits end the softmax's basic block, so all of it runs under P·V_t. The same operations in the same
  // order either way.
  auto land_pv = [&](int t) {
    wgmma_wait<0>();  // P·V_t
    k.pin_pv();
    release_v(t);
    if constexpr (kRescaleO == RescaleO::on_landing) k.finish_pv(alpha, true);
    k.pack_p();
  };
  // P·V_t's issue: under_scores rescales O first (α of tile t, from the softmax before), pinned (the multiplies on O
  // stay before the fence, as FlashAttention-3's warpgroup_fence_operand keeps them) and fenced.
  auto issue_pv = [&](int t) {
    if constexpr (kRescaleO == RescaleO::under_scores) {
      k.finish_pv(alpha, true);
      k.pin_pv();
      wgmma_fence();
    }
    k.issue_pv(t);
  };
  for (int j = 0; j + 1 < tiles; ++j) {
    // Tile j + 4 into the slot of tile j − 2, once every thread is done with that one.
    if constexpr (!kFilled) {
      if (j + kAhead < tiles) {
        if (!kConverts && j + kAhead >= kStages)
          mbar_wait(&empty[(j + kAhead) % kStages], parity(j + kAhead - kStages));
        k.load_kv(j + kAhead);
      }
      cp_async_commit();
      // This thread's copies of tile j + 2 have landed (tiles j + 3, j + 4 may still be in flight).
      cp_async_wait<kAhead - 2>();
      if constexpr (kConverts) {
        if (j + 2 < tiles) {
          if (j + 2 >= kStages) mbar_wait(&empty[(j + 2) % kStages], parity(j + 2 - kStages));
          convert(j + 2);
        }
      }
      fence_proxy_async();
      if (j + 2 < tiles) mbar_arrive(&full[(j + 2) % kStages]);
    }
    if constexpr (!kWaitsAhead) {  // (waits_ahead: at the end of iteration j − 1)
      wait_k(j + 1);  // everyone's copies of tile j + 1 (split: its K)
      wait_v(j);
    }
    k.pin_pv();
    my_turn();
    wgmma_fence();
    k.issue_scores(j + 1);
    wgmma_commit();
    issue_pv(j);
    wgmma_commit();
    your_turn();
    wgmma_wait<1>();  // S_{j+1}; P·V_j may still run
    k.pin_scores();
    release_k(j + 1);
    k.softmax(j + 1, alpha);
    if constexpr (kWaitsAhead) {
      k.pin_scores();  // P̃_{j+1} computed here, before the next waits (under P·V_j)
      if (j + 2 < tiles) wait_k(j + 2);  // iteration j + 1's waits, whose try_wait loops end the softmax's block
      wait_v(j + 1);
    }
    land_pv(j);
  }
  if constexpr (!kWaitsAhead) wait_v(tiles - 1);  // (waits_ahead: in the last iteration, or the prologue)
  k.pin_pv();
  my_turn();
  wgmma_fence();
  issue_pv(tiles - 1);
  wgmma_commit();
  your_turn();
  wgmma_wait<0>();
  k.pin_pv();
  if constexpr (kProducerQ) release_v(tiles - 1);  // the ring runs on: the producer refills this slot for the next block
  k.finish_pv(alpha, false);
  cp_async_wait<0>();  // (only empty groups can be left; none may outlive the CTA's shared memory)
}

}  // namespace attnlab::kernels
