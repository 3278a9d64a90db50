// attnlab kernels: one flash2 launch from host tensors — inputs rounded to FP16 (the variant's storage),
// outputs poisoned before the launch and checked after it, results back as FP32 tensors. Shared by the
// kernel backend's correctness run and the [gpu] tests.
#pragma once

#include "core/config.h"
#include "core/problem.h"
#include "core/tensor.h"
#include "kernels/common/cuda_check.h"
#include "kernels/flash2/flash2.h"

#include <cuda_fp16.h>

#include <vector>

namespace attnlab::kernels {

// Q, K, V of one problem in device memory as FP16.
struct Flash2Inputs {
  DeviceBuffer q, k, v;
  size_t bytes() const { return q.bytes() + k.bytes() + v.bytes(); }
};
Flash2Inputs upload_fp16(const QKV& in);

struct Flash2Output {
  Tensor o;                // (B, Hq, Nq, d), FP16 values
  std::vector<float> lse;  // (B, Hq, Nq)
  int splits = 1;
  KernelPath path = KernelPath::warp_mma;  // the kernel generation that ran
  bool tma_producer = false;  // K/V by TMA: the warpgroup generation's producer warpgroup, or the decode chains' own
  int block_c = 0;            // keys per K/V tile of the prefill kernel that ran (0: the decode kernel ran)
  bool persistent = false;    // the prefill kernel ran persistent CTAs (flash2_sm90_persistent)
  bool dynamic_order = false; // … taking their row blocks from a counter (Flash2Args::dynamic_order)
};

// The warpgroup generation's loads, schedule, tile and row blocks (flash2.h's tma_producer, ping_pong, wide_tile and
// persistent).
struct Flash2Schedule {
  bool tma_producer = true, ping_pong = true, wide_tile = true, persistent = false, head_major = false,
       dynamic_order = false;
};
// The schedule variant request v asks for on problem p: kv_loads (core/producer_loads.h, the model's rule too), kv_tile
// (auto: the wide tile where prefill_block_c takes it at p — not causal, and where its padding pays; 128 pins the
// 128-key tile) and row_blocks (persistent: one CTA per SM looping over row blocks; persistent_head_major: in the
// grid's order; persistent_dynamic: each CTA's next block from a counter).
Flash2Schedule flash2_schedule_of(const VariantRequest& v, const Problem& p);

// Arguments for problem p on `inputs` writing to `o`/`lse`, with the split rule for `sm_count` SMs.
Flash2Args flash2_args(const Problem& p, const Flash2Inputs& inputs, __half* o, float* lse, int sm_count);

// One launch with poisoned outputs; throws std::runtime_error if any output stays unwritten (NaN). `splits` > 0
// replaces the split rule's count (the tests' one-chain and many-chain decodes).
Flash2Output flash2_once(const Problem& p, const Flash2Inputs& inputs, int sm_count,
                         KernelPath path = KernelPath::automatic, int splits = 0, Flash2Schedule schedule = {});

}  // namespace attnlab::kernels
