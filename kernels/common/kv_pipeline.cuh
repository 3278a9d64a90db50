// attnlab kernels: the KV loop both Hopper kernels run (flash2_sm90.cu, int_flash_sm90.cu) — notes App. D's
// inner loop with FlashAttention-3's intra-warpgroup pipelining: K/V tiles three deep in shared memory
// (cp.async by every thread of the CTA, one barrier per tile), S_{j+1} = Q·K_{j+1}ᵀ issued before
// P·V_j, so the softmax of tile j + 1 runs on the FP32 pipes while P·V_j is in the tensor cores.
//
// A kernel supplies its steps as callables (KvSteps below); the pipeline owns every fence, commit,
// wait and barrier, so the synchronization lives in one place:
//   load_q(), load_kv(j)         issue cp.async copies (the pipeline commits them)
//   issue_scores(j)              S = Q·K_jᵀ on the tensor cores
//   issue_pv(j)                  O (or an INT32 accumulator) += P_j·V_j
//   softmax(j, alpha)            after S_j has landed: masks, running max, P_j (kept unpacked), α per row
//   pack_p()                     P_j into the A fragments: only while no P·V is in flight
//   finish_pv(alpha, rescale)    after P·V_j has landed: O's update, and O ·= α when `rescale`
//   pin_scores(), pin_pv()       pin_registers on S, and on O, P (and the accumulator), around the waits
// The last tile is peeled out of the loop: a branch around a wgmma makes ptxas serialize the pipeline.
//
// kPackAfterBarrier (turbo_prefill_sm90.cu): P_j's A fragments depend on a maximum over the whole warpgroup
// (Alg. 1 l. 10's s_P), which each warp's softmax writes to shared memory; pack_p then runs after the next
// tile's CTA barrier — the one the pipeline has anyway — with S_{j+1} already in the tensor cores, instead
// of a barrier of its own in every softmax. The peeled last tile takes one barrier for it.
#pragma once

#include "kernels/common/wgmma.cuh"

namespace attnlab::kernels {

// The tiles kv_pipeline keeps in shared memory: it loads tile j + 2 while tiles j and j + 1 are read.
inline constexpr int kKvPipelineStages = 3;

template <class LoadQ, class LoadKv, class IssueScores, class IssuePv, class Softmax, class PackP, class FinishPv,
          class PinScores, class PinPv>
struct KvSteps {
  LoadQ load_q;
  LoadKv load_kv;
  IssueScores issue_scores;
  IssuePv issue_pv;
  Softmax softmax;
  PackP pack_p;
  FinishPv finish_pv;
  PinScores pin_scores;
  PinPv pin_pv;
};

template <bool kPackAfterBarrier = false, class Steps>
__device__ __forceinline__ void kv_pipeline(int tiles, Steps& k) {
  if (tiles <= 0) return;
  k.load_q();
  k.load_kv(0);
  cp_async_commit();
  if (tiles > 1) k.load_kv(1);
  cp_async_commit();
  cp_async_wait<1>();  // Q and tile 0 (this thread's copies)
  fence_proxy_async();  // generic-proxy writes before the tensor cores' reads
  __syncthreads();      // everyone's copies
  wgmma_fence();
  k.issue_scores(0);
  wgmma_commit();
  wgmma_wait<0>();
  k.pin_scores();
  float alpha[2];
  k.softmax(0, alpha);
  if constexpr (!kPackAfterBarrier) k.pack_p();
  for (int j = 0; j + 1 < tiles; ++j) {
    // Tile j + 1 has landed and is visible to the tensor cores; every thread has finished P·V_{j−1}, so
    // its stage can take tile j + 2.
    cp_async_wait<0>();
    fence_proxy_async();
    __syncthreads();
    if (j + 2 < tiles) k.load_kv(j + 2);
    cp_async_commit();
    k.pin_pv();
    wgmma_fence();
    k.issue_scores(j + 1);
    wgmma_commit();
    if constexpr (kPackAfterBarrier) {
      k.pack_p();
      wgmma_fence();  // the A fragments were written after the fence above
    }
    k.issue_pv(j);
    wgmma_commit();
    wgmma_wait<1>();  // S_{j+1}; P·V_j may still run
    k.pin_scores();
    k.softmax(j + 1, alpha);
    wgmma_wait<0>();  // P·V_j
    k.pin_pv();
    k.finish_pv(alpha, true);
    if constexpr (!kPackAfterBarrier) k.pack_p();
  }
  // The last tile's P·V (its V landed with Q when tiles = 1, else before the loop's last barrier).
  if constexpr (kPackAfterBarrier) {
    __syncthreads();
    k.pack_p();
  }
  k.pin_pv();
  wgmma_fence();
  k.issue_pv(tiles - 1);
  wgmma_commit();
  wgmma_wait<0>();
  k.pin_pv();
  k.finish_pv(alpha, false);
}

}  // namespace attnlab::kernels
