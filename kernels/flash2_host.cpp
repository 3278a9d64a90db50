#include "kernels/flash2_host.h"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

namespace attnlab::kernels {

namespace {

DeviceBuffer upload(const Tensor& t) {
  std::vector<__half> h(static_cast<size_t>(t.size()));
  for (size_t i = 0; i < h.size(); ++i) h[i] = __float2half_rn(t.data()[i]);  // RNE, as the reference rounds
  DeviceBuffer d(h.size() * sizeof(__half));
  ATTNLAB_CUDA(cudaMemcpy(d.as<void>(), h.data(), d.bytes(), cudaMemcpyHostToDevice));
  return d;
}

}  // namespace

Flash2Inputs upload_fp16(const QKV& in) { return {upload(in.q), upload(in.k), upload(in.v)}; }

Flash2Args flash2_args(const Problem& p, const Flash2Inputs& inputs, __half* o, float* lse, int sm_count) {
  Flash2Args a;
  a.q = inputs.q.as<__half>(), a.k = inputs.k.as<__half>(), a.v = inputs.v.as<__half>();
  a.o = o, a.lse = lse;
  a.batch = int(p.batch), a.q_heads = int(p.q_heads), a.kv_heads = int(p.kv_heads);
  a.q_len = int(p.q_len), a.kv_len = int(p.kv_len), a.head_dim = int(p.head_dim);
  a.causal = p.causal;
  a.scale = static_cast<float>(p.scale());
  a.splits = flash2_splits(a, sm_count);
  return a;
}

Flash2Output flash2_once(const Problem& p, const Flash2Inputs& inputs, int sm_count, KernelPath path) {
  const size_t n_out = size_t(p.q_shape().count()), n_rows = size_t(p.batch * p.q_heads * p.q_len);
  DeviceBuffer o(n_out * sizeof(__half)), lse(n_rows * sizeof(float));
  Flash2Args a = flash2_args(p, inputs, o.as<__half>(), lse.as<float>(), sm_count);
  if (path == KernelPath::warpgroup_mma) a.splits = 1;  // the warpgroup kernel does not split the keys
  DeviceBuffer workspace(flash2_workspace_bytes(a));
  a.workspace = workspace.as<float>();
  a.path = path;
  // Poison: all-ones bits are NaN in FP16 and FP32, so an element the kernel skips cannot pass.
  ATTNLAB_CUDA(cudaMemset(o.as<void>(), 0xff, o.bytes()));
  ATTNLAB_CUDA(cudaMemset(lse.as<void>(), 0xff, lse.bytes()));
  ATTNLAB_CUDA(flash2_forward(a, nullptr));
  ATTNLAB_CUDA(cudaDeviceSynchronize());
  std::vector<__half> oh(n_out);
  Flash2Output out{Tensor(p.q_shape()), std::vector<float>(n_rows), a.splits, flash2_resolved_path(a)};
  ATTNLAB_CUDA(cudaMemcpy(oh.data(), o.as<void>(), o.bytes(), cudaMemcpyDeviceToHost));
  ATTNLAB_CUDA(cudaMemcpy(out.lse.data(), lse.as<void>(), lse.bytes(), cudaMemcpyDeviceToHost));
  int64_t unwritten = 0;
  for (size_t i = 0; i < n_out; ++i) {
    out.o.data()[i] = __half2float(oh[i]);
    unwritten += std::isnan(out.o.data()[i]);
  }
  for (float x : out.lse) unwritten += std::isnan(x);
  if (unwritten > 0) throw std::runtime_error(fmt::format("flash2 kernel: {} outputs left unwritten (NaN)", unwritten));
  return out;
}

}  // namespace attnlab::kernels
