#include "kernels/context_parallel/ring_transport.h"

#include "core/error.h"
#include "kernels/common/cuda_check.h"

#include <fmt/format.h>

#include <stdexcept>
#include <vector>

#if ATTNLAB_HAVE_NCCL
#include <nccl.h>
#endif

namespace attnlab::kernels {

namespace {

// Every rank on the current device: an exchange is a copy on the receiver's stream, after the sender's stream
// has reached the call (its bytes are in place there).
class OneDevice final : public RingTransport {
 public:
  explicit OneDevice(int ranks) : ranks_(ranks), ready_(static_cast<size_t>(ranks)) {
    ATTNLAB_CUDA(cudaGetDevice(&device_));
    for (cudaEvent_t& e : ready_) ATTNLAB_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  }
  ~OneDevice() override {
    for (cudaEvent_t e : ready_) cudaEventDestroy(e);
  }
  int ranks() const override { return ranks_; }
  int device_of(int) const override { return device_; }
  std::string name() const override { return "one device"; }
  void shift(std::span<const void* const> send, std::span<void* const> recv, std::span<const size_t> bytes,
             std::span<const cudaStream_t> streams) override {
    for (int r = 0; r < ranks_; ++r) ATTNLAB_CUDA(cudaEventRecord(ready_[size_t(r)], streams[size_t(r)]));
    for (int r = 0; r < ranks_; ++r) {
      const size_t to = size_t((r + 1) % ranks_);
      if (bytes[size_t(r)] == 0) continue;
      ATTNLAB_CUDA(cudaStreamWaitEvent(streams[to], ready_[size_t(r)]));
      ATTNLAB_CUDA(cudaMemcpyAsync(recv[to], send[size_t(r)], bytes[size_t(r)], cudaMemcpyDeviceToDevice, streams[to]));
    }
  }
  void gather(std::span<const void* const> send, std::span<void* const> recv, std::span<const size_t> bytes,
              std::span<const cudaStream_t> streams) override {
    for (int r = 1; r < ranks_; ++r) {
      if (bytes[size_t(r)] == 0) continue;
      ATTNLAB_CUDA(cudaEventRecord(ready_[size_t(r)], streams[size_t(r)]));
      ATTNLAB_CUDA(cudaStreamWaitEvent(streams[0], ready_[size_t(r)]));
      ATTNLAB_CUDA(
          cudaMemcpyAsync(recv[size_t(r)], send[size_t(r)], bytes[size_t(r)], cudaMemcpyDeviceToDevice, streams[0]));
    }
  }

 private:
  int ranks_, device_ = 0;
  std::vector<cudaEvent_t> ready_;
};

#if ATTNLAB_HAVE_NCCL
void nccl_check(ncclResult_t e, const char* what) {
  if (e != ncclSuccess) throw std::runtime_error(fmt::format("NCCL error {} in {}", ncclGetErrorString(e), what));
}
#define ATTNLAB_NCCL(call) nccl_check((call), #call)

// Rank r on device r; each exchange one NCCL group of every rank's send and receive (the ring's pairs cannot
// deadlock inside a group).
class Nccl final : public RingTransport {
 public:
  explicit Nccl(int ranks) : comms_(static_cast<size_t>(ranks)) {
    std::vector<int> devices;
    for (int r = 0; r < ranks; ++r) devices.push_back(r);
    ATTNLAB_NCCL(ncclCommInitAll(comms_.data(), ranks, devices.data()));
  }
  ~Nccl() override {
    for (ncclComm_t c : comms_) ncclCommDestroy(c);
  }
  int ranks() const override { return int(comms_.size()); }
  int device_of(int rank) const override { return rank; }
  std::string name() const override { return "NCCL"; }
  void shift(std::span<const void* const> send, std::span<void* const> recv, std::span<const size_t> bytes,
             std::span<const cudaStream_t> streams) override {
    const int P = ranks();
    ATTNLAB_NCCL(ncclGroupStart());
    for (int r = 0; r < P; ++r) {
      const size_t from = size_t((r + P - 1) % P), to = size_t((r + 1) % P), me = size_t(r);
      if (bytes[me] > 0) ATTNLAB_NCCL(ncclSend(send[me], bytes[me], ncclChar, int(to), comms_[me], streams[me]));
      if (bytes[from] > 0) ATTNLAB_NCCL(ncclRecv(recv[me], bytes[from], ncclChar, int(from), comms_[me], streams[me]));
    }
    ATTNLAB_NCCL(ncclGroupEnd());
  }
  void gather(std::span<const void* const> send, std::span<void* const> recv, std::span<const size_t> bytes,
              std::span<const cudaStream_t> streams) override {
    ATTNLAB_NCCL(ncclGroupStart());
    for (size_t r = 1; r < comms_.size(); ++r) {
      if (bytes[r] == 0) continue;
      ATTNLAB_NCCL(ncclSend(send[r], bytes[r], ncclChar, 0, comms_[r], streams[r]));
      ATTNLAB_NCCL(ncclRecv(recv[r], bytes[r], ncclChar, int(r), comms_[0], streams[0]));
    }
    ATTNLAB_NCCL(ncclGroupEnd());
  }

 private:
  std::vector<ncclComm_t> comms_;
};
#endif

}  // namespace

std::unique_ptr<RingTransport> one_device_transport(int ranks) { return std::make_unique<OneDevice>(ranks); }

std::string nccl_refusal(int ranks) {
#if ATTNLAB_HAVE_NCCL
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess) {
    cudaGetLastError();
    devices = 0;
  }
  if (devices < ranks) return fmt::format("{} GPUs asked, this host has {}", ranks, devices);
  return "";
#else
  (void)ranks;
  return "this build has no NCCL (CMake found no nccl.h and libnccl; ATTNLAB_NCCL_ROOT names where they are)";
#endif
}

std::unique_ptr<RingTransport> nccl_transport(int ranks) {
  if (const std::string why = nccl_refusal(ranks); !why.empty()) throw InputError(why);
#if ATTNLAB_HAVE_NCCL
  return std::make_unique<Nccl>(ranks);
#else
  return nullptr;
#endif
}

}  // namespace attnlab::kernels
