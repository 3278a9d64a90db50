// attnlab kernels: one FP16 tensor-core MMA on chosen operands (mma_probe.h).
#include "kernels/common/mma_probe.h"

#include "kernels/common/mma.cuh"

#include <cuda_fp16.h>

namespace attnlab::kernels {

namespace {

struct RowDot {
  float a[16], b[16], c;
};

__device__ uint32_t pack_f16(float lo, float hi) {
  const __half2 h = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&h);
}

// One warp. Row 0 of A and column 0 of B live in lanes 0–3 (g = 0; mma.cuh's fragment layouts): a0, b0 hold
// k = 2t, 2t + 1 and a2, b1 k = 2t + 8, 2t + 9. D[0][0] is lane 0's d0.
__global__ void mma_f16_row_dot_kernel(RowDot in, float* out) {
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  uint32_t a[4] = {0, 0, 0, 0}, b0 = 0, b1 = 0;
  if (g == 0) {
    a[0] = pack_f16(in.a[2 * t], in.a[2 * t + 1]);
    a[2] = pack_f16(in.a[2 * t + 8], in.a[2 * t + 9]);
    b0 = pack_f16(in.b[2 * t], in.b[2 * t + 1]);
    b1 = pack_f16(in.b[2 * t + 8], in.b[2 * t + 9]);
  }
  float d[4] = {in.c, in.c, in.c, in.c};
  mma_f16(d, a, b0, b1);
  if (lane == 0) *out = d[0];
}

}  // namespace

cudaError_t mma_f16_row_dot(const float (&a)[16], const float (&b)[16], float c, float& d) {
  RowDot in;
  for (int k = 0; k < 16; ++k) in.a[k] = a[k], in.b[k] = b[k];
  in.c = c;
  float* out = nullptr;
  cudaError_t err = cudaMalloc(&out, sizeof(float));
  if (err != cudaSuccess) return err;
  mma_f16_row_dot_kernel<<<1, 32>>>(in, out);
  err = cudaGetLastError();
  if (err == cudaSuccess) err = cudaMemcpy(&d, out, sizeof(float), cudaMemcpyDeviceToHost);
  const cudaError_t freed = cudaFree(out);
  return err != cudaSuccess ? err : freed;
}

}  // namespace attnlab::kernels
