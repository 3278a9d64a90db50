#include "kernels/int_flash_host.h"

#include "core/quant/quantize.h"

#include <cuda_fp16.h>
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>

namespace attnlab::kernels {

namespace {

template <class T>
DeviceBuffer upload(const std::vector<T>& h) {
  DeviceBuffer d(h.size() * sizeof(T));
  ATTNLAB_CUDA(cudaMemcpy(d.as<void>(), h.data(), d.bytes(), cudaMemcpyHostToDevice));
  return d;
}

quant::Quantized int8_of(const float* x, int64_t rows, int64_t cols, quant::Granularity g) {
  return quant::quantize(x, rows, cols, quant::Spec{.bits = 8, .granularity = g, .q_max = 127});
}

}  // namespace

int vt_key_at(int position) {
  const int t = position / 4, e = position % 4;
  return 8 * (e / 2) + 2 * t + (e % 2);
}

IntFlashInputs upload_int8(const Problem& p, const QKV& in, bool v_fp16) {
  const int64_t d = p.head_dim, kv_pad = (p.kv_len + 15) / 16 * 16;
  std::vector<int8_t> q(size_t(p.q_shape().count())), k(size_t(p.kv_shape().count()));
  std::vector<int8_t> vt(size_t(p.batch * p.kv_heads * d * kv_pad), 0);
  std::vector<float> s_q(size_t(p.batch * p.q_heads * p.q_len)), s_k(size_t(p.batch * p.kv_heads * kv_pad), 0.f);
  std::vector<float> s_v(size_t(p.batch * p.kv_heads));
  for (int64_t b = 0; b < p.batch; ++b) {
    for (int64_t h = 0; h < p.q_heads; ++h) {  // Q: one scale per token (§3.2)
      const quant::Quantized x = int8_of(in.q.head(b, h).data(), p.q_len, d, quant::Granularity::token);
      const size_t at = size_t((b * p.q_heads + h) * p.q_len);
      std::copy(x.q.begin(), x.q.end(), q.begin() + std::ptrdiff_t(at * d));
      std::copy(x.scale.begin(), x.scale.end(), s_q.begin() + std::ptrdiff_t(at));
    }
    for (int64_t h = 0; h < p.kv_heads; ++h) {  // K per token, V per (batch, KV head)
      const size_t bkv = size_t(b * p.kv_heads + h);
      const quant::Quantized x = int8_of(in.k.head(b, h).data(), p.kv_len, d, quant::Granularity::token);
      std::copy(x.q.begin(), x.q.end(), k.begin() + std::ptrdiff_t(bkv * p.kv_len * d));
      std::copy(x.scale.begin(), x.scale.end(), s_k.begin() + std::ptrdiff_t(bkv * kv_pad));
      const quant::Quantized y = int8_of(in.v.head(b, h).data(), p.kv_len, d, quant::Granularity::tensor);
      s_v[bkv] = y.scale[0];
      int8_t* vth = vt.data() + bkv * d * kv_pad;
      for (int64_t pos = 0; pos < kv_pad; ++pos) {
        const int64_t key = pos / 16 * 16 + vt_key_at(int(pos % 16));
        if (key >= p.kv_len) continue;
        for (int64_t c = 0; c < d; ++c) vth[c * kv_pad + pos] = static_cast<int8_t>(y.q[size_t(key * d + c)]);
      }
    }
  }
  if (v_fp16) {
    std::vector<__half> v16(size_t(p.kv_shape().count()));
    for (size_t i = 0; i < v16.size(); ++i) v16[i] = __float2half_rn(in.v.data()[i]);
    return {upload(q), upload(k), DeviceBuffer(), upload(s_q), upload(s_k), DeviceBuffer(), upload(v16), int(kv_pad), true};
  }
  return {upload(q), upload(k), upload(vt), upload(s_q), upload(s_k), upload(s_v), DeviceBuffer(), int(kv_pad), false};
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

IntFlashOutput int_flash_once(const Problem& p, const IntFlashInputs& in, KernelPath path, bool dump_scores) {
  const size_t n_out = size_t(p.q_shape().count()), n_rows = size_t(p.batch * p.q_heads * p.q_len);
  DeviceBuffer o(n_out * sizeof(__half)), lse(n_rows * sizeof(float));
  ATTNLAB_CUDA(cudaMemset(o.as<void>(), 0xff, o.bytes()));  // poison: NaN in FP16 and FP32
  ATTNLAB_CUDA(cudaMemset(lse.as<void>(), 0xff, lse.bytes()));
  IntFlashArgs a = int_flash_args(p, in, o.as<__half>(), lse.as<float>());
  a.path = path;
  const size_t n_scores = dump_scores ? n_rows * size_t(p.kv_len) : 0;
  DeviceBuffer scores(n_scores * sizeof(int32_t));
  if (dump_scores) {
    ATTNLAB_CUDA(cudaMemset(scores.as<void>(), 0x7f, scores.bytes()));  // poison: 0x7f7f7f7f is no INT8 dot product
    a.scores = scores.as<int32_t>();
  }
  ATTNLAB_CUDA(int_flash_forward(a, nullptr));
  ATTNLAB_CUDA(cudaDeviceSynchronize());
  std::vector<__half> oh(n_out);
  IntFlashOutput out{Tensor(p.q_shape()), std::vector<float>(n_rows), int_flash_resolved_path(a),
                     std::vector<int32_t>(n_scores)};
  if (dump_scores) ATTNLAB_CUDA(cudaMemcpy(out.scores.data(), scores.as<void>(), scores.bytes(), cudaMemcpyDeviceToHost));
  ATTNLAB_CUDA(cudaMemcpy(oh.data(), o.as<void>(), o.bytes(), cudaMemcpyDeviceToHost));
  ATTNLAB_CUDA(cudaMemcpy(out.lse.data(), lse.as<void>(), lse.bytes(), cudaMemcpyDeviceToHost));
  int64_t unwritten = 0;
  for (size_t i = 0; i < n_out; ++i) {
    out.o.data()[i] = __half2float(oh[i]);
    unwritten += std::isnan(out.o.data()[i]);
  }
  for (float x : out.lse) unwritten += std::isnan(x);
  if (unwritten > 0) throw std::runtime_error(fmt::format("int_flash kernel: {} outputs left unwritten (NaN)", unwritten));
  return out;
}

}  // namespace attnlab::kernels
