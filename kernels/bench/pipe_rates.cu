// Throughput of the instruction pipes the cost model charges (sim/specs: sfu, cvt, fma_fp32), measured:
// each thread runs 8 independent chains of one instruction for many iterations; results per clock per
// SM = instructions / (time · SM clock · SMs). Also the packed FP16 instructions FireQ §3.2.2's FP16 softmax
// would run (ex2.approx.f16x2, HFMA2, HMNMX2, the FP32 → f16x2 pack), counted per FP16 element (two per
// instruction): whether ex2 on half2 gives the SFU two exponentials an issue or is split into two. Build and
// run on the GPU machine (cuobjdump -sass on the binary shows which SASS each became):
//   nvcc -O3 -arch=sm_90a kernels/bench/pipe_rates.cu -o /tmp/pipe_rates && /tmp/pipe_rates
#include <cuda_runtime.h>

#include <cstdio>

constexpr int kIters = 4096, kChains = 8;

template <int Op>
__global__ void pipe(float* out, int seed) {
  float f[kChains];
  int n[kChains];
  for (int c = 0; c < kChains; ++c) f[c] = float(threadIdx.x + c + seed) * 1e-3f, n[c] = threadIdx.x * 7 + c + seed;
  if constexpr (Op >= 3 && Op <= 5)  // half2 operands in a range where ex2 stays finite: −(0.5 + small)
    for (int c = 0; c < kChains; ++c) n[c] = 0xb800b800 + ((threadIdx.x + c) & 7) * 0x00010001;
  for (int i = 0; i < kIters; ++i)
#pragma unroll
    for (int c = 0; c < kChains; ++c) {
      if constexpr (Op == 0) f[c] = fmaf(f[c], 1.0001f, 1e-7f);                          // FFMA
      if constexpr (Op == 1) asm volatile("ex2.approx.ftz.f32 %0, %0;" : "+f"(f[c]));     // MUFU.EX2
      if constexpr (Op == 2) {  // F2I then I2F in one dependent chain: two conversions per step
        asm volatile("cvt.rni.s32.f32 %0, %1;" : "=r"(n[c]) : "f"(f[c]));
        asm volatile("cvt.rn.f32.s32 %0, %1;" : "=f"(f[c]) : "r"(n[c]));
      }
      // The FP16 ones on n[c] as a half2 (bits): ex2 of two halves, HFMA2, HMNMX2 (max of two halves).
      if constexpr (Op == 3) asm volatile("ex2.approx.f16x2 %0, %0;" : "+r"(n[c]));
      if constexpr (Op == 4) asm volatile("fma.rn.f16x2 %0, %0, %1, %2;" : "+r"(n[c]) : "r"(0x3c003c00), "r"(0x80008000));
      if constexpr (Op == 5) asm volatile("max.f16x2 %0, %0, %1;" : "+r"(n[c]) : "r"(0x3c003c00));
      if constexpr (Op == 6) {  // two FP32 into a half2 and back out of one half: F2FP then HADD2.F32
        asm volatile("cvt.rn.f16x2.f32 %0, %1, %1;" : "=r"(n[c]) : "f"(f[c]));
        asm volatile("{.reg .f16 lo, hi; mov.b32 {lo, hi}, %1; cvt.f32.f16 %0, lo;}" : "=f"(f[c]) : "r"(n[c]));
      }
    }
  float acc = 0;
  for (int c = 0; c < kChains; ++c) acc += f[c] + float(n[c]);
  if (acc == 12345.f) out[0] = acc;
}

template <int Op>
double rate(int sms, double clock_ghz, const char* name, double extra_per_op) {
  float* out;
  cudaMalloc(&out, 4);
  const int blocks = sms * 8, threads = 256;
  pipe<Op><<<blocks, threads>>>(out, 1);
  cudaEvent_t a, b;
  cudaEventCreate(&a), cudaEventCreate(&b);
  cudaEventRecord(a);
  for (int r = 0; r < 5; ++r) pipe<Op><<<blocks, threads>>>(out, r);
  cudaEventRecord(b);
  cudaEventSynchronize(b);
  float ms = 0;
  cudaEventElapsedTime(&ms, a, b);
  const double ops = 5.0 * blocks * threads * double(kIters) * kChains;
  const double per_clk_sm = ops / (ms * 1e-3) / (clock_ghz * 1e9) / sms;
  std::printf("%-28s %8.1f results/clk/SM  (%.2f ms; includes %.0f helper ops per result)\n", name, per_clk_sm, ms,
              extra_per_op);
  cudaFree(out);
  return per_clk_sm;
}

int main() {
  cudaDeviceProp p{};
  cudaGetDeviceProperties(&p, 0);
  int clock_khz = 0;
  cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0);
  const double ghz = clock_khz / 1e6;
  std::printf("%s: %d SMs, clock %.2f GHz (max, as the runtime reports it)\n", p.name, p.multiProcessorCount, ghz);
  rate<0>(p.multiProcessorCount, ghz, "FFMA (fma_fp32)", 0);
  rate<1>(p.multiProcessorCount, ghz, "MUFU.EX2 (exp_sfu)", 0);
  // Two conversions per step: the rate printed is steps; conversions per clock are twice it.
  const double steps = rate<2>(p.multiProcessorCount, ghz, "F2I + I2F chain (steps)", 0);
  std::printf("%-28s %8.1f results/clk/SM\n", "conversions (cvt)", 2 * steps);
  // Packed FP16: instructions per clock; FP16 elements per clock are twice it.
  const double ex2h = rate<3>(p.multiProcessorCount, ghz, "ex2.approx.f16x2 (instr)", 0);
  std::printf("%-28s %8.1f elements/clk/SM (FP32 ex2: one element per instruction)\n", "ex2 on half2", 2 * ex2h);
  const double hfma = rate<4>(p.multiProcessorCount, ghz, "HFMA2 (instr)", 0);
  std::printf("%-28s %8.1f elements/clk/SM\n", "HFMA2", 2 * hfma);
  const double hmax = rate<5>(p.multiProcessorCount, ghz, "HMNMX2 (instr)", 0);
  std::printf("%-28s %8.1f elements/clk/SM\n", "HMNMX2", 2 * hmax);
  rate<6>(p.multiProcessorCount, ghz, "F2FP.F16 + HADD2.F32 (steps)", 0);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
