// attnlab kernels: TurboAttention's prefill on the GPU, host side (turbo_prefill_host.h).
#include "kernels/turbo_prefill_host.h"

#include "core/variants/turbo_cache.h"
#include "kernels/poisoned_output.h"
#include "kernels/turbo_cache_write.h"
#include "kernels/turbo_prefill_sm90.h"

#include <stdexcept>
#include <string>

namespace attnlab::kernels {

TurboPrefillOutput turbo_prefill_once(const Problem& p, const QKV& in, const ParamValues& params) {
  if (!turbo_prefill_supports(int(p.head_dim)) || params.integer("block_r") != 64 || params.integer("block_c") != 64 ||
      params.choice("p_scale") != "tile" || params.choice("sas_precision") != "fp32")
    throw std::invalid_argument("turbo prefill kernel: d 64 or 128, block_r = block_c = 64, p_scale tile, sas fp32");
  const int64_t d = p.head_dim, pairs = p.batch * p.kv_heads, heads = p.batch * p.q_heads;
  const int64_t pad = (p.kv_len + kTurboBlock - 1) / kTurboBlock * kTurboBlock;
  auto upload = [](const Tensor& t) {
    DeviceBuffer buf(size_t(t.size()) * sizeof(float));
    ATTNLAB_CUDA(cudaMemcpy(buf.as<void>(), t.data(), buf.bytes(), cudaMemcpyHostToDevice));
    return buf;
  };
  const DeviceBuffer q = upload(in.q), k = upload(in.k), v = upload(in.v);
  TurboPrefillOutput r;
  r.cache = allocate_turbo_cache(variants::turbo_detail::kv_head_bits(p, in, params), d, turbo_slots(p.kv_len, p.kv_len),
                                 p.kv_len);
  DeviceBuffer k8(size_t(pairs * pad * d)), vt8(size_t(pairs * pad * d));
  DeviceBuffer scratch(turbo_cache_write_scratch_bytes(r.cache.args));
  ATTNLAB_CUDA(turbo_cache_write_prefill(r.cache.args, k.as<float>(), v.as<float>(), p.kv_len * d,
                                         params.choice("int_scale") == "up", scratch.as<void>(), nullptr,
                                         {k8.as<int8_t>(), vt8.as<int8_t>(), pad}));
  const int64_t q_blocks = (p.q_len + 63) / 64;
  DeviceBuffer q8(size_t(heads * p.q_len * d)), s_q(size_t(heads * q_blocks) * sizeof(float));
  ATTNLAB_CUDA(turbo_quantize_q_blocks(q.as<float>(), int(heads), int(p.q_len), int(d), 64, q8.as<int8_t>(),
                                       s_q.as<float>(), nullptr));
  const PoisonedOutput out(p);
  TurboPrefillArgs a;
  a.q8 = q8.as<int8_t>(), a.s_q = s_q.as<float>(), a.k8 = k8.as<int8_t>(), a.vt8 = vt8.as<int8_t>();
  a.block_scales = r.cache.args.block_scales, a.slots = r.cache.args.slots, a.pad = int(pad);
  a.exp = turbo_exp_args(params), a.o = out.o(), a.lse = out.lse();
  a.batch = int(p.batch), a.q_heads = int(p.q_heads), a.kv_heads = int(p.kv_heads);
  a.q_len = int(p.q_len), a.kv_len = int(p.kv_len), a.head_dim = int(d), a.causal = p.causal;
  a.scale = static_cast<float>(p.scale());
  ATTNLAB_CUDA(turbo_prefill_forward(a, nullptr));
  ATTNLAB_CUDA(cudaDeviceSynchronize());
  out.read("turbo prefill", r.o, r.lse);
  return r;
}

}  // namespace attnlab::kernels
