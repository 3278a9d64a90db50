// attnlab kernels: every CUDA call checked, and device memory owned by RAII.
#pragma once

#include "core/error.h"
#include "kernels/common/device_memory.h"

#include <cuda_runtime.h>

#include <fmt/format.h>

#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>

namespace attnlab::kernels {

// Throws std::runtime_error naming the CUDA error (its enum name and text) and the call — a kernel launch
// names the kernel's entry point — when `e` is not cudaSuccess: an internal failure, exit code 1 (the input
// was valid, the GPU or the code failed).
inline void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw std::runtime_error(fmt::format("CUDA error {} ({}) in {}", cudaGetErrorName(e), cudaGetErrorString(e), what));
}
#define ATTNLAB_CUDA(call) ::attnlab::kernels::check((call), #call)

// One device allocation, freed when it goes out of scope. An allocation the GPU's memory cannot hold is
// the problem's size at fault, not the code: InputError (exit 2) naming the bytes and the free memory.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes) : bytes_(bytes) {
    if (bytes == 0) return;
    const cudaError_t e = cudaMalloc(&ptr_, bytes);
    if (e == cudaErrorMemoryAllocation) {
      cudaGetLastError();  // not sticky; clear it so later calls report their own state
      ptr_ = nullptr;
      throw InputError(allocation_refusal(bytes));
    }
    ATTNLAB_CUDA(e);
  }
  ~DeviceBuffer() {
    if (ptr_) cudaFree(ptr_);
  }
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(o.bytes_) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  template <class T>
  T* as() const { return static_cast<T*>(ptr_); }
  size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// A CUDA event pair timing one region on a stream.
class EventTimer {
 public:
  EventTimer() {
    ATTNLAB_CUDA(cudaEventCreate(&start_));
    ATTNLAB_CUDA(cudaEventCreate(&stop_));
  }
  ~EventTimer() {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;
  void start(cudaStream_t s) { ATTNLAB_CUDA(cudaEventRecord(start_, s)); }
  float stop_ms(cudaStream_t s) {
    ATTNLAB_CUDA(cudaEventRecord(stop_, s));
    ATTNLAB_CUDA(cudaEventSynchronize(stop_));
    float ms = 0;
    ATTNLAB_CUDA(cudaEventElapsedTime(&ms, start_, stop_));
    return ms;
  }

 private:
  cudaEvent_t start_{}, stop_{};
};

}  // namespace attnlab::kernels
