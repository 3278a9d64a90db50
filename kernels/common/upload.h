// attnlab kernels: a host vector copied into a new device buffer — the one upload the host sides share.
#pragma once

#include "kernels/common/cuda_check.h"

#include <vector>

namespace attnlab::kernels {

template <class T>
DeviceBuffer upload(const std::vector<T>& h) {
  DeviceBuffer d(h.size() * sizeof(T));
  if (!h.empty()) ATTNLAB_CUDA(cudaMemcpy(d.as<void>(), h.data(), d.bytes(), cudaMemcpyHostToDevice));
  return d;
}

}  // namespace attnlab::kernels
