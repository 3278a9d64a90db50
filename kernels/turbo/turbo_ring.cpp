// attnlab kernels: turbo's part of the context-parallel ring (kernels/context_parallel/ring_attention.h).
//
// Prefill (the ring): on the wire go Alg. 1's INT8 tiles, what the prefill's attention reads — per chunk K^q1 (B·Hkv,
// pad, d), V^q1 transposed with its keys permuted per 16 (as turbo_cache_write.h's pre-pass lays it out) and the
// FP32 scales s_K, s_V of each 64-token block (Eq. 9: max|block| / 119), about half FP16's bytes; the storage
// declaration's kv_wire. Each rank would quantize its own FP16 shard once with the pre-pass and send the tiles
// around; the ring packs them from the whole inputs on the host (quant::quantize, which the pre-pass reproduces bit
// for bit), rounded to FP16 first as the one-GPU backend's inputs are. Chunks start on 128-token boundaries
// (cp::kShardAlign), so their 64-token blocks — and Q's 64-row blocks, quantized alike (l. 7) — are the one-GPU
// kernel's, codes and scales. A block is the prefill's attention (turbo_prefill_sm90.h) on the two chunks; what
// differs from the one-GPU kernel is P̃'s INT8 rounding and SAS (its threshold n_r among it), taken against a block's
// running maximum instead of the row's (test_ring_attention.cpp bounds it). The compressed cache Alg. 1 also writes
// is the decode's concern: the ring computes the attention.
//
// Decode (the sharded cache): on the wire goes the compressed cache itself (§3.1–3.3: the progressive INT4/INT2
// blocks with their s_int, z_int and block scales, the INT8 decode buffer) — each rank its part of the one-GPU cache,
// the tiles whose last token lies in its tokens (turbo_detail::slice_by_last_token: a cut never splits a 64-token
// block, also where the prefill's short last block or the buffer's flushes put blocks off the 128-token grid), laid
// out as the kernel reads a whole cache (turbo_decode_host.h's TurboCacheImage), each part 256-byte aligned. The
// choices the one-GPU reference fixes over the whole sequence: each KV head's width (Eq. 11–12's ranking of the
// prefill keys) and the buffer's universal scales (§3.3, from the prefill) are the whole cache's — the ranks would
// agree on them at prefill, as they hold the same model — so every part is the one-GPU cache's bytes for its tiles.
// A block is the one-GPU decode kernel on the part, its chains by turbo_chains for the part's tiles.
#include "core/quant/quantize.h"
#include "core/variants/turbo_cache.h"
#include "kernels/common/cuda_check.h"
#include "kernels/common/kernel_table.h"
#include "kernels/context_parallel/image_ring.h"
#include "kernels/context_parallel/shard_parts.h"
#include "kernels/turbo/turbo_decode.h"
#include "kernels/turbo/turbo_decode_host.h"
#include "kernels/turbo/turbo_prefill_sm90.h"

#include <cuda_fp16.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <utility>

namespace attnlab::kernels {

namespace {

constexpr double kQMax8 = 119;  // Alg. 1's INT8 range (TurboAttention Eq. 9)

int64_t blocks_of(int64_t n) { return (n + kTurboBlock - 1) / kTurboBlock; }

// Every (batch, head) of t rounded to FP16 (the one-GPU backend's inputs), then Eq. 9 per block of 64 tokens: INT8
// codes (heads, N, d) and one scale per block (heads, ⌈N / 64⌉) — the host's quant::quantize, which the GPU pre-pass
// and Q's quantizer (turbo_cache_write.h) compute bit for bit.
struct Blocks {
  std::vector<int8_t> codes;
  std::vector<float> scales;
};
Blocks int8_blocks(const Tensor& t) {
  const Shape4& s = t.shape();
  Blocks b;
  std::vector<float> head(size_t(s.len * s.dim));
  for (int64_t bh = 0; bh < s.batch * s.heads; ++bh) {
    const float* x = t.data() + bh * s.len * s.dim;
    for (size_t i = 0; i < head.size(); ++i) head[i] = __half2float(__float2half_rn(x[i]));
    const quant::Quantized q = quant::quantize(
        head.data(), s.len, s.dim,
        quant::Spec{.bits = 8, .granularity = quant::Granularity::block, .block_rows = kTurboBlock, .q_max = kQMax8});
    for (int16_t c : q.q) b.codes.push_back(int8_t(c));
    b.scales.insert(b.scales.end(), q.scale.begin(), q.scale.end());
  }
  return b;
}

class TurboPrefillRing final : public RingVariant {
 public:
  TurboPrefillRing(const Problem& p, const QKV& in, const ParamValues& params)
      : p_(p), exp_(turbo_exp_args(params)), tma_producer_(params.choice("kv_loads") == "tma_producer"),
        q_(int8_blocks(in.q)), k_(int8_blocks(in.k)), v_(int8_blocks(in.v)) {}

  size_t shard_bytes(std::span<const cp::Span> spans) const override {
    return chunk_offset(spans, spans.size(), [&](const cp::Span& s) { return chunk_layout(s.size()).total; });
  }
  std::vector<std::byte> pack_shard(std::span<const cp::Span> spans) const override {
    std::vector<std::byte> out;
    const int64_t pairs = p_.batch * p_.kv_heads, d = p_.head_dim, n_all = p_.kv_len, blocks_all = blocks_of(n_all);
    for (const cp::Span& s : spans) {
      const int64_t n = s.size(), pad = blocks_of(n) * kTurboBlock, first = s.begin / kTurboBlock;
      if (n == 0) continue;
      int8_t* k = grow_part<int8_t>(out, size_t(pairs * pad * d));  // K^q1 (pairs, pad, d); padding keys 0
      for (int64_t h = 0; h < pairs; ++h) copy_rows(k + h * pad * d, k_.codes, 1, 0, (h * n_all + s.begin) * d, n * d);
      put_vt(grow_part<int8_t>(out, size_t(pairs * d * pad)), v_.codes, pairs, d, n_all, s.begin, n, pad);  // V^q1ᵀ
      float* scales = grow_part<float>(out, size_t(pairs * blocks_of(n) * 2));  // (pairs, slots, 2): s_K, s_V
      for (int64_t h = 0; h < pairs; ++h)
        for (int64_t j = 0; j < blocks_of(n); ++j) {
          scales[(h * blocks_of(n) + j) * 2] = k_.scales[size_t(h * blocks_all + first + j)];
          scales[(h * blocks_of(n) + j) * 2 + 1] = v_.scales[size_t(h * blocks_all + first + j)];
        }
    }
    if (out.size() != shard_bytes(spans)) throw std::logic_error("turbo ring: a shard's layout and size disagree");
    return out;
  }
  // Q^q1's rows, then s_Q of their 64-row blocks (Alg. 1 l. 7).
  std::vector<std::byte> pack_queries(cp::Span rows) const override {
    std::vector<std::byte> out;
    const int64_t heads = p_.batch * p_.q_heads, d = p_.head_dim, n = rows.size(), blocks_all = blocks_of(p_.q_len);
    if (n == 0) return out;
    copy_rows(grow_part<int8_t>(out, size_t(heads * n * d)), q_.codes, heads, p_.q_len * d, rows.begin * d, n * d);
    copy_rows(grow_part<float>(out, size_t(heads * blocks_of(n))), q_.scales, heads, blocks_all, rows.begin / kTurboBlock,
              blocks_of(n));
    return out;
  }
  size_t workspace_bytes(int64_t, int64_t) const override { return 0; }
  void attend(const void* q, cp::Span q_rows, const void* shard, std::span<const cp::Span> spans, int chunk,
              bool causal, void* o, float* lse, void*, cudaStream_t stream) const override {
    const auto* base = static_cast<const std::byte*>(shard) +
                       chunk_offset(spans, size_t(chunk), [&](const cp::Span& s) { return chunk_layout(s.size()).total; });
    const int64_t nq = q_rows.size(), nk = spans[size_t(chunk)].size();
    const Layout kv = chunk_layout(nk);
    TurboPrefillArgs a;
    a.q8 = static_cast<const int8_t*>(q);
    a.s_q = reinterpret_cast<const float*>(a.q8 + align_part(size_t(p_.batch * p_.q_heads * nq * p_.head_dim)));
    a.k8 = reinterpret_cast<const int8_t*>(base), a.vt8 = reinterpret_cast<const int8_t*>(base + kv.vt);
    a.block_scales = reinterpret_cast<const float*>(base + kv.scales);
    a.slots = int(blocks_of(nk)), a.pad = int(blocks_of(nk) * kTurboBlock);
    a.exp = exp_, a.o = static_cast<__half*>(o), a.lse = lse;
    a.batch = int(p_.batch), a.q_heads = int(p_.q_heads), a.kv_heads = int(p_.kv_heads);
    a.q_len = int(nq), a.kv_len = int(nk), a.head_dim = int(p_.head_dim);
    a.causal = causal;
    a.scale = static_cast<float>(p_.scale());
    a.tma_producer = tma_producer_, a.ping_pong = true;  // TurboPrefillWork's: the numbers do not depend on it
    ATTNLAB_CUDA(turbo_prefill_forward(a, stream));
  }

 private:
  // Byte offsets of one chunk's parts in a shard, as pack_shard lays them out (shard_parts.h).
  struct Layout {
    size_t vt = 0, scales = 0, total = 0;
  };
  Layout chunk_layout(int64_t n) const {
    if (n == 0) return {};
    const size_t pairs = size_t(p_.batch * p_.kv_heads), d = size_t(p_.head_dim), pad = size_t(blocks_of(n) * kTurboBlock);
    Layout l;
    l.vt = align_part(pairs * pad * d);
    l.scales = l.vt + align_part(pairs * d * pad);
    l.total = l.scales + align_part(pairs * size_t(blocks_of(n)) * 2 * sizeof(float));
    return l;
  }

  Problem p_;
  TurboExpArgs exp_;
  bool tma_producer_;
  Blocks q_, k_, v_;  // Eq. 9's INT8 blocks of the whole sequence (64-token blocks: a 128-aligned chunk's are its own)
};

// One chunk's part of the cache in a shard: its bytes and where each part of TurboCacheArgs starts in them.
struct ChunkImage {
  std::vector<std::byte> bytes;
  size_t codes = 0, code_offset = 0, scale_zero = 0, block_scales = 0, universal = 0, bits = 0, pair_order = 0;
  size_t k_buffer = 0, v_buffer = 0;  // only where the part holds the pending tokens (else the codes: never read)
  TurboCacheArgs shape;               // pointers unset
};

class TurboDecodeRing final : public ImageRing<ChunkImage> {
 public:
  TurboDecodeRing(const Problem& p, const QKV& in, const ParamValues& params)
      : p_(p), in_(in), params_(params), heads_(turbo_host_caches(p, in, params)), exp_(turbo_exp_args(params)) {}

  // The step's query in FP32, as the one-GPU backend uploads it (quantized to INT8 on chip, Alg. 2 l. 1).
  std::vector<std::byte> pack_queries(cp::Span rows) const override {
    if (rows.begin != 0 || rows.end != 1) throw std::logic_error("turbo ring: decode has one query row");
    std::vector<std::byte> out(size_t(in_.q.size()) * sizeof(float));
    std::memcpy(out.data(), in_.q.data(), out.size());
    return out;
  }
  // The parts' chains (turbo_chains: they depend on a part's tiles).
  size_t workspace_bytes(int64_t q_rows, int64_t kv_len) const override {
    return most_over_images(kv_len, [&](const ChunkImage& c) { return turbo_decode_workspace_bytes(args_for(c, nullptr, q_rows)); });
  }
  void attend(const void* q, cp::Span q_rows, const void* shard, std::span<const cp::Span> spans, int chunk, bool,
              void* o, float* lse, void* workspace, cudaStream_t stream) const override {
    TurboDecodeArgs a = args_for(image(spans[size_t(chunk)]), chunk_base(shard, spans, chunk), q_rows.size());
    a.q = static_cast<const float*>(q), a.o = static_cast<__half*>(o), a.lse = lse;
    a.workspace = static_cast<float*>(workspace);
    ATTNLAB_CUDA(turbo_decode_attend(a, stream));
  }

 private:
  ChunkImage build_image(cp::Span s) const override {
    std::vector<HeadCache> parts;
    for (const HeadCache& h : heads_) parts.push_back(variants::turbo_detail::slice_by_last_token(h, s.begin, s.end));
    // Every pair's part has the same tiles (the pairs share the sequence's structure); a range of ≥ 64 tokens, or the
    // one holding the last token, holds one at least (slice_by_last_token) — as every non-empty 128-aligned range does.
    if (parts[0].k_blocks.empty() && parts[0].pending() == 0)
      throw std::logic_error("turbo ring: a decode shard holds no tile of the cache");
    const int slots = std::max(1, int(parts[0].k_blocks.size()));
    const TurboCacheImage all = turbo_cache_image(parts, slots);
    ChunkImage c;
    c.codes = put_part(c.bytes, all.codes), c.code_offset = put_part(c.bytes, all.offsets);
    c.scale_zero = put_part(c.bytes, all.scale_zero), c.block_scales = put_part(c.bytes, all.block_scales);
    c.universal = put_part(c.bytes, all.universal), c.bits = put_part(c.bytes, all.bits);
    c.pair_order = put_part(c.bytes, all.pair_order);
    c.k_buffer = c.v_buffer = c.codes;
    if (parts[0].pending() > 0) c.k_buffer = put_part(c.bytes, all.k_buffer), c.v_buffer = put_part(c.bytes, all.v_buffer);
    c.shape = all.shape;
    return c;
  }
  // The decode arguments of one part whose image starts at `base` (nullptr: sizes only), its chains by turbo_chains
  // (the one-GPU rule, on the part's tiles). The kernel does not write the cache in an attention: the pointers TurboCacheArgs
  // holds for the append step lose their const here only.
  TurboDecodeArgs args_for(const ChunkImage& img, const std::byte* base, int64_t q_rows) const {
    if (q_rows != 1) throw std::logic_error("turbo ring: decode has one query row");
    TurboDecodeArgs a;
    a.cache = img.shape;
    if (base) {
      auto* at = const_cast<std::byte*>(base);
      a.cache.codes = reinterpret_cast<uint8_t*>(at + img.codes);
      a.cache.code_offset = reinterpret_cast<const int64_t*>(at + img.code_offset);
      a.cache.scale_zero = reinterpret_cast<int8_t*>(at + img.scale_zero);
      a.cache.block_scales = reinterpret_cast<float*>(at + img.block_scales);
      a.cache.k_buffer = reinterpret_cast<int8_t*>(at + img.k_buffer);
      a.cache.v_buffer = reinterpret_cast<int8_t*>(at + img.v_buffer);
      a.cache.universal = reinterpret_cast<const float*>(at + img.universal);
      a.cache.bits = reinterpret_cast<const int*>(at + img.bits);
      a.cache.pair_order = reinterpret_cast<const int*>(at + img.pair_order);
    }
    a.exp = exp_;
    a.batch = int(p_.batch), a.q_heads = int(p_.q_heads), a.kv_heads = int(p_.kv_heads);
    a.chains = turbo_chains_for(p_, params_, a.cache);
    a.scale = static_cast<float>(p_.scale());
    return a;
  }

  Problem p_;
  const QKV& in_;
  ParamValues params_;
  std::vector<HeadCache> heads_;  // every pair's one-GPU cache
  TurboExpArgs exp_;
};

}  // namespace

std::unique_ptr<RingVariant> turbo_ring(const Experiment& e, const VariantRequest& v, const QKV& in, const DeviceInfo&) {
  if (e.problem.phase == Phase::decode) return std::make_unique<TurboDecodeRing>(e.problem, in, v.params);
  return std::make_unique<TurboPrefillRing>(e.problem, in, v.params);
}

}  // namespace attnlab::kernels
