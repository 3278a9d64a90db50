// attnlab kernels: the host side of the fireq decode kernel (fireq_decode_host.h).
#include "kernels/fireq/fireq_decode_host.h"

#include "kernels/common/upload.h"
#include "core/fireq/token_int4.h"
#include "core/formats/fp8.h"
#include "core/parallel.h"
#include "core/variants/fireq_image.h"
#include "core/variants/fireq_layout.h"
#include "core/variants/fireq_quantize.h"
#include "kernels/common/poisoned_output.h"

#include <fmt/format.h>

#include <stdexcept>

namespace attnlab::kernels {

namespace fq = variants::fireq_detail;

std::string fireq_kernel_refusal(const ParamValues& params, int64_t d, int64_t group) {
  if (!fireq_layout::supports(d)) return fmt::format("no fireq kernel for head_dim {} (compiled: 64, 128)", d);
  if (!fireq_decode_supports(int(d), int(group)))
    return fmt::format("the fireq decode kernel holds ≤ 8 query heads per KV head (got {})", group);
  if (params.choice("scale_format") != "fp8_e4m3")
    return "the fireq kernel reads E4M3 token scales (scale_format = fp8_e4m3), FireQ's cache";
  if (params.choice("int4_to_fp8") != "lut")
    return "the fireq kernel converts INT4 to FP8 through §3.1.1's LUT (int4_to_fp8 = lut)";
  return "";
}

FireqCacheImages fireq_cache_images(const Problem& p, const QKV& in, const ParamValues& params) {
  const fq::Settings st(params, Phase::decode);  // the INT4 cache, as decode reads it
  const int64_t d = p.head_dim, n = p.kv_len;
  FireqCacheImages c;
  c.images.resize(size_t(p.batch * p.kv_heads));
  c.smoothing.resize(c.images.size());
  parallel_for(p.batch * p.kv_heads, [&](int64_t bh) {
    const int64_t b = bh / p.kv_heads, kvh = bh % p.kv_heads;
    fq::SmoothedKeys sk = fq::smooth_keys(in.k.head(b, kvh).data(), n, d, st);  // §3.2.1
    const fireq::TokenInt4 k = fireq::quantize_token_int4(sk.k.data(), n, d, st.format);  // Eq. 1
    const fireq::TokenInt4 v = fireq::quantize_token_int4(in.v.head(b, kvh).data(), n, d, st.format);
    c.images[size_t(bh)] = fireq_layout::device_image(k, v);
    c.smoothing[size_t(bh)] = std::move(sk.s);
  });
  return c;
}

std::vector<uint8_t> concatenated(const std::vector<std::vector<uint8_t>>& images) {
  std::vector<uint8_t> all;
  for (const std::vector<uint8_t>& img : images) {
    if (img.size() != images[0].size()) throw std::logic_error("fireq cache: every pair must have the same shape");
    all.insert(all.end(), img.begin(), img.end());
  }
  return all;
}

FireqHostInputs fireq_host_inputs(const Problem& p, const QKV& in, const ParamValues& params) {
  const fq::Settings st(params, Phase::decode);
  const int64_t d = p.head_dim;
  FireqCacheImages cache = fireq_cache_images(p, in, params);
  FireqHostInputs h;
  h.images = std::move(cache.images);
  const std::vector<std::vector<float>>& s = cache.smoothing;
  const int64_t heads = p.batch * p.q_heads;
  h.q.resize(size_t(heads * d));
  h.q_scale.resize(size_t(heads));
  const float tau = static_cast<float>(p.scale());
  for (int64_t bh = 0; bh < heads; ++bh) {
    const int64_t b = bh / p.q_heads, hq = bh % p.q_heads;
    std::vector<float> row(in.q.head(b, hq).data(), in.q.head(b, hq).data() + d);  // the one query token
    const fireq::TokenFp8 f = fq::quantize_query(row.data(), 1, d, s[size_t(b * p.kv_heads + p.kv_head_of(hq))],
                                                 st.smoothing != fq::Smoothing::none);
    for (int64_t c = 0; c < d; ++c) h.q[size_t(bh * d + c)] = formats::fp8_bits(row[size_t(c)], formats::Fp8::e4m3);
    h.q_scale[size_t(bh)] = f.scale[0] * tau;  // the reference's fl(β·τ)
  }
  return h;
}

FireqDeviceInputs upload_fireq(const Problem& p, const FireqHostInputs& h) {
  const std::vector<uint8_t> all = concatenated(h.images);
  FireqDeviceInputs d;
  d.tiles = upload(all), d.q = upload(h.q), d.q_scale = upload(h.q_scale);
  d.cache.tiles = d.tiles.as<uint8_t>();
  d.cache.pairs = int(h.images.size()), d.cache.head_dim = int(p.head_dim), d.cache.tokens = int(p.kv_len);
  return d;
}

FireqDecodeArgs fireq_decode_args(const Problem& p, const FireqDeviceInputs& in, __nv_bfloat16* o, float* lse,
                                  int chains) {
  FireqDecodeArgs a;
  a.cache = in.cache, a.q = in.q.as<uint8_t>(), a.q_scale = in.q_scale.as<float>(), a.o = o, a.lse = lse;
  a.batch = int(p.batch), a.q_heads = int(p.q_heads), a.kv_heads = int(p.kv_heads);
  a.chains = chains;
  return a;
}

int fireq_chains_here(const Problem& p, int sm_count) {
  int warps = 0;
  ATTNLAB_CUDA(fireq_decode_warps_per_sm(int(p.head_dim), warps));
  return fireq_decode_chains(int(p.batch * p.kv_heads), int(fireq_layout::tiles_for(p.kv_len)), sm_count, warps);
}

FireqDecodeOutput fireq_decode_once(const Problem& p, const FireqDeviceInputs& in, int chains) {
  const PoisonedOutput out(p, PoisonedOutput::Format::bf16);
  FireqDecodeArgs a = fireq_decode_args(p, in, out.o_bf16(), out.lse(), chains);
  DeviceBuffer workspace(fireq_decode_workspace_bytes(a));
  a.workspace = workspace.as<float>();
  ATTNLAB_CUDA(fireq_decode(a, nullptr));
  ATTNLAB_CUDA(cudaDeviceSynchronize());
  FireqDecodeOutput r;
  r.chains = chains;
  out.read("fireq decode", r.o, r.lse);
  return r;
}

}  // namespace attnlab::kernels
