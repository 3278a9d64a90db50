// attnlab kernels: flash2's part of the context-parallel ring (kernels/context_parallel/ring_attention.h). Its
// storage format on the wire is flash2's in HBM: a shard is, chunk by chunk, K then V as (B, Hkv, n, d) FP16; a
// block is flash2's one-GPU kernel (flash2_forward: the wgmma generation for a prefill block where it runs, the
// grouped decode kernel for a decode shard) on the chunks, with the whole problem's softmax scale.
#include "core/variants/kernel_param.h"
#include "kernels/common/cuda_check.h"
#include "kernels/common/kernel_table.h"
#include "kernels/flash2/flash2.h"
#include "kernels/flash2/flash2_host.h"

#include <cuda_fp16.h>

#include <cstring>

namespace attnlab::kernels {

namespace {

// The rows [span) of every (batch, head) of t, as FP16, appended to `out`.
void append_rows(const Tensor& t, cp::Span span, std::vector<std::byte>& out) {
  const Shape4& s = t.shape();
  const size_t at = out.size();
  out.resize(at + size_t(s.batch * s.heads * span.size() * s.dim) * sizeof(__half));
  auto* h = reinterpret_cast<__half*>(out.data() + at);
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t head = 0; head < s.heads; ++head)
      for (int64_t n = span.begin; n < span.end; ++n)
        for (int64_t c = 0; c < s.dim; ++c) *h++ = __float2half_rn(t.at(b, head, n, c));
}

class Flash2Ring final : public RingVariant {
 public:
  Flash2Ring(const Problem& p, const QKV& in, int sm_count, KernelPath path, Flash2Schedule schedule)
      : p_(p), in_(in), sm_count_(sm_count), path_(path), schedule_(schedule) {}

  size_t shard_bytes(std::span<const cp::Span> spans) const override {
    return chunk_offset(spans, spans.size(), [&](const cp::Span& s) { return chunk_bytes(s.size()); });
  }
  std::vector<std::byte> pack_shard(std::span<const cp::Span> spans) const override {
    std::vector<std::byte> out;
    for (const cp::Span& s : spans) append_rows(in_.k, s, out), append_rows(in_.v, s, out);
    return out;
  }
  std::vector<std::byte> pack_queries(cp::Span rows) const override {
    std::vector<std::byte> out;
    append_rows(in_.q, rows, out);
    return out;
  }
  size_t workspace_bytes(int64_t q_rows, int64_t kv_len) const override {
    return flash2_workspace_bytes(args(q_rows, kv_len, false));
  }
  void attend(const void* q, cp::Span q_rows, const void* shard, std::span<const cp::Span> spans, int chunk,
              bool causal, void* o, float* lse, void* workspace, cudaStream_t stream) const override {
    Flash2Args a = args(q_rows.size(), spans[size_t(chunk)].size(), causal);
    const auto* base = static_cast<const std::byte*>(shard) +
                       chunk_offset(spans, size_t(chunk), [&](const cp::Span& s) { return chunk_bytes(s.size()); });
    const size_t half = chunk_bytes(spans[size_t(chunk)].size()) / 2;
    a.q = static_cast<const __half*>(q);
    a.k = reinterpret_cast<const __half*>(base);
    a.v = reinterpret_cast<const __half*>(base + half);
    a.o = static_cast<__half*>(o), a.lse = lse, a.workspace = static_cast<float*>(workspace);
    ATTNLAB_CUDA(flash2_forward(a, stream));
  }

 private:
  // One chunk of n tokens: K then V, (B, Hkv, n, d) FP16 each.
  size_t chunk_bytes(int64_t n) const { return 2 * size_t(n) * size_t(p_.batch * p_.kv_heads * p_.head_dim) * sizeof(__half); }
  // flash2_args' rule for a block of nq query rows against nk keys: the split-KV count for this GPU, one split where
  // the warpgroup generation runs (it does not split), the variant's pinned generation and K/V loads.
  Flash2Args args(int64_t nq, int64_t nk, bool causal) const {
    Flash2Args a;
    a.batch = int(p_.batch), a.q_heads = int(p_.q_heads), a.kv_heads = int(p_.kv_heads);
    a.q_len = int(nq), a.kv_len = int(nk), a.head_dim = int(p_.head_dim);
    a.causal = causal;
    a.scale = static_cast<float>(p_.scale());
    a.path = path_;
    a.tma_producer = schedule_.tma_producer, a.ping_pong = schedule_.ping_pong, a.wide_tile = schedule_.wide_tile;
    a.persistent = schedule_.persistent, a.head_major = schedule_.head_major, a.dynamic_order = schedule_.dynamic_order;
    a.splits = flash2_splits(a, sm_count_);
    if (flash2_resolved_path(a) == KernelPath::warpgroup_mma) a.splits = 1;
    return a;
  }

  Problem p_;
  const QKV& in_;
  int sm_count_;
  KernelPath path_;
  Flash2Schedule schedule_;
};

}  // namespace

std::unique_ptr<RingVariant> flash2_ring(const Experiment& e, const VariantRequest& v, const QKV& in,
                                         const DeviceInfo& device) {
  // The schedule of the whole problem (kv_tile auto weighs the whole N's padding, not a shard's: the tile changes only
  // the order of the accumulation, as on one GPU).
  return std::make_unique<Flash2Ring>(e.problem, in, device.sm_count,
                                      path_of_generation(variants::pinned_generation(v.params)),
                                      flash2_schedule_of(v, e.problem));
}

}  // namespace attnlab::kernels
