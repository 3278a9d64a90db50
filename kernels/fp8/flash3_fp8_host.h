// attnlab kernels: flash3_fp8's inputs as the variant requires them in HBM (flash3_fp8.h) — E4M3 codes with
// one FP32 scale per 128-row block of each head, quantized on the host by the reference's rule
// (core/quant/fp8_blocks.h, which the reference calls too), V transposed and key-permuted — and one launch
// with poisoned outputs, for the backend and the [gpu] tests.
#pragma once

#include "core/problem.h"
#include "core/tensor.h"
#include "kernels/common/cuda_check.h"
#include "kernels/fp8/flash3_fp8.h"

#include <cstdint>
#include <vector>

namespace attnlab::kernels {

struct Fp8Inputs {
  DeviceBuffer q, k, vt, s_q, s_k, s_v;
  int kv_pad = 0;
  std::vector<float> scales_q, scales_k, scales_v;  // as uploaded: (B, H, blocks)
  size_t bytes() const { return q.bytes() + k.bytes() + vt.bytes() + s_q.bytes() + s_k.bytes() + s_v.bytes(); }
};

// Throws InputError (naming the tensor) on a non-finite input, as the reference does.
Fp8Inputs upload_fp8(const Problem& p, const QKV& in);
Flash3Fp8Args flash3_fp8_args(const Problem& p, const Fp8Inputs& in, __half* o, float* lse);

struct Fp8Output {
  Tensor o;
  std::vector<float> lse;
};
Fp8Output flash3_fp8_once(const Problem& p, const Fp8Inputs& in, bool ping_pong = true, bool tma_producer = true);

}  // namespace attnlab::kernels
