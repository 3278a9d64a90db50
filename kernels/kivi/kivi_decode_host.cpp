// attnlab kernels: the host side of the kivi decode kernel (kivi_decode_host.h).
#include "kernels/kivi/kivi_decode_host.h"

#include "kernels/common/upload.h"
#include "core/parallel.h"
#include "core/variants/kivi_image.h"
#include "kernels/common/fp16_upload.h"
#include "kernels/common/poisoned_output.h"

#include <cuda_fp16.h>

#include <algorithm>
#include <stdexcept>

namespace attnlab::kernels {

namespace {

template <class T>
void append(std::vector<T>& all, const std::vector<T>& part) {
  all.insert(all.end(), part.begin(), part.end());
}

}  // namespace

std::vector<quant::KiviCache> kivi_host_caches(const Problem& p, const QKV& in, const ParamValues& params) {
  const int bits = static_cast<int>(params.integer("bits"));
  const int64_t group = params.integer("group"), residual = params.integer("residual");
  std::vector<quant::KiviCache> caches(static_cast<size_t>(p.batch * p.kv_heads));
  parallel_for(p.batch * p.kv_heads, [&](int64_t bh) {
    const int64_t b = bh / p.kv_heads, h = bh % p.kv_heads;
    caches[size_t(bh)] = quant::kivi_quantize(in.k.head(b, h).data(), in.v.head(b, h).data(), p.kv_len, p.head_dim,
                                              bits, group, residual);
  });
  return caches;
}

size_t KiviDeviceCache::bytes() const {
  return k_codes.bytes() + v_codes.bytes() + k_params.bytes() + v_params.bytes() + k_residual.bytes() +
         v_residual.bytes() + slot_exact.bytes();
}

kivi_layout::Image pairs_image(const std::vector<quant::KiviCache>& caches) {
  if (caches.empty()) throw std::logic_error("kivi cache: no pairs");
  const quant::KiviCache& c0 = caches[0];
  kivi_layout::Image all;
  for (const quant::KiviCache& c : caches) {
    if (c.tokens != c0.tokens || c.channels != c0.channels || c.bits != c0.bits || c.group != c0.group ||
        c.quantized_tokens != c0.quantized_tokens)
      throw std::logic_error("kivi cache: every pair must have the same shape");
    const kivi_layout::Image img = kivi_layout::device_image(c);  // throws where the layout cannot hold c
    append(all.k_codes, img.k_codes), append(all.v_codes, img.v_codes);
    append(all.k_params, img.k_params), append(all.v_params, img.v_params);
    append(all.k_residual, img.k_residual), append(all.v_residual, img.v_residual);
    append(all.slot_exact, img.slot_exact);
  }
  return all;
}

void set_cache_shape(KiviCacheArgs& a, const std::vector<quant::KiviCache>& caches) {
  const quant::KiviCache& c0 = caches.at(0);
  a.pairs = int(caches.size()), a.head_dim = int(c0.channels), a.bits = c0.bits, a.group = int(c0.group);
  a.quantized_tokens = int(c0.quantized_tokens), a.residual_tokens = int(c0.residual_tokens());
}

KiviDeviceCache upload_kivi_cache(const std::vector<quant::KiviCache>& caches) {
  const kivi_layout::Image all = pairs_image(caches);
  KiviDeviceCache d;
  d.k_codes = upload(all.k_codes), d.v_codes = upload(all.v_codes);
  d.k_params = upload(all.k_params), d.v_params = upload(all.v_params);
  d.k_residual = upload(all.k_residual), d.v_residual = upload(all.v_residual);
  d.slot_exact = upload(all.slot_exact);
  d.inexact_slots = int64_t(std::count(all.slot_exact.begin(), all.slot_exact.end(), uint8_t(0)));
  KiviCacheArgs& a = d.args;
  a.k_codes = d.k_codes.as<uint8_t>(), a.v_codes = d.v_codes.as<uint8_t>();
  a.k_params = d.k_params.as<__half>(), a.v_params = d.v_params.as<__half>();  // FP16 bit patterns
  a.k_residual = d.k_residual.as<__half>(), a.v_residual = d.v_residual.as<__half>();
  a.slot_exact = d.slot_exact.as<uint8_t>();
  set_cache_shape(a, caches);
  return d;
}

DeviceBuffer upload_query_fp16(const Tensor& q) { return upload_rounded_fp16(q); }

KiviDecodeArgs kivi_decode_args(const Problem& p, const KiviDeviceCache& c, const __half* q, __half* o, float* lse,
                                int chains) {
  KiviDecodeArgs a;
  a.cache = c.args, a.q = q, a.o = o, a.lse = lse;
  a.batch = int(p.batch), a.q_heads = int(p.q_heads), a.kv_heads = int(p.kv_heads);
  a.chains = chains;
  a.scale = static_cast<float>(p.scale());
  return a;
}

int kivi_chains_here(const Problem& p, const KiviDeviceCache& c, int sm_count) {
  int warps = 0;
  ATTNLAB_CUDA(kivi_decode_warps_per_sm(c.args, warps));
  return kivi_decode_chains(int(p.batch * p.kv_heads), kivi_decode_tiles(c.args), sm_count, warps);
}

KiviDecodeOutput kivi_decode_once(const Problem& p, const KiviDeviceCache& c, const __half* q, int chains) {
  const PoisonedOutput out(p);
  KiviDecodeArgs a = kivi_decode_args(p, c, q, out.o(), out.lse(), chains);
  DeviceBuffer workspace(kivi_decode_workspace_bytes(a));
  a.workspace = workspace.as<float>();
  ATTNLAB_CUDA(kivi_decode(a, nullptr));
  ATTNLAB_CUDA(cudaDeviceSynchronize());
  KiviDecodeOutput r;
  r.chains = chains;
  out.read("kivi decode", r.o, r.lse);
  return r;
}

}  // namespace attnlab::kernels
