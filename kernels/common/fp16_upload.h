// attnlab kernels: a host tensor's values rounded to FP16 — as the FP16 kernels take their inputs — on the host
// or in a new device buffer.
#pragma once

#include "core/tensor.h"
#include "kernels/common/cuda_check.h"
#include "kernels/common/upload.h"

#include <cuda_fp16.h>

#include <vector>

namespace attnlab::kernels {

// t's values rounded to FP16, round to nearest even (as the reference rounds).
inline std::vector<__half> fp16_values(const Tensor& t) {
  std::vector<__half> h(static_cast<size_t>(t.size()));
  for (size_t i = 0; i < h.size(); ++i) h[i] = __float2half_rn(t.data()[i]);
  return h;
}

// The same in a new device buffer.
inline DeviceBuffer upload_rounded_fp16(const Tensor& t) { return upload(fp16_values(t)); }

}  // namespace attnlab::kernels
