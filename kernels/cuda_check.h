// attnlab kernels: every CUDA call checked, and device memory owned by RAII.
#pragma once

#include <cuda_runtime.h>

#include <fmt/format.h>

#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>

namespace attnlab::kernels {

// Throws std::runtime_error naming the call and its error when `e` is not cudaSuccess (an internal
// failure, exit code 1: the input was valid, the GPU or the code failed).
inline void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(fmt::format("CUDA: {}: {}", what, cudaGetErrorString(e)));
}
#define ATTNLAB_CUDA(call) ::attnlab::kernels::check((call), #call)

// One device allocation, freed when it goes out of scope.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes) : bytes_(bytes) {
    if (bytes > 0) ATTNLAB_CUDA(cudaMalloc(&ptr_, bytes));
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
