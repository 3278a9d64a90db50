// attnlab kernels: the outputs of one correctness launch — O (FP16, or BF16) and the logsumexp (FP32) on the
// device, poisoned before the launch with all-ones bits (NaN in every format) so an element the kernel
// skips cannot pass, and read back with that check. Shared by the kernels' *_once functions.
#pragma once

#include "core/problem.h"
#include "core/tensor.h"
#include "kernels/common/cuda_check.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <vector>

namespace attnlab::kernels {

struct PoisonedOutput {
  enum class Format { fp16, bf16 };  // O's element
  explicit PoisonedOutput(const Problem& p, Format f = Format::fp16);  // allocates and poisons
  __half* o() const { return o_.as<__half>(); }
  __nv_bfloat16* o_bf16() const { return o_.as<__nv_bfloat16>(); }
  float* lse() const { return lse_.as<float>(); }
  // After the kernel has finished: O and L as FP32 on the host. Throws std::runtime_error naming
  // `kernel` when any element is still NaN (left unwritten).
  void read(const char* kernel, Tensor& o, std::vector<float>& lse) const;

 private:
  Shape4 shape_;
  Format format_;
  DeviceBuffer o_, lse_;
};

}  // namespace attnlab::kernels
