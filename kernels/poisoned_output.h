// attnlab kernels: the outputs of one correctness launch — O (FP16) and the logsumexp (FP32) on the device,
// poisoned before the launch with all-ones bits (NaN in both formats) so an element the kernel skips
// cannot pass, and read back with that check. Shared by flash2_once and int_flash_once.
#pragma once

#include "core/problem.h"
#include "core/tensor.h"
#include "kernels/cuda_check.h"

#include <cuda_fp16.h>

#include <vector>

namespace attnlab::kernels {

struct PoisonedOutput {
  explicit PoisonedOutput(const Problem& p);  // allocates and poisons
  __half* o() const { return o_.as<__half>(); }
  float* lse() const { return lse_.as<float>(); }
  // After the kernel has finished: O and L as FP32 on the host. Throws std::runtime_error naming
  // `kernel` when any element is still NaN (left unwritten).
  void read(const char* kernel, Tensor& o, std::vector<float>& lse) const;

 private:
  Shape4 shape_;
  DeviceBuffer o_, lse_;
};

}  // namespace attnlab::kernels
