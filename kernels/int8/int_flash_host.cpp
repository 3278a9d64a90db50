#include "kernels/int8/int_flash_host.h"

#include "kernels/common/upload.h"
#include "kernels/common/poisoned_output.h"

#include "kernels/int8/quantize_int8.h"

#include <cuda_fp16.h>
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>

namespace attnlab::kernels {

IntFlashInputs upload_int8(const Problem& p, const QKV& in, bool v_fp16) {
  const int64_t d = p.head_dim, kv_pad = (p.kv_len + 15) / 16 * 16;
  const int64_t q_rows = p.batch * p.q_heads * p.q_len, k_rows = p.batch * p.kv_heads * p.kv_len;
  const int64_t kv_heads = p.batch * p.kv_heads;
  const DeviceBuffer xq = upload(in.q.values()), xk = upload(in.k.values());
  IntFlashInputs r;
  r.kv_pad = int(kv_pad), r.v_fp16 = v_fp16;
  r.q = DeviceBuffer(size_t(q_rows * d)), r.k = DeviceBuffer(size_t(k_rows * d));
  r.s_q = DeviceBuffer(size_t(q_rows) * sizeof(float)), r.s_k = DeviceBuffer(size_t(kv_heads * kv_pad) * sizeof(float));
  ATTNLAB_CUDA(cudaMemset(r.s_k.as<void>(), 0, r.s_k.bytes()));  // padding keys: scale 0
  // Q and K: one scale per token (§3.2), computed on the GPU.
  ATTNLAB_CUDA(quantize_rows_int8(xq.as<float>(), q_rows, int(d), p.q_len, p.q_len, r.q.as<int8_t>(), r.s_q.as<float>(), nullptr));
  ATTNLAB_CUDA(quantize_rows_int8(xk.as<float>(), k_rows, int(d), p.kv_len, kv_pad, r.k.as<int8_t>(), r.s_k.as<float>(), nullptr));
  if (v_fp16) {  // half-INT8: V rounded once to FP16, as the reference's v_fp16 keeps it
    std::vector<__half> v16(size_t(p.kv_shape().count()));
    for (size_t i = 0; i < v16.size(); ++i) v16[i] = __float2half_rn(in.v.data()[i]);
    r.v16 = upload(v16);
  } else {  // V: one scale per (batch, KV head), transposed and key-permuted for the kernel
    std::vector<int> position_of_key(16);
    for (int key = 0; key < 16; ++key) position_of_key[size_t(key)] = vt_position_of(key);
    const DeviceBuffer xv = upload(in.v.values()), positions = upload(position_of_key);
    r.vt = DeviceBuffer(size_t(kv_heads * d * kv_pad));
    r.s_v = DeviceBuffer(size_t(kv_heads) * sizeof(float));
    ATTNLAB_CUDA(cudaMemset(r.vt.as<void>(), 0, r.vt.bytes()));  // padding keys: code 0
    ATTNLAB_CUDA(quantize_heads_int8_vt(xv.as<float>(), int(kv_heads), int(p.kv_len), int(d), int(kv_pad),
                                        positions.as<int>(), r.vt.as<int8_t>(), r.s_v.as<float>(), nullptr));
  }
  ATTNLAB_CUDA(cudaDeviceSynchronize());
  // The scales, read back: the probes of the kernel backend, and the check the reference makes on the
  // host (a non-finite input would give a non-finite scale).
  auto read = [](const DeviceBuffer& b) {
    std::vector<float> h(b.bytes() / sizeof(float));
    ATTNLAB_CUDA(cudaMemcpy(h.data(), b.as<void>(), b.bytes(), cudaMemcpyDeviceToHost));
    return h;
  };
  r.scales_q = read(r.s_q), r.scales_k = read(r.s_k), r.scales_v = read(r.s_v);
  for (const auto* v : {&r.scales_q, &r.scales_k, &r.scales_v})
    for (float x : *v)
      if (!std::isfinite(x)) throw std::runtime_error("int_flash kernel: a non-finite input value (its INT8 scale is not finite)");
  return r;
}

IntFlashArgs int_flash_args(const Problem& p, const IntFlashInputs& in, __half* o, float* lse) {
  IntFlashArgs a;
  a.q = in.q.as<int8_t>(), a.k = in.k.as<int8_t>(), a.vt = in.vt.as<int8_t>();
  a.v16 = in.v16.as<__half>(), a.v_fp16 = in.v_fp16;
  a.s_q = in.s_q.as<float>(), a.s_k = in.s_k.as<float>(), a.s_v = in.s_v.as<float>();
  a.o = o, a.lse = lse;
  a.batch = int(p.batch), a.q_heads = int(p.q_heads), a.kv_heads = int(p.kv_heads);
  a.q_len = int(p.q_len), a.kv_len = int(p.kv_len), a.kv_pad = in.kv_pad, a.head_dim = int(p.head_dim);
  a.causal = p.causal;
  a.scale = static_cast<float>(p.scale());
  return a;
}

IntFlashOutput int_flash_once(const Problem& p, const IntFlashInputs& in, KernelPath path, bool dump_scores,
                              IntFlashSchedule schedule) {
  const PoisonedOutput out_dev(p);
  IntFlashArgs a = int_flash_args(p, in, out_dev.o(), out_dev.lse());
  a.path = path;
  a.tma_producer = schedule.tma_producer, a.ping_pong = schedule.ping_pong, a.pv_across_tiles = schedule.pv_across_tiles;
  const size_t n_scores = dump_scores ? size_t(p.batch * p.q_heads * p.q_len * p.kv_len) : 0;
  DeviceBuffer scores(n_scores * sizeof(int32_t));
  if (dump_scores) {
    ATTNLAB_CUDA(cudaMemset(scores.as<void>(), 0x7f, scores.bytes()));  // poison: 0x7f7f7f7f is no INT8 dot product
    a.scores = scores.as<int32_t>();
  }
  ATTNLAB_CUDA(int_flash_forward(a, nullptr));
  ATTNLAB_CUDA(cudaDeviceSynchronize());
  IntFlashOutput out{Tensor(), {}, int_flash_resolved_path(a), std::vector<int32_t>(n_scores)};
  if (dump_scores) ATTNLAB_CUDA(cudaMemcpy(out.scores.data(), scores.as<void>(), scores.bytes(), cudaMemcpyDeviceToHost));
  out_dev.read("int_flash", out.o, out.lse);
  return out;
}

}  // namespace attnlab::kernels
