// attnlab kernels: the host side of the fireq prefill kernel (fireq_prefill_host.h).
#include "kernels/fireq/fireq_prefill_host.h"

#include "kernels/common/upload.h"
#include "core/formats/fp8.h"
#include "core/parallel.h"
#include "core/variants/fireq_cache.h"
#include "core/variants/fireq_quantize.h"
#include "kernels/fireq/fireq_decode_host.h"
#include "kernels/common/poisoned_output.h"
#include "kernels/common/vt_permutation.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace attnlab::kernels {

namespace fq = variants::fireq_detail;

std::string fireq_prefill_refusal(const ParamValues& params, int64_t d, bool three_stage) {
  const bool int4 = params.choice("prefill_kv") == "int4", fp16 = params.choice("softmax_precision") == "fp16";
  if (!fireq_prefill_supports(int(d), false))
    return fmt::format("no fireq prefill kernel for head_dim {} (compiled: 64, 128)", d);
  if (three_stage && !fireq_prefill_supports(int(d), true, int4, fp16))
    return int4   ? "the three-stage fireq prefill kernel reads App. D's FP8 K and V (prefill_kv = fp8); the INT4 mode runs "
                    "the two-stage order"
           : fp16 ? "the fireq prefill kernel's FP16 softmax (softmax_precision = fp16) runs the two-stage order"
                  : fmt::format("the three-stage fireq prefill kernel is compiled for head_dim 64 (got {})", d);
  if (int4) {  // the cache decode reads: what the decode kernel needs of it
    if (params.choice("scale_format") != "fp8_e4m3")
      return "the fireq prefill kernel reads the INT4 cache with E4M3 token scales (scale_format = fp8_e4m3)";
    if (params.choice("int4_to_fp8") != "lut")
      return "the fireq prefill kernel converts INT4 to FP8 through §3.1.1's LUT (int4_to_fp8 = lut)";
  }
  if (params.integer("block_c") != kFireqPrefillBlock)
    return fmt::format("the fireq prefill kernel's KV tile is {} keys (the reference's B_c: where P̃ meets the running max{}): "
                       "set block_c = {} (got {})",
                       kFireqPrefillBlock, int4 ? "" : ", and β_V's block", kFireqPrefillBlock, params.integer("block_c"));
  return "";
}

namespace {

// App. D's operands (prefill_kv = fp8): K̂ per token and V̂ᵀ, with their BF16 scales; returns each pair's
// smoothing factors.
std::vector<std::vector<float>> fp8_operands(const Problem& p, const QKV& in, const fq::Settings& st,
                                             FireqPrefillHostInputs& h) {
  const int64_t d = p.head_dim, n = p.kv_len, kv_pad = (n + 15) / 16 * 16;
  const int64_t kv_heads = p.batch * p.kv_heads;
  const float tau = static_cast<float>(p.scale());
  const int64_t v_tiles = (n + kFireqPrefillBlock - 1) / kFireqPrefillBlock;
  h.kv_pad = int(kv_pad);
  h.k.resize(size_t(kv_heads * n * d));
  h.vt.assign(size_t(kv_heads * d * kv_pad), 0);
  h.k_tile = st.k_tile;
  if (st.k_tile) h.beta_k_tile_tau.resize(size_t(kv_heads * v_tiles));
  else h.beta_k_tau.assign(size_t(kv_heads * kv_pad), 0.0f);
  h.beta_v.resize(size_t(kv_heads * v_tiles));
  std::vector<std::vector<float>> s(static_cast<size_t>(kv_heads));  // each KV head's smoothing factors, for its queries
  parallel_for(kv_heads, [&](int64_t bh) {
    const int64_t b = bh / p.kv_heads, kvh = bh % p.kv_heads;
    // §3.2.1 then App. D, as the reference prepares its operands (K̂ and V̂ hold E4M3 values exactly).
    const fq::KvHead x = fq::prepare_kv(in.k.head(b, kvh).data(), in.v.head(b, kvh).data(), n, d, st);
    for (int64_t t = 0; t < n; ++t)
      for (int64_t c = 0; c < d; ++c) {
        h.k[size_t((bh * n + t) * d + c)] = formats::fp8_bits(x.k(t, c), formats::Fp8::e4m3);
        h.vt[size_t((bh * d + c) * kv_pad + t / 16 * 16 + vt_position_of(int(t)))] = formats::fp8_bits(x.v(t, c), formats::Fp8::e4m3);
      }
    // fl(β_K·τ), the reference's per-column factor (its (k_col·β)·τ is fl(fl(β_K·β)·τ); the kernel's order,
    // fl(S·fl(β_K·τ)) then β in the exponent, is fireq_prefill_sm90.cu's), in V̂ᵀ's key order: a thread's four
    // columns of two n-steps in one float4.
    // With fp8_k_scale = tile, fl(β_K,j·τ) per tile (the kernel's row factor times it, fl(fl(β·log₂e)·that)).
    if (st.k_tile)
      for (int64_t j = 0; j < v_tiles; ++j) h.beta_k_tile_tau[size_t(bh * v_tiles + j)] = x.s_k[size_t(j)] * tau;
    else
      for (int64_t t = 0; t < n; ++t)
        h.beta_k_tau[size_t(bh * kv_pad + t / 16 * 16 + vt_position_of(int(t)))] = x.s_k[size_t(t)] * tau;
    std::copy(x.s_v.begin(), x.s_v.end(), h.beta_v.begin() + bh * v_tiles);
    s[size_t(bh)] = x.s;
  });
  return s;
}

}  // namespace

FireqPrefillHostInputs fireq_prefill_host_inputs(const Problem& p, const QKV& in, const ParamValues& params) {
  const fq::Settings st(params, Phase::prefill);
  if (!fireq_prefill_refusal(params, p.head_dim).empty())
    throw std::logic_error("fireq_prefill_host_inputs: parameters the kernel does not run (fireq_prefill_refusal)");
  const int64_t d = p.head_dim, q_heads = p.batch * p.q_heads;
  FireqPrefillHostInputs h;
  std::vector<std::vector<float>> s;
  if (st.fp8_kv) {
    s = fp8_operands(p, in, st, h);
  } else {  // the INT4 cache decode reads (§2.1 Eq. 1), laid out as the GPU holds it
    FireqCacheImages cache = fireq_cache_images(p, in, params);
    h.cache = concatenated(cache.images);
    h.int4_kv = true;
    s = std::move(cache.smoothing);
  }
  h.fp16_softmax = st.fp16_softmax;
  h.q.resize(size_t(q_heads * p.q_len * d));
  h.beta_q.resize(size_t(q_heads * p.q_len));
  parallel_for(q_heads, [&](int64_t bh) {
    const int64_t b = bh / p.q_heads, hq = bh % p.q_heads;
    const float* q = in.q.head(b, hq).data();
    std::vector<float> rows(q, q + p.q_len * d);  // Q̃ = Q·s, then Eq. 2 (the reference's prepare_q)
    const fireq::TokenFp8 f = fq::quantize_query(rows.data(), p.q_len, d, s[size_t(b * p.kv_heads + p.kv_head_of(hq))],
                                                 st.smoothing != fq::Smoothing::none);
    for (int64_t i = 0; i < p.q_len * d; ++i)
      h.q[size_t(bh * p.q_len * d + i)] = formats::fp8_bits(rows[size_t(i)], formats::Fp8::e4m3);
    std::copy(f.scale.begin(), f.scale.end(), h.beta_q.begin() + bh * p.q_len);
  });
  return h;
}

FireqPrefillDeviceInputs upload_fireq_prefill(const FireqPrefillHostInputs& h) {
  FireqPrefillDeviceInputs d;
  d.q = upload(h.q), d.k = upload(h.k), d.vt = upload(h.vt);
  d.beta_q = upload(h.beta_q), d.beta_k_tau = upload(h.beta_k_tau), d.beta_v = upload(h.beta_v);
  d.beta_k_tile_tau = upload(h.beta_k_tile_tau);
  d.cache = upload(h.cache);
  d.kv_pad = h.kv_pad, d.int4_kv = h.int4_kv, d.k_tile = h.k_tile, d.fp16_softmax = h.fp16_softmax;
  return d;
}

FireqPrefillArgs fireq_prefill_args(const Problem& p, const FireqPrefillDeviceInputs& in, __nv_bfloat16* o, float* lse) {
  FireqPrefillArgs a;
  a.q = in.q.as<uint8_t>(), a.k = in.k.as<uint8_t>(), a.vt = in.vt.as<uint8_t>();
  a.beta_q = in.beta_q.as<float>(), a.beta_k_tau = in.beta_k_tau.as<float>(), a.beta_v = in.beta_v.as<float>();
  a.beta_k_tile_tau = in.beta_k_tile_tau.as<float>(), a.k_tile = in.k_tile, a.fp16_softmax = in.fp16_softmax;
  a.cache = in.cache.as<uint8_t>(), a.int4_kv = in.int4_kv;
  a.o = o, a.lse = lse;
  a.batch = int(p.batch), a.q_heads = int(p.q_heads), a.kv_heads = int(p.kv_heads);
  a.q_len = int(p.q_len), a.kv_len = int(p.kv_len), a.kv_pad = in.kv_pad, a.head_dim = int(p.head_dim);
  a.causal = p.causal;
  a.scale = static_cast<float>(p.scale());  // the reference's τ
  return a;
}

FireqPrefillOutput fireq_prefill_once(const Problem& p, const FireqPrefillDeviceInputs& in, bool three_stage,
                                      bool ping_pong, bool tma_producer) {
  const PoisonedOutput out_dev(p, PoisonedOutput::Format::bf16);
  FireqPrefillArgs a = fireq_prefill_args(p, in, out_dev.o_bf16(), out_dev.lse());
  a.three_stage = three_stage, a.ping_pong = ping_pong, a.tma_producer = tma_producer;
  ATTNLAB_CUDA(fireq_prefill_forward(a, nullptr));
  ATTNLAB_CUDA(cudaDeviceSynchronize());
  FireqPrefillOutput out;
  out_dev.read("fireq prefill", out.o, out.lse);
  return out;
}

}  // namespace attnlab::kernels
