// attnlab kernels: the consumer loop of FireQ Alg. 1 (l. 6–23, "three-stage attention layer forward at
// prefill phase") on the six-tile ring of kv_ring.cuh. At iteration j a warpgroup issues P̂_{j−2}·V_{j−2}
// (l. 11) and S_j = Q·K_jᵀ (l. 14) without waiting, then runs the softmax of S_{j−1} (l. 12–15) while both
// are in the tensor cores, then waits for P̂_{j−2}·V_{j−2}, rescales O (l. 16) and packs P̂_{j−1}; S_j is
// waited for at the next iteration (l. 17). Three tiles in flight, against kv_ring.cuh's two (S_{j+1} issued
// before P·V_j, S_{j+1} waited before its softmax).
//
// The price is a second score accumulator: S_{j−1} is read while S_j is written. The two live in `sa` and
// `sb` (tile t's in sa when t is even), so the loop runs two iterations per trip and every register index is
// static. The steps are kv_ring.cuh's KvSteps, except that issue_scores, softmax and pack_p take the score
// array: issue_scores(j, s), softmax(j, s, alpha), pack_p(s); pin_scores is unused (the waits pin the array).
//
// Ring bookkeeping: copies of tile t are issued at iteration t − 3 (the slot of tile t − 6, whose P·V landed
// at iteration t − 4: the empty barrier then waits only on the other warpgroup), and a thread arrives on
// full[t] at iteration t − 1 (cp.async.wait_group 2: tiles t + 1, t + 2 may still be in flight). Every thread
// commits one copy group per iteration. Ping-pong as kv_ring.cuh: each warpgroup issues tiles + 2 times
// (S_0, S_1, the loop's pairs, P·V_{T−2}, P·V_{T−1}; 2 when tiles = 1).
// Filled rings (kv_ring.cuh's ProducerFills; FireQ App. F Alg. 2's producer warpgroup): the consumers issue no
// copy and arrive on no full barrier; they load Q themselves (named barrier 3 among the 256), wait on full[t]
// for the producer's tile and arrive on empty[t] once P̂_t·V_t has landed — tiles 0 … T − 3, which is every
// slot the producer waits on (tile t waits for t − kStages ≤ T − 1 − 6).
#pragma once

#include "kernels/common/kv_ring.cuh"

namespace attnlab::kernels {

template <int kStages, bool kPingPong, int kScores, class Steps, class Fill = NoConvert>
__device__ __forceinline__ void kv_ring_three_stage(int tiles, Steps& k, uint64_t* full, uint64_t* empty, Fill = {}) {
  constexpr bool kFilled = std::is_same_v<Fill, ProducerFills>;
  static_assert(kFilled || std::is_same_v<Fill, NoConvert>, "copied by the consumers, or filled by a producer");
  static_assert(kStages >= 6, "tiles j−3 … j+3 resident while j+3 loads");
  constexpr int kAhead = 3;
  if (tiles <= 0) return;
  if constexpr (!kFilled) {  // a producer kernel initialized them before its warpgroups parted
    if (threadIdx.x == 0)
      for (int s = 0; s < kStages; ++s) mbar_init(&full[s], blockDim.x), mbar_init(&empty[s], blockDim.x);
    __syncthreads();
  }
  auto parity = [](int t) { return (t / kStages) & 1; };
  const int group = threadIdx.x / 128;
  int turns_left = tiles == 1 ? 2 : tiles + 2;
  auto my_turn = [&] {
    if constexpr (kPingPong) named_sync(1 + group);
  };
  auto your_turn = [&] {
    if constexpr (kPingPong)
      if (--turns_left > 0 || group == 0) named_arrive(2 - group);
  };
  if constexpr (kPingPong)
    if (group == 1) named_arrive(1);
  // The copies of iteration j: tile j + 3 into the slot of tile j − 3; then this thread's tile j + 1 has landed.
  auto ring = [&](int j) {
    if constexpr (!kFilled) {
      if (j + kAhead < tiles) {
        if (j + kAhead >= kStages) mbar_wait(&empty[(j + kAhead) % kStages], parity(j + kAhead - kStages));
        k.load_kv(j + kAhead);
      }
      cp_async_commit();
      cp_async_wait<kAhead - 1>();
      fence_proxy_async();
      if (j + 1 < tiles) mbar_arrive(&full[(j + 1) % kStages]);
    }
  };
  float sa[kScores], sb[kScores];
  float alpha[2];
  // Iteration j of the loop (2 ≤ j < tiles): `prev` holds S_{j−1} (in flight), `next` takes S_j.
  auto step = [&](int j, float (&prev)[kScores], float (&next)[kScores]) {
    ring(j);
    mbar_wait(&full[j % kStages], parity(j));
    k.pin_pv();
    my_turn();
    wgmma_fence();
    k.issue_pv(j - 2);  // l. 11
    wgmma_commit();
    k.issue_scores(j, next);  // l. 14
    wgmma_commit();
    your_turn();
    wgmma_wait<2>();  // S_{j−1} (l. 17 of the iteration before)
    pin_registers(prev);
    k.softmax(j - 1, prev, alpha);  // l. 12–15
    wgmma_wait<1>();                // P̂_{j−2}·V_{j−2}
    k.pin_pv();
    mbar_arrive(&empty[(j - 2) % kStages]);
    k.finish_pv(alpha, true);  // l. 16
    k.pack_p(prev);
  };

  // Prologue (l. 6–9): Q with tiles 0 … 2 (filled: Q alone), S_0 and S_1.
  k.load_q();
  if constexpr (kFilled) {
    cp_async_commit();
    cp_async_wait<0>();
    fence_proxy_async();
    named_sync(3);  // every consumer's share of Q
  } else {
    k.load_kv(0);
    cp_async_commit();
    for (int t = 1; t < kAhead; ++t) {
      if (t < tiles) k.load_kv(t);
      cp_async_commit();
    }
    cp_async_wait<kAhead - 1>();  // Q and tile 0
    fence_proxy_async();
    mbar_arrive(&full[0]);
  }
  ring(0);
  mbar_wait(&full[0], 0);
  my_turn();
  wgmma_fence();
  k.issue_scores(0, sa);
  wgmma_commit();
  your_turn();
  if (tiles == 1) {
    wgmma_wait<0>();
    pin_registers(sa);
    k.softmax(0, sa, alpha);
    k.pack_p(sa);
  } else {
    ring(1);
    mbar_wait(&full[1], 0);
    my_turn();
    wgmma_fence();
    k.issue_scores(1, sb);
    wgmma_commit();
    your_turn();
    wgmma_wait<1>();
    pin_registers(sa);
    k.softmax(0, sa, alpha);
    k.pack_p(sa);
    // l. 19–22: P̂_{T−2}·V_{T−2} in the tensor cores under the softmax of S_{T−1} (`last`).
    auto drain = [&](float (&last)[kScores]) {
      k.pin_pv();
      my_turn();
      wgmma_fence();
      k.issue_pv(tiles - 2);
      wgmma_commit();
      your_turn();
      wgmma_wait<1>();
      pin_registers(last);
      k.softmax(tiles - 1, last, alpha);
      wgmma_wait<0>();
      k.pin_pv();
      k.finish_pv(alpha, true);
      k.pack_p(last);
    };
    int j = 2;
    for (; j + 1 < tiles; j += 2) {
      step(j, sb, sa);
      step(j + 1, sa, sb);
    }
    if (j < tiles) {  // an odd count of loop iterations: S_{T−1} (T − 1 even) lands in sa
      step(j, sb, sa);
      drain(sa);
    } else {
      drain(sb);
    }
  }
  // l. 23: the last tile's P̂·V.
  k.pin_pv();
  my_turn();
  wgmma_fence();
  k.issue_pv(tiles - 1);
  wgmma_commit();
  your_turn();
  wgmma_wait<0>();
  k.pin_pv();
  k.finish_pv(alpha, false);
  cp_async_wait<0>();
}

}  // namespace attnlab::kernels
