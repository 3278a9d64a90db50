// attnlab kernels: the warp-level building blocks of the attention kernels (sm_80 and later):
// asynchronous global→shared copies, ldmatrix fragment loads and the m16n8k16 tensor-core MMA.
//
// Fragment layouts of mma.m16n8k16 (PTX ISA, "Matrix fragments for mma.m16n8k16"), with g = lane / 4
// and t = lane % 4:
//   A (16×16, row-major)  a0 = (g, 2t..2t+1)  a1 = (g+8, 2t..)  a2 = (g, 2t+8..)  a3 = (g+8, 2t+8..)
//   B (16×8, column)      b0 = (k 2t..2t+1, n g)               b1 = (k 2t+8.., n g)
//   C (16×8, FP32)        c0, c1 = (g, 2t..2t+1)               c2, c3 = (g+8, 2t..2t+1)
// C's layout of two adjacent n-tiles is A's layout of one k-step: the softmax output P̃ feeds the P·V
// product straight from registers (FlashAttention-2's trick), with no trip through shared memory.
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

namespace attnlab::kernels {

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// threadIdx.x read anew (a volatile read ptxas cannot hoist): per-thread offsets derived from it are recomputed
// where they are used instead of held in registers across a loop — for kernels at the 255-register ceiling.
__device__ __forceinline__ int opaque_thread_index() {
  uint32_t tid;
  asm volatile("mov.u32 %0, %%tid.x;\n" : "=r"(tid));
  return int(tid);
}

// 16 bytes global → shared, bypassing L1; `valid` false zero-fills (rows past the sequence end).
__device__ __forceinline__ void cp_async_16(void* smem, const void* gmem, bool valid) {
  const int bytes = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(smem)), "l"(gmem), "r"(bytes));
}
// The same for a sequential stream (a decode chain's K/V tiles): a miss in L2 fetches the 256 bytes around the
// address from DRAM (.L2::256B), the rest of the stream's next lanes' bytes, in one request.
__device__ __forceinline__ void cp_async_16_stream(void* smem, const void* gmem, bool valid) {
  const int bytes = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16, %2;\n" ::"r"(smem_addr(smem)), "l"(gmem), "r"(bytes));
}
// 4 bytes (cp.async.ca: the sizes below 16 go through L1), zero-filled when !valid.
__device__ __forceinline__ void cp_async_4(void* smem, const void* gmem, bool valid) {
  const int bytes = valid ? 4 : 0;
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smem_addr(smem)), "l"(gmem), "r"(bytes));
}
// An arrival on the mbarrier `bar` once every cp.async this thread has issued so far has landed (.noinc: the barrier's
// expected arrivals count this one; sm_80).
__device__ __forceinline__ void cp_async_arrive_noinc(uint64_t* bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(smem_addr(bar)) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// Four 8×8 b16 matrices; lane l supplies the address of row (l % 8) of matrix (l / 8).
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* smem) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(smem)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const void* smem) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(smem)));
}

// D = A·B + D, FP16 operands, FP32 accumulate.
__device__ __forceinline__ void mma_f16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// D = A·B + D, INT8 operands (m16n8k32), INT32 accumulate. Fragment layouts as above with bytes: A's
// a0 = (g, 4t..4t+3), a1 = (g+8, 4t..), a2 = (g, 16+4t..), a3 = (g+8, 16+4t..); B's b0 = (k 4t..4t+3, n g),
// b1 = (k 16+4t.., n g); C as for FP16. ldmatrix (b16 units) loads them from row-major byte rows of 16.
__device__ __forceinline__ void mma_s8(int (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// The same with B's bytes unsigned (0 … 255): turbo decode's 2-bit operands, codes scaled by up to 4³ (v21).
__device__ __forceinline__ void mma_s8u8(int (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.s32.s8.u8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// The low bytes of four integers packed, the first in the lowest byte: three byte permutes (PRMT).
__device__ __forceinline__ uint32_t pack_s8x4(int b0, int b1, int b2, int b3) {
  const uint32_t lo = __byte_perm(uint32_t(b0), uint32_t(b1), 0x0040);  // [b0, b1, b0, b0]
  const uint32_t hi = __byte_perm(uint32_t(b2), uint32_t(b3), 0x0040);  // [b2, b3, b2, b2]
  return __byte_perm(lo, hi, 0x5410);                                   // [b0, b1, b2, b3]
}

// Keys row `row` may see (core/problem.h: bottom-right causal alignment).
__device__ __forceinline__ int visible_keys(int row, int q_len, int kv_len, bool causal) {
  if (!causal) return kv_len;
  const int v = row + 1 + kv_len - q_len;
  return v < 0 ? 0 : (v > kv_len ? kv_len : v);
}

// 2^x on the SFU (ex2.approx.ftz, ≈ 2 ulp; subnormal results flush to 0), as FlashAttention-2 uses it.
__device__ __forceinline__ float ex2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// Two FP32 values rounded to FP16 (RNE) and packed, lower address first.
__device__ __forceinline__ uint32_t pack_half2(float lo, float hi) {
  const __half2 h = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&h);
}

// Integer ↔ float without the conversion pipe (16–32 results/clk/SM on Hopper, a quarter of the FP32
// pipe's): for |x| < 2²², the float with bits 0x4B400000 + x is 1.5·2²³ + x exactly, so subtracting
// 1.5·2²³ gives float(x) exactly; and for 0 ≤ y ≤ 2²², y + 1.5·2²³ rounds y to the nearest integer, ties
// to even (cvt.rni's rule), leaving it in the low mantissa bits. S (≤ 128·127² in magnitude), P·V
// (likewise) and P's codes (≤ 127) are all in range.
inline constexpr float kMagic = 12582912.0f;  // 1.5·2²³
inline constexpr int kMagicBits = 0x4B400000;
__device__ __forceinline__ float exact_float(int x) { return __int_as_float(x + kMagicBits) - kMagic; }
__device__ __forceinline__ int rounded_bits(float y) { return __float_as_int(y + kMagic); }  // low byte = ⌊y⌉

}  // namespace attnlab::kernels
