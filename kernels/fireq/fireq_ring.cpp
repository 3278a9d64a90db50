// attnlab kernels: fireq's part of the context-parallel ring (kernels/context_parallel/ring_attention.h) — prefill (the
// ring) and decode (the cache sharded by tokens). On the wire goes FireQ's storage format, the bytes its kernels read:
//   the INT4 cache (decode, and prefill with prefill_kv = int4, the default): per (batch, KV head), the chunk's 64-token
//     tiles of fireq_layout.h — K̃'s and V's INT4 codes and their E4M3 token scales σ (§2.1 Eq. 1), d + 2 bytes a
//     token and KV head against FP16's 4·d;
//   App. D's FP8 operands (prefill_kv = fp8): K̂ in E4M3 with β_K per token (or per 128-key tile: fp8_k_scale), V̂ᵀ in
//     E4M3 (keys padded to 16 and permuted, vt_permutation.h) with β_V per 128-key tile.
// The parts of a chunk lie end to end, 256-byte aligned (shard_parts.h).
//
// Every chunk starts on a 128-token boundary (cp::kShardAlign), so it holds whole 64-token cache tiles and whole
// 128-key scale tiles, and every quantity above is per token or per tile: a chunk's bytes are exactly the one-GPU
// operands' for its tokens (the last chunk's last cache tile padded as the one-GPU cache pads it). The choice (what
// the one-GPU reference fixes over the whole sequence): §3.2.1's smoothing factors s are the ones computed from all
// kv_len keys — the calibration a deployment runs offline, so every rank would hold them before the first token; the
// ring takes them from the whole inputs, as the one-GPU kernel's host does, and Q̃ = Q·s is quantized per token
// (Eq. 2). Q̂ and β are then the one-GPU kernel's, row for row; what differs from it is P̃'s E4M3 rounding taken
// against a block's running maximum instead of the row's (test_ring_attention.cpp bounds it). A block is the one-GPU
// kernel on the two chunks: the prefill kernel (its loop order and loads as the backend picks them), or the decode
// kernel with its chains for the chunk on this GPU. O is stored in BF16 (§3.2.2 Stage 3), and so is the ring's
// result.
#include "core/producer_loads.h"
#include "core/variants/fireq_layout.h"
#include "kernels/common/cuda_check.h"
#include "kernels/common/kernel_table.h"
#include "kernels/context_parallel/shard_parts.h"
#include "kernels/fireq/fireq_backend.h"
#include "kernels/fireq/fireq_decode.h"
#include "kernels/fireq/fireq_decode_host.h"
#include "kernels/fireq/fireq_prefill.h"
#include "kernels/fireq/fireq_prefill_host.h"

#include <stdexcept>

namespace attnlab::kernels {

namespace {

int64_t kv_pad(int64_t n) { return (n + 15) / 16 * 16; }
int64_t scale_tiles(int64_t n) { return (n + kFireqPrefillBlock - 1) / kFireqPrefillBlock; }

class FireqRing final : public RingVariant {
 public:
  FireqRing(const Problem& p, const QKV& in, const ParamValues& params, bool three_stage, bool tma_producer,
            int sm_count)
      : p_(p), decode_(p.phase == Phase::decode), three_stage_(three_stage), tma_producer_(tma_producer),
        sm_count_(sm_count) {
    if (decode_) {
      FireqHostInputs h = fireq_host_inputs(p, in, params);
      cache_ = concatenated(h.images), q_ = std::move(h.q), beta_q_ = std::move(h.q_scale);
      int4_ = true;
    } else {
      prefill_ = fireq_prefill_host_inputs(p, in, params);
      int4_ = prefill_.int4_kv;
      cache_ = std::move(prefill_.cache), q_ = std::move(prefill_.q), beta_q_ = std::move(prefill_.beta_q);
    }
  }

  OutputElement output_element() const override { return OutputElement::bf16; }

  size_t shard_bytes(std::span<const cp::Span> spans) const override {
    return chunk_offset(spans, spans.size(), [&](const cp::Span& s) { return chunk_layout(s.size()).total; });
  }
  std::vector<std::byte> pack_shard(std::span<const cp::Span> spans) const override {
    std::vector<std::byte> out;
    const int64_t pairs = p_.batch * p_.kv_heads, d = p_.head_dim;
    for (const cp::Span& s : spans) {
      const int64_t n = s.size();
      if (n == 0) continue;
      if (int4_) {  // each pair's tiles [begin / 64, begin / 64 + tiles_for(n)) of its one-GPU image
        const int64_t tile = fireq_layout::tile_bytes(d), all = fireq_layout::tiles_for(p_.kv_len);
        const int64_t tiles = fireq_layout::tiles_for(n), first = s.begin / fireq_layout::kTile;
        copy_rows(grow_part<uint8_t>(out, size_t(pairs * tiles * tile)), cache_, pairs, all * tile, first * tile,
                  tiles * tile);
        continue;
      }
      const FireqPrefillHostInputs& h = prefill_;
      const int64_t pad = kv_pad(n), tiles = scale_tiles(n), all_tiles = scale_tiles(p_.kv_len);
      copy_rows(grow_part<uint8_t>(out, size_t(pairs * n * d)), h.k, pairs, p_.kv_len * d, s.begin * d, n * d);
      // V̂ᵀ's rows and the per-key β_K are permuted within groups of 16 keys; the chunk starts on a group, so its keys
      // are the one-GPU row's positions [begin, begin + pad), padding keys 0 as there.
      copy_rows(grow_part<uint8_t>(out, size_t(pairs * d * pad)), h.vt, pairs * d, h.kv_pad, s.begin, pad);
      const int64_t first_tile = s.begin / kFireqPrefillBlock;
      if (h.k_tile)
        copy_rows(grow_part<float>(out, size_t(pairs * tiles)), h.beta_k_tile_tau, pairs, all_tiles, first_tile, tiles);
      else
        copy_rows(grow_part<float>(out, size_t(pairs * pad)), h.beta_k_tau, pairs, h.kv_pad, s.begin, pad);
      copy_rows(grow_part<float>(out, size_t(pairs * tiles)), h.beta_v, pairs, all_tiles, first_tile, tiles);
    }
    if (out.size() != shard_bytes(spans)) throw std::logic_error("fireq ring: a shard's layout and size disagree");
    return out;
  }
  // Q̂'s E4M3 rows, then their factors: β per query token (prefill), fl(β·τ) per query head (decode).
  std::vector<std::byte> pack_queries(cp::Span rows) const override {
    std::vector<std::byte> out;
    const int64_t heads = p_.batch * p_.q_heads, d = p_.head_dim, n = rows.size();
    if (n == 0) return out;
    copy_rows(grow_part<uint8_t>(out, size_t(heads * n * d)), q_, heads, p_.q_len * d, rows.begin * d, n * d);
    copy_rows(grow_part<float>(out, size_t(heads * n)), beta_q_, heads, p_.q_len, rows.begin, n);
    return out;
  }
  size_t workspace_bytes(int64_t q_rows, int64_t kv_len) const override {
    if (!decode_) return 0;
    return fireq_decode_workspace_bytes(decode_args(nullptr, q_rows, nullptr, kv_len));
  }
  void attend(const void* q, cp::Span q_rows, const void* shard, std::span<const cp::Span> spans, int chunk,
              bool causal, void* o, float* lse, void* workspace, cudaStream_t stream) const override {
    const auto* base = static_cast<const uint8_t*>(shard) +
                       chunk_offset(spans, size_t(chunk), [&](const cp::Span& s) { return chunk_layout(s.size()).total; });
    const int64_t nq = q_rows.size(), nk = spans[size_t(chunk)].size();
    const auto* q_codes = static_cast<const uint8_t*>(q);
    const auto* q_factor = reinterpret_cast<const float*>(q_codes + align_part(size_t(p_.batch * p_.q_heads * nq * p_.head_dim)));
    if (decode_) {
      FireqDecodeArgs a = decode_args(q_codes, nq, base, nk);
      a.q_scale = q_factor, a.o = static_cast<__nv_bfloat16*>(o), a.lse = lse, a.workspace = static_cast<float*>(workspace);
      ATTNLAB_CUDA(fireq_decode(a, stream));
      return;
    }
    const Layout kv = chunk_layout(nk);
    FireqPrefillArgs a;
    a.q = q_codes, a.beta_q = q_factor;
    if (int4_) {
      a.cache = base;
    } else {
      a.k = base, a.vt = base + kv.vt;
      if (prefill_.k_tile) a.beta_k_tile_tau = reinterpret_cast<const float*>(base + kv.beta_k);
      else a.beta_k_tau = reinterpret_cast<const float*>(base + kv.beta_k);
      a.beta_v = reinterpret_cast<const float*>(base + kv.beta_v);
    }
    a.int4_kv = int4_, a.k_tile = prefill_.k_tile, a.fp16_softmax = prefill_.fp16_softmax;
    a.o = static_cast<__nv_bfloat16*>(o), a.lse = lse;
    a.batch = int(p_.batch), a.q_heads = int(p_.q_heads), a.kv_heads = int(p_.kv_heads);
    a.q_len = int(nq), a.kv_len = int(nk), a.head_dim = int(p_.head_dim);
    a.kv_pad = int4_ ? 0 : int(kv_pad(nk));  // V̂ᵀ's and β_K's key stride (FP8 mode), as the one-GPU host sets it
    a.causal = causal;
    a.scale = static_cast<float>(p_.scale());  // the reference's τ
    a.three_stage = three_stage_, a.tma_producer = tma_producer_;
    ATTNLAB_CUDA(fireq_prefill_forward(a, stream));
  }

 private:
  // Byte offsets of one chunk's parts in a shard, as pack_shard lays them out (shard_parts.h).
  struct Layout {
    size_t vt = 0, beta_k = 0, beta_v = 0, total = 0;
  };
  Layout chunk_layout(int64_t n) const {
    if (n == 0) return {};
    const size_t pairs = size_t(p_.batch * p_.kv_heads), d = size_t(p_.head_dim);
    if (int4_) return {.total = align_part(pairs * size_t(fireq_layout::tiles_for(n) * fireq_layout::tile_bytes(int64_t(d))))};
    const size_t pad = size_t(kv_pad(n)), tiles = size_t(scale_tiles(n));
    Layout l;
    l.vt = align_part(pairs * size_t(n) * d);
    l.beta_k = l.vt + align_part(pairs * d * pad);
    l.beta_v = l.beta_k + align_part(pairs * (prefill_.k_tile ? tiles : pad) * sizeof(float));
    l.total = l.beta_v + align_part(pairs * tiles * sizeof(float));
    return l;
  }
  // The decode kernel's arguments for a chunk of `kv_len` tokens whose tiles start at `tiles` (nullptr: sizes only),
  // its chains as the one-GPU kernel picks them for that many tiles on this GPU (fireq_chains_here's rule).
  FireqDecodeArgs decode_args(const uint8_t* q, int64_t q_rows, const uint8_t* tiles, int64_t kv_len) const {
    if (q_rows != 1) throw std::logic_error("fireq ring: decode has one query row");
    FireqDecodeArgs a;
    a.cache.tiles = tiles, a.cache.pairs = int(p_.batch * p_.kv_heads), a.cache.head_dim = int(p_.head_dim);
    a.cache.tokens = int(kv_len);
    a.q = q;
    a.batch = int(p_.batch), a.q_heads = int(p_.q_heads), a.kv_heads = int(p_.kv_heads);
    if (warps_per_sm_ == 0) ATTNLAB_CUDA(fireq_decode_warps_per_sm(int(p_.head_dim), warps_per_sm_));
    a.chains = fireq_decode_chains(a.cache.pairs, fireq_decode_tiles(a.cache), sm_count_, warps_per_sm_);
    return a;
  }

  Problem p_;
  bool decode_, three_stage_, tma_producer_;
  int sm_count_;
  bool int4_ = true;
  std::vector<uint8_t> cache_;         // the INT4 cache: every pair's one-GPU image, back to back
  FireqPrefillHostInputs prefill_;     // prefill: the one-GPU operands (FP8 mode: K̂, V̂ᵀ and their scales)
  std::vector<uint8_t> q_;             // Q̂ (B, Hq, Nq, d) E4M3
  std::vector<float> beta_q_;          // β per query token (prefill) or fl(β·τ) per query head (decode)
  mutable int warps_per_sm_ = 0;       // the decode kernel's occupancy, asked once (the ring calls from one thread)
};

}  // namespace

std::unique_ptr<RingVariant> fireq_ring(const Experiment& e, const VariantRequest& v, const QKV& in,
                                        const DeviceInfo& device) {
  // The backend's choices (fireq_backend.cpp): the loop order the `pipeline` parameter names, the TMA producer where
  // the kernel has one (core/producer_loads.h).
  return std::make_unique<FireqRing>(e.problem, in, v.params, v.params.choice("pipeline") == "three_stage",
                                     producer_loads(v, 90), device.sm_count);
}

}  // namespace attnlab::kernels
