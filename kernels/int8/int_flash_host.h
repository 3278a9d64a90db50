// attnlab kernels: int_flash's inputs as Alg. 1 requires them in HBM — INT8 Q and K with FP32 token
// scales, INT8 V with one FP32 scale per (batch, KV head) — quantized on the GPU by the reference's rules
// (quantize_int8.h; the [gpu] tests hold codes and scales equal to the host quantizer's), V transposed and
// key-permuted for the kernel (int_flash.h). And one launch with poisoned outputs, for the backend and
// the [gpu] tests.
#pragma once

#include "core/problem.h"
#include "core/tensor.h"
#include "kernels/common/cuda_check.h"
#include "kernels/int8/int_flash.h"
#include "kernels/common/vt_permutation.h"

#include <vector>

namespace attnlab::kernels {

struct IntFlashInputs {
  DeviceBuffer q, k, vt, s_q, s_k, s_v, v16;  // vt and s_v for full INT8; v16 (FP16 V) for half-INT8
  int kv_pad = 0;
  bool v_fp16 = false;
  std::vector<float> scales_q, scales_k, scales_v;  // s_q, s_k (padded per head), s_v read back from the GPU
  size_t bytes() const {
    return q.bytes() + k.bytes() + vt.bytes() + s_q.bytes() + s_k.bytes() + s_v.bytes() + v16.bytes();
  }
};
// v_fp16: the half-INT8 variant (V rounded once to FP16, as the reference's v_fp16 keeps it).
IntFlashInputs upload_int8(const Problem& p, const QKV& in, bool v_fp16 = false);


IntFlashArgs int_flash_args(const Problem& p, const IntFlashInputs& in, __half* o, float* lse);

struct IntFlashOutput {
  Tensor o;
  std::vector<float> lse;
  KernelPath path = KernelPath::warp_mma;  // the kernel generation that ran
  std::vector<int32_t> scores;             // (B, Hq, Nq, Nkv) INT32 Q·Kᵀ when asked for
};
// The wgmma path's K/V loads and schedule (int_flash.h's tma_producer and ping_pong; the mma.sync path ignores them),
// and its P·V accumulation (pv_across_tiles; the mma.sync path refuses it).
struct IntFlashSchedule {
  bool tma_producer = true, ping_pong = true, pv_across_tiles = false;
};
IntFlashOutput int_flash_once(const Problem& p, const IntFlashInputs& in, KernelPath path = KernelPath::automatic,
                              bool dump_scores = false, IntFlashSchedule schedule = {});

}  // namespace attnlab::kernels
