// attnlab kernels: GPU memory as an input limit (device_memory.h).
#include "kernels/common/device_memory.h"

#include "core/context_parallel_bytes.h"
#include "core/error.h"
#include "core/registry.h"
#include "core/storage.h"

#include <cuda_runtime.h>
#include <fmt/format.h>

namespace attnlab::kernels {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

struct FreeMemory {
  size_t free = 0, total = 0;
};

FreeMemory free_memory() {
  FreeMemory m;
  if (cudaMemGetInfo(&m.free, &m.total) != cudaSuccess) {
    cudaGetLastError();  // not sticky: the caller's next call reports the device's state itself
    return {};
  }
  return m;
}

}  // namespace

double least_device_bytes(const Problem& p, const VariantRequest& v) {
  if (p.gpus > 1) return cp::rank_device_bytes(p, v);  // each GPU of the ring holds its part
  const double q = double(p.q_shape().count()), rows = double(p.batch * p.q_heads * p.q_len);
  double stored_kv = 2.0 * 2.0 * double(p.batch * p.kv_heads * p.kv_len * p.head_dim);  // FP16 K and V
  if (const VariantSpec* spec = find_variant(v.id); spec && spec->storage) {
    const Storage st = spec->storage(p, v.params);
    if (!st.kv_in) stored_kv = cache_bytes(st, p);  // read out of the cache the variant keeps
  }
  return 2.0 * q /* Q */ + 2.0 * q /* O */ + 4.0 * rows /* logsumexp */ + stored_kv;
}

void check_device_memory(double bytes, const std::string& who) {
  const FreeMemory m = free_memory();
  if (m.total == 0 || bytes <= double(m.free)) return;
  fail_input(echo(who, 40), fmt::format("needs at least {:.2f} GiB of GPU memory, the GPU has {:.2f} GiB free (of {:.2f} "
                                        "GiB): make the problem smaller (batch, heads or sequence length)",
                                        bytes / kGiB, double(m.free) / kGiB, double(m.total) / kGiB));
}

std::string allocation_refusal(size_t bytes) {
  const FreeMemory m = free_memory();
  return fmt::format("GPU memory: a buffer of {:.2f} GiB does not fit, the GPU has {:.2f} GiB free (of {:.2f} GiB): "
                     "make the problem smaller (batch, heads or sequence length)",
                     double(bytes) / kGiB, double(m.free) / kGiB, double(m.total) / kGiB);
}

}  // namespace attnlab::kernels
