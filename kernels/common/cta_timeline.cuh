// attnlab kernels: a row block's timeline, for the developers of the warp-specialized kernels (kernels/PERF.md).
//
// Where a CTA's cycles go beyond its tiles' steady cost: the SM clock (clock64, one counter per SM, so CTAs that
// follow each other on an SM compare) at the points that split a row block's time on one consumer warpgroup — the
// CTA's start, the warpgroup's start on the block, its first S issued (Q, the first K and the first turn waited for)
// and landed (the softmax of tile 0 begins), the last S landed, the last P·V issued, the loop's end (that P·V landed)
// and O stored — with the SM and the block's tiles; from the producer, when it issued the warpgroup's Q and the
// block's first K; and, where O goes out through shared memory (flash2's TMA store), when the warpgroup's O was staged
// there and when its warps had met at the barrier before the store.
// kernels/bench/cta_timeline.py reads them: the steady tile, the fill before the first S, the drain and the
// epilogue, the gap between CTAs on an SM, and the boundary between two row blocks on one warpgroup (its last S to
// the next block's first S, less one tile).
// A kernel compiles these calls in only where its timeline constant is on (flash2: ATTNLAB_FLASH2_TIMELINE, which
// kernels/bench/flash2_timeline.cu defines); off, no instruction of them remains.
#pragma once

#include <cstddef>
#include <cstdint>

namespace attnlab::kernels {

// One record: kTimelineFields 64-bit words per (row block, consumer warpgroup), at (block · 2 + group) · fields.
enum TimelineField : int {
  kTimelineSm,            // %smid
  kTimelineTiles,         // the block's K/V tiles
  kTimelineCtaStartNs,    // %globaltimer at the CTA's start (ns; one clock for the whole GPU)
  kTimelineCtaStart,      // clock64 at the CTA's start
  kTimelineBlockStart,    // the warpgroup starts the block
  kTimelineFirstIssue,    // S_0 issued: Q, K_0 and the warpgroup's first turn waited for
  kTimelineFirstScores,   // S_0 landed (its softmax begins)
  kTimelineLastScores,    // the last tile's S landed
  kTimelineLastPvIssue,   // the last P·V issued (after the last softmax and the turn)
  kTimelineLoopDone,      // the loop returned: the last P·V landed
  kTimelineStored,        // O and L stored (the stores issued)
  kTimelineQIssued,       // the producer issued the warpgroup's Q (0 where the consumers copy it themselves)
  kTimelineKIssued,       // the producer issued the block's first K (warpgroup 0's record; 0 without a producer)
  kTimelineStoredNs,      // %globaltimer when O was stored: with kTimelineCtaStartNs, the SMs on one clock
  kTimelineStaged,        // O in shared memory: this thread's stmatrix issued (0 where O is stored from registers)
  kTimelineMet,           // the warpgroup's barrier passed, every warp's O staged and fenced (0 likewise)
  kTimelineFields
};

// The CTA's start, read once at its entry.
struct TimelineStart {
  unsigned long long clock = 0, ns = 0;
};

__device__ __forceinline__ unsigned long long timeline_global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ __forceinline__ unsigned timeline_sm() {
  unsigned s;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
  return s;
}
__device__ __forceinline__ TimelineStart timeline_start() {
  return {static_cast<unsigned long long>(clock64()), timeline_global_ns()};
}

// A warpgroup's record of one row block; only the warpgroup's first thread writes (`rec` null for the others).
struct CtaTimeline {
  unsigned long long* rec = nullptr;
  __device__ __forceinline__ void put(TimelineField f, unsigned long long value) const {
    if (rec) rec[f] = value;
  }
  __device__ __forceinline__ void mark(TimelineField f) const { put(f, static_cast<unsigned long long>(clock64())); }
};
__device__ __forceinline__ CtaTimeline timeline_of(unsigned long long* out, int block, int group) {
  return {out != nullptr && threadIdx.x % 128 == 0 ? out + (size_t(block) * 2 + group) * kTimelineFields : nullptr};
}

}  // namespace attnlab::kernels
