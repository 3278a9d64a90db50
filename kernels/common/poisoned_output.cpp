#include "kernels/common/poisoned_output.h"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

namespace attnlab::kernels {

PoisonedOutput::PoisonedOutput(const Problem& p, Format f)
    : shape_(p.q_shape()),
      format_(f),
      o_(size_t(shape_.count()) * sizeof(uint16_t)),  // FP16 and BF16 alike
      lse_(size_t(p.batch * p.q_heads * p.q_len) * sizeof(float)) {
  ATTNLAB_CUDA(cudaMemset(o_.as<void>(), 0xff, o_.bytes()));
  ATTNLAB_CUDA(cudaMemset(lse_.as<void>(), 0xff, lse_.bytes()));
}

void PoisonedOutput::read(const char* kernel, Tensor& o, std::vector<float>& lse) const {
  std::vector<uint16_t> oh(size_t(shape_.count()));
  o = Tensor(shape_);
  lse.resize(lse_.bytes() / sizeof(float));
  ATTNLAB_CUDA(cudaMemcpy(oh.data(), o_.as<void>(), o_.bytes(), cudaMemcpyDeviceToHost));
  ATTNLAB_CUDA(cudaMemcpy(lse.data(), lse_.as<void>(), lse_.bytes(), cudaMemcpyDeviceToHost));
  int64_t unwritten = 0;
  for (size_t i = 0; i < oh.size(); ++i) {
    o.data()[i] = format_ == Format::fp16 ? __half2float(__ushort_as_half(oh[i]))
                                          : __bfloat162float(__ushort_as_bfloat16(oh[i]));
    unwritten += std::isnan(o.data()[i]);
  }
  for (float x : lse) unwritten += std::isnan(x);
  if (unwritten > 0) throw std::runtime_error(fmt::format("{} kernel: {} outputs left unwritten (NaN)", kernel, unwritten));
}

}  // namespace attnlab::kernels
