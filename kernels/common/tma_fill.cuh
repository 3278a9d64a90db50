// attnlab kernels: Hopper's tensor memory accelerator (TMA, sm_90) and the producer side of a filled KV ring
// (kv_ring.cuh's ProducerFills) — FlashAttention-3 §3.1's warp specialization: one thread of a producer
// warpgroup issues each tile's copies as whole-tile TMA loads, and the consumer warpgroups issue none.
//
// A TMA load names a tensor map (tensor_map.h, built on the host), the tile's coordinates and an mbarrier.
// The copy engine writes the tile into shared memory in the map's swizzle — the 64- and 128-byte modes are
// the wgmma descriptors' (wgmma.cuh's sw_offset) when the tile starts 1024-byte aligned — zero-fills what lies
// outside the tensor, and counts its bytes on the mbarrier (complete_tx). The producer announces the bytes
// first (arrive.expect_tx): the barrier's phase completes once its one arrival and all the bytes are in. Both
// the writes (TMA) and the reads (wgmma) are the async proxy's, so no proxy fence sits between them.
#pragma once

#include "kernels/common/kv_ring.cuh"

#include <cuda.h>  // CUtensorMap

#include <cstdint>

namespace attnlab::kernels {

// The producer's arrival on `bar`, announcing `bytes` more to come from TMA loads that complete on it.
__device__ __forceinline__ void mbar_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(bytes) : "memory");
}

// The box of `map` at element coordinates (x, y, z) — x the innermost — into shared memory at `dst`; its
// bytes complete on `bar`. `map` must live in kernel parameter space (__grid_constant__) or global memory.
__device__ __forceinline__ void tma_load_3d(void* dst, const CUtensorMap* map, int x, int y, int z, uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], "
      "[%5];\n" ::"r"(smem_addr(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(x), "r"(y), "r"(z), "r"(smem_addr(bar))
      : "memory");
}

// [src, src + bytes) into shared memory at dst by the copy engine, no tensor map (cp.async.bulk: both addresses 16-byte
// aligned, bytes a multiple of 16); its bytes complete on `bar`.
__device__ __forceinline__ void bulk_load(void* dst, const void* src, uint32_t bytes, uint64_t* bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n"
               ::"r"(smem_addr(dst)), "l"(reinterpret_cast<uint64_t>(src)), "r"(bytes), "r"(smem_addr(bar))
               : "memory");
}

__device__ __forceinline__ void prefetch_tensor_map(const CUtensorMap* map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}

// Global memory [src, src + bytes) into the L2 (cp.async.bulk.prefetch.L2; src 16-byte aligned, bytes a multiple of
// 16): no shared memory, no barrier, nothing to wait for — a later load of those bytes hits the L2.
__device__ __forceinline__ void prefetch_l2(const void* src, uint32_t bytes) {
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"(reinterpret_cast<uint64_t>(src)), "r"(bytes)
               : "memory");
}

// setmaxnreg (FlashAttention-3's register split): a warpgroup gives registers back to the CTA's pool or takes
// them from it. An increase waits until the pool can cover it, so the kernel must keep
// Σ over warpgroups ≤ the registers per thread it was launched with × its warpgroups (a request beyond that
// never returns). Every warp of the warpgroup executes it.
template <int kRegs>
__device__ __forceinline__ void warpgroup_release_registers() {
  static_assert(kRegs % 8 == 0 && kRegs >= 24 && kRegs <= 256);
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kRegs));
}
template <int kRegs>
__device__ __forceinline__ void warpgroup_claim_registers() {
  static_assert(kRegs % 8 == 0 && kRegs >= 24 && kRegs <= 256);
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kRegs));
}

// The register split of a CTA of two consumer warpgroups and one producer (FA3's 240 / 24): a 384-thread CTA
// launches with 168 registers a thread (65536 / 384, rounded down to 8), so 2·240 + 24 ≤ 3·168 = 504.
inline constexpr int kProducerCtaLaunchRegs = 65536 / 384 / 8 * 8;
inline constexpr int kConsumerRegs = 240, kProducerRegs = 24;
static_assert(2 * kConsumerRegs + kProducerRegs <= 3 * kProducerCtaLaunchRegs);

// The producer's loop, run by one thread, over a ring of kParts barrier pairs per slot (kv_ring.cuh's ProducerFills:
// one, the tile; ProducerFillsKV: two, its K and its V): part k of tile t into slot t mod kStages once every
// consumer has arrived on that part's empty barrier for tile t − kStages (phase ⌊t/kStages⌋ − 1), then expect_tx of
// the part's bytes on its full barrier and issue(k, t, bar) — its TMA loads. Part k's barriers are
// full[k·kStages + slot] and empty[k·kStages + slot]. The thread may leave while its last loads are in flight: the
// consumers wait for them on full[], and the CTA's shared memory lives until they are done.
// `first`: the ring's count of tiles before these (a persistent CTA's earlier row blocks, kv_ring.cuh's
// ProducerFillsQKV): tile t of this call is the ring's tile first + t — its slot and phase — and issue still gets t.
template <int kStages, int kParts, class Issue>
__device__ __forceinline__ void kv_produce(int tiles, const uint32_t (&part_bytes)[kParts], Issue&& issue, uint64_t* full,
                                           uint64_t* empty, int first = 0) {
  for (int t = 0; t < tiles; ++t)
#pragma unroll
    for (int k = 0; k < kParts; ++k) {
      const int ring_tile = first + t, bar = k * kStages + ring_tile % kStages;
      if (ring_tile >= kStages) mbar_wait(&empty[bar], (ring_tile / kStages - 1) & 1);
      mbar_arrive_expect_tx(&full[bar], part_bytes[k]);
      issue(k, t, &full[bar]);
    }
}

// The warpgroups part of a producer kernel: thread 0 initializes the ring's barriers — full[] for the producer's
// one arrival (and the bytes), empty[] for every consumer thread, kParts · kStages of each — and after the CTA's
// last barrier the producer warpgroup (threads kConsumers …) gives its registers back; one of its threads calls
// prefetch() and runs kv_produce with `issue`. Returns false to the producer's threads, which then leave, and true
// to the consumers once they hold kConsumerRegs.
// The same split with the producer's whole work in produce() — run by thread kConsumers after the register split
// (a persistent CTA's loop over its row blocks, flash2_sm90.cu). init() runs on thread 0 beside the ring's
// barrier initialization (barriers of the kernel's own), before the CTA's last barrier.
template <int kStages, int kConsumers, int kParts, class Init, class Produce>
__device__ __forceinline__ bool split_warpgroups_with(Init&& init, Produce&& produce, uint64_t* full, uint64_t* empty) {
  static_assert(kConsumers == 256, "two consumer warpgroups: the register split above");
  if (threadIdx.x == 0) {
    for (int s = 0; s < kParts * kStages; ++s) mbar_init(&full[s], 1), mbar_init(&empty[s], kConsumers);
    init();
  }
  __syncthreads();  // the barriers initialized; no CTA-wide barrier after this point
  if (threadIdx.x >= kConsumers) {
    warpgroup_release_registers<kProducerRegs>();
    if (threadIdx.x == kConsumers) produce();
    return false;
  }
  warpgroup_claim_registers<kConsumerRegs>();
  return true;
}
template <int kStages, int kConsumers, int kParts, class Prefetch, class Issue>
__device__ __forceinline__ bool split_warpgroups(int tiles, const uint32_t (&part_bytes)[kParts], Prefetch&& prefetch,
                                                 Issue&& issue, uint64_t* full, uint64_t* empty) {
  return split_warpgroups_with<kStages, kConsumers, kParts>(
      [] {},
      [&] {
        prefetch();
        kv_produce<kStages>(tiles, part_bytes, issue, full, empty);
      },
      full, empty);
}
// The ring of whole tiles (ProducerFills): issue(t, bar) loads tile t's `tile_bytes`.
template <int kStages, int kConsumers, class Prefetch, class Issue>
__device__ __forceinline__ bool split_warpgroups(int tiles, uint32_t tile_bytes, Prefetch&& prefetch, Issue&& issue,
                                                 uint64_t* full, uint64_t* empty) {
  const uint32_t bytes[1] = {tile_bytes};
  return split_warpgroups<kStages, kConsumers, 1>(
      tiles, bytes, prefetch, [&](int, int t, uint64_t* bar) { issue(t, bar); }, full, empty);
}

}  // namespace attnlab::kernels
