#include "kernels/flash2/flash2_host.h"

#include "core/producer_loads.h"
#include "kernels/common/fp16_upload.h"
#include "kernels/common/poisoned_output.h"
#include "kernels/flash2/flash2_sm90.h"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

namespace attnlab::kernels {

Flash2Inputs upload_fp16(const QKV& in) {
  return {upload_rounded_fp16(in.q), upload_rounded_fp16(in.k), upload_rounded_fp16(in.v)};
}

Flash2Args flash2_args(const Problem& p, const Flash2Inputs& inputs, __half* o, float* lse, int sm_count) {
  Flash2Args a;
  a.q = inputs.q.as<__half>(), a.k = inputs.k.as<__half>(), a.v = inputs.v.as<__half>();
  a.o = o, a.lse = lse;
  a.batch = int(p.batch), a.q_heads = int(p.q_heads), a.kv_heads = int(p.kv_heads);
  a.q_len = int(p.q_len), a.kv_len = int(p.kv_len), a.head_dim = int(p.head_dim);
  a.causal = p.causal;
  a.scale = static_cast<float>(p.scale());
  a.splits = flash2_splits(a, sm_count);
  return a;
}

Flash2Output flash2_once(const Problem& p, const Flash2Inputs& inputs, int sm_count, KernelPath path, int splits,
                         Flash2Schedule schedule) {
  const PoisonedOutput out_dev(p);
  Flash2Args a = flash2_args(p, inputs, out_dev.o(), out_dev.lse(), sm_count);
  if (splits > 0) a.splits = splits;
  if (path == KernelPath::warpgroup_mma) a.splits = 1;  // the warpgroup kernel does not split the keys
  a.path = path;
  a.tma_producer = schedule.tma_producer, a.ping_pong = schedule.ping_pong, a.wide_tile = schedule.wide_tile;
  a.persistent = schedule.persistent, a.head_major = schedule.head_major, a.dynamic_order = schedule.dynamic_order;
  DeviceBuffer workspace(flash2_workspace_bytes(a));  // after the schedule: a dynamic order's counter
  a.workspace = workspace.as<float>();
  ATTNLAB_CUDA(flash2_forward(a, nullptr));
  ATTNLAB_CUDA(cudaDeviceSynchronize());
  const KernelPath ran = flash2_resolved_path(a);
  const bool tma = ran == KernelPath::warpgroup_mma ? a.tma_producer : flash2_decode_takes(a) && flash2_decode_tma(a);
  const bool persistent = ran == KernelPath::warpgroup_mma && flash2_sm90_persistent(a);
  Flash2Output out{Tensor(), {}, a.splits, ran, tma, flash2_block_c(a), persistent, persistent && a.dynamic_order};
  out_dev.read("flash2", out.o, out.lse);
  return out;
}

Flash2Schedule flash2_schedule_of(const VariantRequest& v, const Problem& p) {
  const KernelTraits* t = find_kernel_traits("flash2", int(p.head_dim), 90);
  return {.tma_producer = producer_loads(v, 90),
          .wide_tile = t != nullptr && prefill_block_c(*t, v, p.causal, p.kv_len) != t->block_c,
          .persistent = persistent_row_blocks(v),
          .head_major = persistent_head_by_head(v),
          .dynamic_order = persistent_dynamic(v)};
}

}  // namespace attnlab::kernels
