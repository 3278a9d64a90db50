// attnlab kernels: int_flash's part of the context-parallel ring (kernels/context_parallel/ring_attention.h). On the wire
// goes Alg. 1's storage format (Require line, §3.2), per chunk: K's INT8 codes and FP32 per-token scales S_K, and V —
// full INT8: Vᵀ's codes (keys padded to 16 and permuted, int_flash.h) and S_V; half-INT8 (v_fp16): V in FP16. A quarter
// of FP16's bytes for K and (full INT8) V, plus 4 bytes a token for S_K.
//
// The choice (§3.2 gives V one scale for the whole tensor): S_V = max|V| / 127 over the whole sequence of the (batch,
// KV head), the one-GPU kernel's scale. Across GPUs the ranks would agree on it by an all-reduce of their shards'
// maxima (ncclMax, 4 bytes per head) before any quantizes its V; the ring packs its shards from the whole inputs, so
// it takes that maximum from them directly and carries S_V with every chunk. Per-shard scales would be the other
// reading: each rank's V finer, but not the one-GPU codes, so the ring would compute another function. With the
// global S_V, Q's and K's per-token codes and V's codes are exactly the one-GPU kernel's (the host quantizer here is
// the GPU's bit for bit, quantize_int8.h); what differs is P's INT8 rounding, taken against a block's running
// maximum instead of the row's (test_ring_attention.cpp bounds it). A block is the one-GPU kernel — the generation
// the backend picks for the whole problem (its P codes depend on the tile width) — on the two chunks.
#include "core/kernel_traits.h"
#include "core/producer_loads.h"
#include "core/quant/quantize.h"
#include "core/variants/int_flash_accumulation.h"
#include "kernels/common/cuda_check.h"
#include "kernels/common/kernel_table.h"
#include "kernels/context_parallel/shard_parts.h"
#include "kernels/int8/int_flash.h"
#include "kernels/int8/int_flash_host.h"

#include <cuda_fp16.h>

#include <cstring>
#include <stdexcept>

namespace attnlab::kernels {

namespace {

constexpr double kR = 127;  // Alg. 1's R: the codes' range

int64_t kv_pad(int64_t n) { return (n + 15) / 16 * 16; }

// One tensor's INT8 codes and scales for every (batch, head), quantized once by the reference's rules: per token
// (Q, K) or per (batch, head) over the whole sequence (V).
struct Codes {
  std::vector<int8_t> q;     // (B, H, N, d)
  std::vector<float> scale;  // per token: (B, H, N); per head: (B, H)
};
Codes quantize_all(const Tensor& t, quant::Granularity g) {
  const Shape4& s = t.shape();
  Codes c;
  c.q.resize(size_t(t.size()));
  for (int64_t bh = 0; bh < s.batch * s.heads; ++bh) {
    const float* x = t.data() + bh * s.len * s.dim;
    const quant::Quantized qz =
        quant::quantize(x, s.len, s.dim, quant::Spec{.bits = 8, .granularity = g, .q_max = kR});
    for (size_t i = 0; i < qz.q.size(); ++i) c.q[size_t(bh * s.len * s.dim) + i] = int8_t(qz.q[i]);
    c.scale.insert(c.scale.end(), qz.scale.begin(), qz.scale.end());
  }
  return c;
}

class IntFlashRing final : public RingVariant {
 public:
  IntFlashRing(const Problem& p, const QKV& in, KernelPath path, IntFlashSchedule schedule, bool v_fp16)
      : p_(p), in_(in), path_(path), schedule_(schedule), v_fp16_(v_fp16),
        q_(quantize_all(in.q, quant::Granularity::token)), k_(quantize_all(in.k, quant::Granularity::token)) {
    if (!v_fp16_) v_ = quantize_all(in.v, quant::Granularity::tensor);
  }

  size_t shard_bytes(std::span<const cp::Span> spans) const override {
    return chunk_offset(spans, spans.size(), [&](const cp::Span& s) { return chunk_layout(s.size()).total; });
  }
  std::vector<std::byte> pack_shard(std::span<const cp::Span> spans) const override {
    std::vector<std::byte> out;
    const int64_t heads = p_.batch * p_.kv_heads, d = p_.head_dim, n_all = p_.kv_len;
    for (const cp::Span& s : spans) {
      const int64_t n = s.size(), pad = kv_pad(n);
      if (n == 0) continue;
      copy_rows(grow_part<int8_t>(out, size_t(heads * n * d)), k_.q, heads, n_all * d, s.begin * d, n * d);
      float* s_k = grow_part<float>(out, size_t(heads * pad));  // padding keys: scale 0 (int_flash.h)
      for (int64_t h = 0; h < heads; ++h) copy_rows(s_k + h * pad, k_.scale, 1, 0, h * n_all + s.begin, n);
      if (v_fp16_) {  // half-INT8: V rounded once to FP16 (upload_int8's v16)
        __half* v = grow_part<__half>(out, size_t(heads * n * d));
        for (int64_t h = 0; h < heads; ++h)
          for (int64_t i = 0; i < n * d; ++i) v[h * n * d + i] = __float2half_rn(in_.v.data()[(h * n_all + s.begin) * d + i]);
      } else {  // Vᵀ (heads × d × pad), keys permuted per 16; padding keys code 0; then S_V per head
        put_vt(grow_part<int8_t>(out, size_t(heads * d * pad)), v_.q, heads, d, n_all, s.begin, n, pad);
        std::memcpy(grow_part<float>(out, size_t(heads)), v_.scale.data(), size_t(heads) * sizeof(float));
      }
    }
    if (out.size() != shard_bytes(spans)) throw std::logic_error("int_flash ring: a shard's layout and size disagree");
    return out;
  }
  // Q's codes, then its per-token scales.
  std::vector<std::byte> pack_queries(cp::Span rows) const override {
    std::vector<std::byte> out;
    const int64_t heads = p_.batch * p_.q_heads, d = p_.head_dim, n = rows.size();
    if (n == 0) return out;
    copy_rows(grow_part<int8_t>(out, size_t(heads * n * d)), q_.q, heads, p_.q_len * d, rows.begin * d, n * d);
    copy_rows(grow_part<float>(out, size_t(heads * n)), q_.scale, heads, p_.q_len, rows.begin, n);
    return out;
  }
  size_t workspace_bytes(int64_t, int64_t) const override { return 0; }
  void attend(const void* q, cp::Span q_rows, const void* shard, std::span<const cp::Span> spans, int chunk,
              bool causal, void* o, float* lse, void*, cudaStream_t stream) const override {
    const auto* base = static_cast<const std::byte*>(shard) +
                       chunk_offset(spans, size_t(chunk), [&](const cp::Span& s) { return chunk_layout(s.size()).total; });
    const int64_t nq = q_rows.size(), nk = spans[size_t(chunk)].size();
    const Layout kv = chunk_layout(nk);
    IntFlashArgs a;
    a.q = static_cast<const int8_t*>(q);
    a.s_q = reinterpret_cast<const float*>(a.q + align_part(size_t(p_.batch * p_.q_heads * nq * p_.head_dim)));
    a.k = reinterpret_cast<const int8_t*>(base);
    a.s_k = reinterpret_cast<const float*>(base + kv.s_k);
    if (v_fp16_) a.v16 = reinterpret_cast<const __half*>(base + kv.v);
    else a.vt = reinterpret_cast<const int8_t*>(base + kv.v), a.s_v = reinterpret_cast<const float*>(base + kv.s_v);
    a.v_fp16 = v_fp16_;
    a.o = static_cast<__half*>(o), a.lse = lse;
    a.batch = int(p_.batch), a.q_heads = int(p_.q_heads), a.kv_heads = int(p_.kv_heads);
    a.q_len = int(nq), a.kv_len = int(nk), a.kv_pad = int(kv_pad(nk)), a.head_dim = int(p_.head_dim);
    a.causal = causal;
    a.scale = static_cast<float>(p_.scale());
    a.path = path_;
    a.tma_producer = schedule_.tma_producer, a.ping_pong = schedule_.ping_pong, a.pv_across_tiles = schedule_.pv_across_tiles;
    ATTNLAB_CUDA(int_flash_forward(a, stream));
  }

 private:
  // Byte offsets of one chunk's parts in a shard, as pack_shard lays them out (shard_parts.h).
  struct Layout {
    size_t s_k = 0, v = 0, s_v = 0, total = 0;
  };
  Layout chunk_layout(int64_t n) const {
    if (n == 0) return {};
    const size_t heads = size_t(p_.batch * p_.kv_heads), d = size_t(p_.head_dim), pad = size_t(kv_pad(n));
    Layout l;
    l.s_k = align_part(heads * size_t(n) * d);
    l.v = l.s_k + align_part(heads * pad * sizeof(float));
    if (v_fp16_) return l.s_v = l.v, l.total = l.v + align_part(heads * size_t(n) * d * sizeof(__half)), l;
    l.s_v = l.v + align_part(heads * d * pad);
    l.total = l.s_v + align_part(heads * sizeof(float));
    return l;
  }

  Problem p_;
  const QKV& in_;
  KernelPath path_;
  IntFlashSchedule schedule_;
  bool v_fp16_;
  Codes q_, k_, v_;
};

}  // namespace

std::unique_ptr<RingVariant> int_flash_ring(const Experiment& e, const VariantRequest& v, const QKV& in,
                                            const DeviceInfo& device) {
  KernelPath path = KernelPath::warp_mma;
  if (const std::string why = int_flash_path(v, e.problem, device, path); !why.empty()) throw std::runtime_error(why);
  const IntFlashSchedule schedule{.tma_producer = producer_loads(v, 90), .pv_across_tiles = variants::pv_across_tiles(v.params)};
  return std::make_unique<IntFlashRing>(e.problem, in, path, schedule, v.params.flag("v_fp16"));
}

}  // namespace attnlab::kernels
