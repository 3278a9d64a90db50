// attnlab kernels: kivi's part of the context-parallel ring (kernels/context_parallel/ring_attention.h) — decode over a
// KIVI cache sharded by tokens. A rank's shard is its tokens of the one-GPU cache (quant::kivi_slice of every pair's
// cache, the same codes, FP16 scales and zero points and FP16 residual), in the kernel's device image
// (kivi_layout::device_image, pair after pair: pairs_image), its parts 256-byte aligned in one block of bytes — what
// the links carry; the cache of every rank is the one-GPU kernel's, cut on 128-token boundaries (cp::kShardAlign), so
// a key group (a power of two ≤ 128: kivi_cannot_run) is never cut and the FP16 residual stays with the last ranks.
// A block is the one-GPU decode kernel on the shard, its chains by kivi_decode_chains on this GPU. The images of the
// spans are kept (image_ring.h).
#include "core/variants/kivi_image.h"
#include "kernels/common/cuda_check.h"
#include "kernels/common/kernel_table.h"
#include "kernels/context_parallel/image_ring.h"
#include "kernels/context_parallel/shard_parts.h"
#include "kernels/kivi/kivi_decode.h"
#include "kernels/kivi/kivi_decode_host.h"

#include <cuda_fp16.h>

#include <stdexcept>
#include <utility>

namespace attnlab::kernels {

namespace {

// One chunk's image in a shard: its bytes and where each part of KiviCacheArgs starts in them.
struct ChunkImage {
  std::vector<std::byte> bytes;
  size_t k_codes = 0, v_codes = 0, k_params = 0, v_params = 0, k_residual = 0, v_residual = 0, slot_exact = 0;
  KiviCacheArgs shape;  // pointers unset: the shape fields only
};

class KiviRing final : public ImageRing<ChunkImage> {
 public:
  KiviRing(const Problem& p, const QKV& in, const ParamValues& params, int sm_count)
      : p_(p), in_(in), caches_(kivi_host_caches(p, in, params)), sm_count_(sm_count) {}

  // The step's query, rounded to FP16 (the reference stores Q in FP16; upload_query_fp16).
  std::vector<std::byte> pack_queries(cp::Span rows) const override {
    std::vector<std::byte> out(size_t(p_.batch * p_.q_heads * rows.size() * p_.head_dim) * sizeof(__half));
    auto* h = reinterpret_cast<__half*>(out.data());
    const Shape4& s = in_.q.shape();
    for (int64_t bh = 0; bh < s.batch * s.heads; ++bh)
      for (int64_t r = rows.begin; r < rows.end; ++r)
        for (int64_t c = 0; c < s.dim; ++c) *h++ = __float2half_rn(in_.q.data()[(bh * s.len + r) * s.dim + c]);
    return out;
  }
  // The chunks' chains on this GPU (a chunk's tiles depend on where its FP16 residual starts, not on its size alone).
  size_t workspace_bytes(int64_t q_rows, int64_t kv_len) const override {
    return most_over_images(kv_len, [&](const ChunkImage& c) { return kivi_decode_workspace_bytes(args_for(c, nullptr, q_rows)); });
  }
  void attend(const void* q, cp::Span q_rows, const void* shard, std::span<const cp::Span> spans, int chunk, bool,
              void* o, float* lse, void* workspace, cudaStream_t stream) const override {
    KiviDecodeArgs a = args_for(image(spans[size_t(chunk)]), chunk_base(shard, spans, chunk), q_rows.size());
    a.q = static_cast<const __half*>(q), a.o = static_cast<__half*>(o), a.lse = lse;
    a.workspace = static_cast<float*>(workspace);
    ATTNLAB_CUDA(kivi_decode(a, stream));
  }

 private:
  ChunkImage build_image(cp::Span s) const override {
    std::vector<quant::KiviCache> slices;
    for (const quant::KiviCache& c : caches_) slices.push_back(quant::kivi_slice(c, s.begin, s.end));
    const kivi_layout::Image all = pairs_image(slices);
    ChunkImage c;
    c.k_codes = put_part(c.bytes, all.k_codes), c.v_codes = put_part(c.bytes, all.v_codes);
    c.k_params = put_part(c.bytes, all.k_params), c.v_params = put_part(c.bytes, all.v_params);
    c.k_residual = put_part(c.bytes, all.k_residual), c.v_residual = put_part(c.bytes, all.v_residual);
    c.slot_exact = put_part(c.bytes, all.slot_exact);
    set_cache_shape(c.shape, slices);
    return c;
  }
  // The decode arguments of one chunk whose image starts at `base` (nullptr: sizes only), its chains on this GPU.
  KiviDecodeArgs args_for(const ChunkImage& img, const std::byte* base, int64_t q_rows) const {
    KiviDecodeArgs a;
    a.cache = img.shape;
    if (base) {
      a.cache.k_codes = reinterpret_cast<const uint8_t*>(base + img.k_codes);
      a.cache.v_codes = reinterpret_cast<const uint8_t*>(base + img.v_codes);
      a.cache.k_params = reinterpret_cast<const __half*>(base + img.k_params);
      a.cache.v_params = reinterpret_cast<const __half*>(base + img.v_params);
      a.cache.k_residual = reinterpret_cast<const __half*>(base + img.k_residual);
      a.cache.v_residual = reinterpret_cast<const __half*>(base + img.v_residual);
      a.cache.slot_exact = reinterpret_cast<const uint8_t*>(base + img.slot_exact);
    }
    a.batch = int(p_.batch), a.q_heads = int(p_.q_heads), a.kv_heads = int(p_.kv_heads);
    a.scale = static_cast<float>(p_.scale());
    if (q_rows != 1) throw std::logic_error("kivi ring: decode has one query row");
    if (warps_per_sm_ == 0) ATTNLAB_CUDA(kivi_decode_warps_per_sm(a.cache, warps_per_sm_));
    a.chains = kivi_decode_chains(a.cache.pairs, kivi_decode_tiles(a.cache), sm_count_, warps_per_sm_);
    return a;
  }

  Problem p_;
  const QKV& in_;
  std::vector<quant::KiviCache> caches_;  // every pair's one-GPU cache
  int sm_count_;
  mutable int warps_per_sm_ = 0;
};

}  // namespace

std::unique_ptr<RingVariant> kivi_ring(const Experiment& e, const VariantRequest& v, const QKV& in,
                                       const DeviceInfo& device) {
  return std::make_unique<KiviRing>(e.problem, in, v.params, device.sm_count);
}

}  // namespace attnlab::kernels
