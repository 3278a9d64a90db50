// attnlab kernels: how the shards of context parallelism (core/context_parallel.h) travel between the ranks of a
// ring — K/V shards to the next rank at each step of a prefill, a decode's partial results to rank 0.
//
// Two transports behind one interface, so the ring (ring_attention.h) is the same code on both:
//   - NCCL (the collective library the field runs on): rank r on GPU r, ncclSend/ncclRecv in one group per
//     exchange, each on its rank's communication stream. Built where CMake finds NCCL (ATTNLAB_HAVE_NCCL);
//   - one device: every rank on the current GPU, each exchange a device-to-device copy. It computes what the
//     ring computes — the same shards, blocks, order and merges — without a second GPU: the [gpu] tests check
//     the ring's arithmetic with it on any one GPU, and the [gpu][multi] tests NCCL's where a host has several.
// Every exchange completes on the receiving rank's stream, as NCCL's do.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <memory>
#include <span>
#include <string>

namespace attnlab::kernels {

class RingTransport {
 public:
  virtual ~RingTransport() = default;
  virtual int ranks() const = 0;
  virtual int device_of(int rank) const = 0;  // the CUDA device rank `rank` computes on
  virtual std::string name() const = 0;       // "NCCL" or "one device", for the run's probes
  // Every rank r at once sends bytes[r] from send[r] to rank (r + 1) mod P, which receives them into
  // recv[(r + 1) mod P]; each transfer completes on the receiver's stream. The caller orders send[r]'s bytes and
  // recv[r]'s last reader before the call on streams[r].
  virtual void shift(std::span<const void* const> send, std::span<void* const> recv, std::span<const size_t> bytes,
                     std::span<const cudaStream_t> streams) = 0;
  // Every rank r > 0 with bytes[r] > 0 sends them from send[r] to rank 0's recv[r]; complete on streams[0].
  virtual void gather(std::span<const void* const> send, std::span<void* const> recv, std::span<const size_t> bytes,
                      std::span<const cudaStream_t> streams) = 0;
};

// Every rank on the current device.
std::unique_ptr<RingTransport> one_device_transport(int ranks);

// "" where NCCL can run `ranks` ranks here, one GPU each; otherwise what is missing, in one line ("this build has
// no NCCL …", "4 GPUs asked, this host has 1").
std::string nccl_refusal(int ranks);
// Rank r on device r over NCCL (one communicator per rank, ncclCommInitAll). Throws InputError with
// nccl_refusal's words where it is not empty, std::runtime_error naming NCCL's error where NCCL fails.
std::unique_ptr<RingTransport> nccl_transport(int ranks);

}  // namespace attnlab::kernels
