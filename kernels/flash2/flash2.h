// attnlab kernels: the `flash2` kernel — FlashAttention-2's forward (notes App. D) on FP16 tensor cores.
//
// Computes what core/variants/flash2.cpp emulates: Q, K, V in FP16, S = QKᵀ·scale and the online
// softmax in FP32, P̃ rounded to FP16 for P̃V, O accumulated in FP32 and stored in FP16, the logsumexp
// in FP32. Tiles come from core/kernel_traits.h (the cost model reads the same row). One CTA per
// (query row block, batch·head[, KV split]); under causal masking (bottom-right aligned, problem.h) a
// CTA stops at the last tile its rows see. Decode runs on a kernel of its own (flash2_decode_takes); where the
// prefill kernel has few query rows and heads it splits the KV sequence over CTAs with FlashAttention-2's rule
// (decode_splits) and merges the partial results in a second kernel: O = Σₛ e^{Lₛ − L}·Oₛ, L = log Σₛ e^{Lₛ}.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "kernels/common/kernel_path.h"

#include <cstddef>
#include <cstdint>

namespace attnlab::kernels {

struct Flash2Args {
  const __half* q = nullptr;  // (B, Hq, Nq, d)
  const __half* k = nullptr;  // (B, Hkv, Nkv, d)
  const __half* v = nullptr;  // (B, Hkv, Nkv, d)
  __half* o = nullptr;        // (B, Hq, Nq, d)
  float* lse = nullptr;       // (B, Hq, Nq)
  int batch = 0, q_heads = 0, kv_heads = 0, q_len = 0, kv_len = 0, head_dim = 0;
  bool causal = false;
  float scale = 0;            // softmax scale (1/√d by default)
  int splits = 1;             // KV splits (flash2_splits; the decode kernel's chains per pair); > 1 needs `workspace`
  float* workspace = nullptr; // flash2_workspace_bytes(args) bytes: when splits > 1, or persistent with dynamic_order
  KernelPath path = KernelPath::automatic;
  // The warpgroup generation's K/V loads (flash2_sm90.cu): a producer warpgroup's TMA copies into an mbarrier ring
  // (FlashAttention-3 §3.1's warp specialization), or every thread's cp.async with a CTA barrier per tile. The same
  // numbers either way; the mma.sync kernels ignore both.
  // The grouped decode kernel takes the same choice for its chains' own loads: TMA copies on sm_90a (flash2_decode_tma),
  // cp.async where false or elsewhere.
  bool tma_producer = true;
  bool ping_pong = true;  // with the producer: the two consumer warpgroups' MMA issues alternate (kv_ring.cuh)
  // With the producer, not causal, at d 128: FlashAttention-3's 176-key K/V tile, two in the ring (flash2_sm90_wide_tile);
  // false keeps 128 keys, three in the ring. The numbers differ only in the order of the accumulation.
  bool wide_tile = true;
  // With the producer: one CTA per SM, each looping over row blocks, its producer loading the next block's Q and K/V
  // while the consumers finish the last (FlashAttention-3's persistent scheduler); false: one CTA per row block. The
  // same numbers either way.
  bool persistent = false;
  bool head_major = false;  // persistent: the row blocks head by head (the grid's order), not in L2 bands
  // persistent: each CTA takes its next row block of the order from a counter in `workspace` as it finishes one
  // (FlashAttention-3's dynamic scheduler), not blocks c, c + CTAs, … (flash2_workspace_bytes counts the counter)
  bool dynamic_order = false;
  int band_heads = 1;  // persistent: batch·heads whose row blocks run together (their K/V in L2; flash2_sm90_band_heads)
  // The warpgroup kernels' timeline (kernels/common/cta_timeline.cuh): B·Hq·⌈Nq/128⌉·2·kTimelineFields words, written
  // only by kernels built with ATTNLAB_FLASH2_TIMELINE (kernels/bench/flash2_timeline.cu); the library's ignore it.
  unsigned long long* timeline = nullptr;
};

bool flash2_supports(int head_dim);  // a compiled kernel exists for this d (64 and 128)

// Decode (kernels/flash2/flash2_decode.cu): one query token per head and at most 8 query heads per KV head run on
// the grouped decode kernel — every K/V tile read once for the group, `splits` warp chains per (batch, KV head)
// merged by their logsumexp — unless the warpgroup generation is pinned.
bool flash2_decode_takes(const Flash2Args& a);
bool flash2_decode_tma(const Flash2Args& a);  // its tiles arrive by TMA (tma_producer on an sm_90a GPU)
int flash2_decode_chains(const Flash2Args& a, int sm_count);  // decode_splits over the warps the GPU holds
cudaError_t flash2_decode(const Flash2Args& a, cudaStream_t stream);

// The KV splits the kernel uses for this problem on a GPU with `sm_count` SMs (core/kernel_traits.h).
int flash2_splits(const Flash2Args& a, int sm_count);
size_t flash2_workspace_bytes(const Flash2Args& a);

// The generation flash2_forward runs for `a` on the current device (never `automatic`).
KernelPath flash2_resolved_path(const Flash2Args& a);
// Keys per K/V tile of the prefill kernel flash2_forward(a) launches (the wgmma one's: 128, or kWideTile where
// flash2_sm90_wide_tile holds); 0 where the decode kernel runs.
int flash2_block_c(const Flash2Args& a);

// Launches on `stream`; returns the launch error (cudaSuccess when queued). cudaErrorNotSupported when
// the warpgroup path is asked for where it cannot run.
cudaError_t flash2_forward(const Flash2Args& a, cudaStream_t stream);

}  // namespace attnlab::kernels
