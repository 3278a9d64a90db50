// attnlab kernels: flash3_fp8's part of the context-parallel ring (kernels/context_parallel/ring_attention.h). On the
// wire goes what the kernel reads in HBM: per chunk, K's E4M3 codes, Vᵀ's (keys padded to 16 and permuted), and the
// FP32 scales of K's and V's 128-key blocks — about half of FP16's bytes. The chunks are 128-token aligned
// (cp::kShardAlign), so each of them holds whole scale blocks: quantizing a chunk alone (upload_fp8 on the chunk's
// tokens) gives exactly the codes and scales the one-GPU upload gives those tokens. A block is the one-GPU kernel on
// the two chunks.
#include "core/variants/kernel_param.h"
#include "core/producer_loads.h"
#include "kernels/common/cuda_check.h"
#include "kernels/common/kernel_table.h"
#include "kernels/fp8/flash3_fp8.h"
#include "kernels/fp8/flash3_fp8_host.h"

#include <algorithm>
#include <cstring>

namespace attnlab::kernels {

namespace {

// The tokens [span) of every (batch, head) of t: a tensor of span.size() tokens.
Tensor slice(const Tensor& t, cp::Span span) {
  const Shape4& s = t.shape();
  Tensor r(Shape4{s.batch, s.heads, span.size(), s.dim});
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t h = 0; h < s.heads; ++h)
      std::memcpy(r.data() + ((b * s.heads + h) * span.size()) * s.dim,
                  t.data() + ((b * s.heads + h) * s.len + span.begin) * s.dim,
                  size_t(span.size() * s.dim) * sizeof(float));
  return r;
}

void append(const DeviceBuffer& d, std::vector<std::byte>& out) {
  const size_t at = out.size();
  out.resize(at + d.bytes());
  if (d.bytes() > 0) ATTNLAB_CUDA(cudaMemcpy(out.data() + at, d.as<void>(), d.bytes(), cudaMemcpyDeviceToHost));
}

int64_t kv_pad(int64_t n) { return (n + 15) / 16 * 16; }
int64_t blocks(int64_t n) { return (n + kFlash3Fp8Block - 1) / kFlash3Fp8Block; }

class Flash3Fp8Ring final : public RingVariant {
 public:
  Flash3Fp8Ring(const Problem& p, const QKV& in, bool tma_producer) : p_(p), in_(in), tma_producer_(tma_producer) {}

  size_t shard_bytes(std::span<const cp::Span> spans) const override {
    return chunk_offset(spans, spans.size(), [&](const cp::Span& s) { return chunk_layout(s.size()).total; });
  }
  std::vector<std::byte> pack_shard(std::span<const cp::Span> spans) const override {
    std::vector<std::byte> out;
    for (const cp::Span& s : spans) {
      if (s.size() == 0) continue;
      // upload_fp8 quantizes a query too: one row of ones, dropped.
      const Tensor one_row(Shape4{p_.batch, p_.q_heads, 1, p_.head_dim}, 1.f);
      const Fp8Inputs in = upload_fp8(chunk_problem(1, s.size()), {one_row, slice(in_.k, s), slice(in_.v, s)});
      append(in.k, out), append(in.vt, out), append(in.s_k, out), append(in.s_v, out);
    }
    return out;
  }
  // Q's codes, then its block scales. The chunk's own K and V ride along into upload_fp8 and are dropped.
  std::vector<std::byte> pack_queries(cp::Span rows) const override {
    std::vector<std::byte> out;
    if (rows.size() == 0) return out;
    const cp::Span kv{0, std::min<int64_t>(rows.size(), p_.kv_len)};
    const Fp8Inputs in =
        upload_fp8(chunk_problem(rows.size(), kv.size()), {slice(in_.q, rows), slice(in_.k, kv), slice(in_.v, kv)});
    append(in.q, out), append(in.s_q, out);
    return out;
  }
  size_t workspace_bytes(int64_t, int64_t) const override { return 0; }
  void attend(const void* q, cp::Span q_rows, const void* shard, std::span<const cp::Span> spans, int chunk,
              bool causal, void* o, float* lse, void*, cudaStream_t stream) const override {
    const auto* base = static_cast<const uint8_t*>(shard) +
                       chunk_offset(spans, size_t(chunk), [&](const cp::Span& s) { return chunk_layout(s.size()).total; });
    const int64_t nq = q_rows.size(), nk = spans[size_t(chunk)].size();
    const Layout kv = chunk_layout(nk);
    Flash3Fp8Args a;
    a.q = static_cast<const uint8_t*>(q);
    a.s_q = reinterpret_cast<const float*>(a.q + size_t(p_.batch * p_.q_heads * nq * p_.head_dim));
    a.k = base, a.vt = base + kv.vt;
    a.s_k = reinterpret_cast<const float*>(base + kv.s_k), a.s_v = reinterpret_cast<const float*>(base + kv.s_v);
    a.o = static_cast<__half*>(o), a.lse = lse;
    a.batch = int(p_.batch), a.q_heads = int(p_.q_heads), a.kv_heads = int(p_.kv_heads);
    a.q_len = int(nq), a.kv_len = int(nk), a.kv_pad = int(kv_pad(nk)), a.head_dim = int(p_.head_dim);
    a.causal = causal;
    a.scale = static_cast<float>(p_.scale());
    a.tma_producer = tma_producer_;
    ATTNLAB_CUDA(flash3_fp8_forward(a, stream));
  }

 private:
  // Byte offsets of one chunk's parts in a shard, as pack_shard lays them out (upload_fp8's sizes).
  struct Layout {
    size_t vt, s_k, s_v, total;
  };
  Layout chunk_layout(int64_t n) const {
    if (n == 0) return {0, 0, 0, 0};
    const size_t heads = size_t(p_.batch * p_.kv_heads), d = size_t(p_.head_dim);
    const size_t k = heads * size_t(n) * d, vt = heads * d * size_t(kv_pad(n));
    const size_t s = heads * size_t(blocks(n)) * sizeof(float);
    return {k, k + vt, k + vt + s, k + vt + 2 * s};
  }
  Problem chunk_problem(int64_t nq, int64_t nk) const {
    Problem c = p_;
    c.q_len = nq, c.kv_len = nk, c.gpus = 1;
    return c;
  }

  Problem p_;
  const QKV& in_;
  bool tma_producer_;
};

}  // namespace

std::unique_ptr<RingVariant> flash3_fp8_ring(const Experiment& e, const VariantRequest& v, const QKV& in,
                                             const DeviceInfo&) {
  return std::make_unique<Flash3Fp8Ring>(e.problem, in, producer_loads(v, 90));
}

}  // namespace attnlab::kernels
