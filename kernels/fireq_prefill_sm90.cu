// attnlab kernels: the fireq prefill kernel for prefill_kv = fp8 (fireq_prefill.h states the contract) on
// Hopper's FP8 warpgroup MMA, at d = 64 and 128 — flash3_fp8_sm90.cu's kernel (2 warpgroups × 64 query rows,
// B_c = 128, the six-tile ring of kv_ring.cuh, ping-pong) with the arithmetic of core/variants/fireq.cpp
// (its head comment's lines):
//   Scores   S = (Q̂·K̂ᵀ)_fp32 · f_ij, f_ij = fl(fl(β_K,j·β_i)·τ)    wgmma e4m3·e4m3 → f32 (m64n128k32), then the
//            reference's per-element factor in its order (attend(): (k_col·β)·τ), masked
//   Softmax  online in FP32: m = max of the scaled scores, P̃ = e^{S − m}, α = e^{m_old − m}, ℓ = α·ℓ + rowsum P̃
//   P·V      P̂ = E4M3(P̃) (cvt.rn.satfinite, no scale), Oᵢ = α·Oᵢ + fl32(P̂·V̂ⱼ)·β_V,ⱼ
//   Output   O = Oᵢ/ℓ → BF16, L = m + log ℓ
// β_K is staged per tile in shared memory beside K (512 bytes a slot, copied with the tile), and each thread
// reads the 32 it needs (its columns 8n + 2t + {0, 1}) as float2s in the softmax. β_V is read once per tile
// from HBM. Applying f per element after the MMA costs two FMULs more per score than flash3_fp8's per-tile
// factor, which it folds into the exponent's FFMA; in return the scores equal the reference's up to the
// accumulator (the [gpu] test's item 1), and the running max is taken on them.
// P̂·V̂ⱼ accumulates in its own FP32 registers (fresh per tile, as the reference's), then is added to Oᵢ times
// β_V,ⱼ by one FFMA (the reference rounds the product and the sum apart: ≤ 1 ulp per tile). P̃ is computed in
// place in the score registers.
// Loop orders (fireq_prefill.h's three_stage): false runs kv_ring.cuh (FA3's two-stage pipelining); true runs
// kv_ring3.cuh (FireQ Alg. 1's three stages), which keeps two score accumulators live. Per thread that is
// 2·64 (S_{j−1}, S_j) + d/2 (Oᵢ) + d/2 (P̂·V̂ⱼ) + 16 (P̂'s fragments) registers before any address or index:
// 208 at d = 64, 272 at d = 128 — over the 255 a thread can hold, so the three-stage order is compiled for
// d = 64 only (ptxas, CUDA 13, sm_90a: d = 64 three-stage 255 registers, no spills; d = 128 three-stage 255
// registers with 1700 bytes of spill stores and 2328 of spill loads; the two-stage kernels 226 (d = 64) and
// 255 (d = 128), no spills). A producer warpgroup with setmaxnreg does not help: it moves registers between
// warpgroups, never past 255 per thread.
// The exponentials are ex2.approx on S·(β_K,j·τ)·(β_i·log₂e) − m: a few ulp from the reference's FP32 exp.
// Versions (kernels/PERF.md, "fireq prefill"): v1 — the reference's factor fl(fl(β_K,j·β_i)·τ) per element (three
// FMULs per score); v2 (this) — S·fl(β_K,j·τ) per element and β_i·log₂e in the exponent's FFMA (one FMUL): the
// same time on the H100 (1.171 against 1.172 ms at B 4, H 16, N 4096, d 128), so the factor is not what holds
// the kernel at 0.73–0.89× cuDNN where flash3_fp8 runs at 0.99–1.19×. The three-stage order at d = 64 is 7–8%
// slower than the two-stage one (its second score set takes the kernel to 255 registers).
#include "kernels/fireq_prefill.h"
#include "kernels/kernel_path.h"

#include "core/kernel_traits.h"
#include "kernels/fp8_pack.cuh"
#include "kernels/kv_ring3.cuh"
#include "kernels/tile_softmax.cuh"
#include "kernels/wgmma.cuh"

namespace attnlab::kernels {

namespace {

template <int D>
struct FireqTile {
  static constexpr KernelTraits kTraits = *find_kernel_traits("fireq", D, 90);
  static constexpr int kBr = kTraits.block_r, kBc = kTraits.block_c, kStages = kTraits.stages;
  static constexpr int kThreads = 32 * kTraits.warps;
  static constexpr int kQBytes = kBr * D, kKBytes = kBc * D, kVBytes = D * kBc;  // E4M3: a byte per element
  static constexpr int kStageBytes = kKBytes + kVBytes;
  static constexpr int kBetaBytes = kBc * 4;  // β_K of one tile, FP32
  static constexpr size_t kSmemBytes = size_t(kQBytes) + size_t(kStages) * kStageBytes + size_t(kStages) * kBetaBytes +
                                       size_t(kBr) * 4 + 1024;  // + β of the query rows, + alignment
  static_assert(kTraits.arch == 90 && !kTraits.decode_only, "the prefill row of the traits table");
  static_assert(find_kernel_traits("fireq", D, 80, true)->decode_only, "decode keeps the decode kernel's row");
  static_assert(kBr == kFireqPrefillBlock && kBc == kFireqPrefillBlock, "the V scale block is the tile");
  static_assert(kTraits.warps == 8, "two warpgroups of 64 query rows");
  static_assert(kStages == 6, "kv_ring.cuh: tiles j − 2 … j + 4 in the ring");
  static_assert(kBetaBytes / 16 <= kThreads, "one 16-byte copy of β_K per thread at most");
};

template <int D, bool PingPong, bool ThreeStage>
__global__ void __launch_bounds__(FireqTile<D>::kThreads, 1) fireq_prefill_kernel(FireqPrefillArgs a) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using T = FireqTile<D>;
  constexpr int kBc = T::kBc, kSteps = kBc / 32;  // k-steps of P̂·V̂: 32 keys each
  constexpr float kLog2e = 1.4426950408889634f;
  extern __shared__ char smem_raw[];
  char* smem = smem_raw + ((1024u - (smem_addr(smem_raw) & 1023u)) & 1023u);
  char* sQ = smem;
  auto stage = [&](int j) { return smem + T::kQBytes + (j % T::kStages) * T::kStageBytes; };  // K̂, V̂ᵀ
  float* sBetaK = reinterpret_cast<float*>(smem + T::kQBytes + T::kStages * T::kStageBytes);  // (kStages, B_c)
  auto beta_k_of = [&](int j) { return sBetaK + (j % T::kStages) * kBc; };
  float* sBetaQ = sBetaK + T::kStages * kBc;  // (B_r)

  const int lane = threadIdx.x % 32, warp = (threadIdx.x / 32) % 4, group = threadIdx.x / 128;
  const int t = lane % 4;
  const int bh = blockIdx.y, b = bh / a.q_heads, h = bh % a.q_heads;
  const int kvh = h / (a.q_heads / a.kv_heads), bkv = b * a.kv_heads + kvh;  // notes §3.1
  const int row0 = blockIdx.x * T::kBr;
  const int kv_blocks = (a.kv_len + kBc - 1) / kBc;
  const uint8_t* k = a.k + size_t(bkv) * a.kv_len * D;
  const uint8_t* vt = a.vt + size_t(bkv) * D * a.kv_pad;
  const float* beta_k = a.beta_k + size_t(bkv) * a.kv_pad;
  const float* beta_v = a.beta_v + size_t(bkv) * kv_blocks;
  const int last_row = min(row0 + T::kBr, a.q_len) - 1;
  const int tiles = (visible_keys(last_row, a.q_len, a.kv_len, a.causal) + kBc - 1) / kBc;

  const SwizzledCopier<D, kBc, T::kThreads, D> k_copier(threadIdx.x);  // d-byte rows: a d-byte swizzle
  const SwizzledCopier<kBc, D, T::kThreads> v_copier(threadIdx.x);     // V̂ᵀ: d rows of 128 keys
  auto load_kv = [&](int j) {
    const int col0 = j * kBc;
    if (col0 + kBc <= a.kv_len) {  // an interior tile (kv_pad ≥ kv_len): no bounds
      k_copier.copy_full(stage(j), k + size_t(col0) * D, D);
      v_copier.copy_full(stage(j) + T::kKBytes, vt + col0, a.kv_pad);
    } else {
      k_copier.copy(stage(j), k + size_t(col0) * D, D, a.kv_len - col0);
      v_copier.copy(stage(j) + T::kKBytes, vt + col0, a.kv_pad, D, (a.kv_pad - col0) / 16);  // keys are columns
    }
    if (threadIdx.x < T::kBetaBytes / 16) {  // β_K: 4 keys per copy, zero past kv_pad (masked keys)
      const int key = col0 + 4 * int(threadIdx.x);
      cp_async_16(beta_k_of(j) + 4 * threadIdx.x, key < a.kv_pad ? beta_k + key : beta_k, key < a.kv_pad);
    }
  };

  const int my_row0 = row0 + group * 64 + warp * 16 + lane / 4;  // rows my_row0 + 8i (wgmma.cuh's layout)
  const int all_see = visible_keys(row0, a.q_len, a.kv_len, a.causal);
  // β·log₂e of the block's query rows in shared memory (1 past q_len: finite scores; those rows are never stored), read by the
  // softmax of every tile: two registers fewer than holding them, which the d = 128 kernel needs.
  if (threadIdx.x < T::kBr)
    sBetaQ[threadIdx.x] = row0 + int(threadIdx.x) < a.q_len ? a.beta_q[size_t(bh) * a.q_len + row0 + threadIdx.x] * kLog2e : 1.f;
  __syncthreads();

  // Descriptors from one base each (flash3_fp8_sm90.cu): an offset adds as offset >> 4.
  const uint64_t q_desc = sw_desc<D>(sQ + group * 64 * D, 16, 8 * D);
  const uint64_t k_desc = sw_desc<D>(stage(0), 16, 8 * D);
  const uint64_t v_desc = sw128_desc(stage(0) + T::kKBytes, 16, 1024);
  auto slot_offset = [](int j) { return uint64_t((j % T::kStages) * (T::kStageBytes >> 4)); };
  auto desc_q = [&](int kk) { return q_desc + uint64_t(kk * 2); };
  auto desc_k = [&](int j, int kk) { return k_desc + slot_offset(j) + uint64_t(kk * 2); };
  auto desc_v = [&](int j, int ks) { return v_desc + slot_offset(j) + uint64_t(ks * 2); };

  float o[D / 2] = {};    // Oᵢ in FP32
  float acc[D / 2];       // P̂·V̂ⱼ, fresh per tile
  uint32_t p[kSteps][4];  // P̂ in E4M3 as A fragments, read by the P̂·V̂ in flight
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};  // m in log₂ units
  float bv_pending = 0.f, bv_next = 0.f;  // β_V of the tile in flight and of the next one

  auto issue_scores = [&](int j, float (&s)[kBc / 2]) {  // Alg. 1 l. 14: S = Q̂·K̂ⱼᵀ
#pragma unroll
    for (int kk = 0; kk < D / 32; ++kk) wgmma_m64n128k32_e4m3_ss(s, desc_q(kk), desc_k(j, kk), kk > 0);
  };
  auto issue_pv = [&](int j) {  // l. 11: P̂·V̂ⱼ into the fresh accumulator
#pragma unroll
    for (int ks = 0; ks < kSteps; ++ks) {
      if constexpr (D == 128) wgmma_m64n128k32_e4m3_rs(acc, p[ks], desc_v(j, ks), ks > 0);
      else wgmma_m64n64k32_e4m3_rs(acc, p[ks], desc_v(j, ks), ks > 0);
    }
  };
  // l. 12–15 for tile j: S·(β_K,j·τ) per element (β_K·τ once per column), masks, running max, P̃ (in place) and
  // ℓ; α per row. The exponent is S·(β_K,j·τ)·(β_i·log₂e) − m as one FFMA (m in log₂ units: the row's maximum
  // times the same row factor, rounding being monotonic). The reference rounds (β_K,j·β_i)·τ first and then
  // S times it: the two orders differ by a few FP32 ulps of S (the [gpu] test's item 2).
  auto softmax = [&](int j, float (&s)[kBc / 2], float (&alpha)[2]) {
    const int col0 = j * kBc;
    const float* bk = beta_k_of(j);
#pragma unroll
    for (int n = 0; n < kBc / 8; ++n) {
      const float2 k2 = *reinterpret_cast<const float2*>(bk + 8 * n + 2 * t);
      const float g[2] = {__fmul_rn(k2.x, a.scale), __fmul_rn(k2.y, a.scale)};  // β_K,j·τ, per column
#pragma unroll
      for (int e = 0; e < 4; ++e) s[4 * n + e] = __fmul_rn(s[4 * n + e], g[e % 2]);  // S·(β_K,j·τ); β_i below
    }
    if (col0 + kBc > all_see) mask_invisible<kBc>(s, col0, my_row0, t, a.q_len, a.kv_len, a.causal);
    // Row maxima and sums over four independent chains per row (flash3_fp8_sm90.cu).
    float mx4[2][4];
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
      for (int c = 0; c < 4; ++c) mx4[i][c] = -INFINITY;
#pragma unroll
    for (int n = 0; n < kBc / 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) mx4[e / 2][2 * (n % 2) + e % 2] = fmaxf(mx4[e / 2][2 * (n % 2) + e % 2], s[4 * n + e]);
    // The row factor β_i·log₂e (sBetaQ) folded into the maximum and the exponent's FFMA: β_i > 0 commutes
    // with the maximum, and m in log₂ units is the maximum times the same factor the exponent takes.
    const float c[2] = {sBetaQ[my_row0 - row0], sBetaQ[my_row0 - row0 + 8]};
    float mx[2];
#pragma unroll
    for (int i = 0; i < 2; ++i) mx[i] = fmaxf(fmaxf(mx4[i][0], mx4[i][1]), fmaxf(mx4[i][2], mx4[i][3])) * c[i];
    float shift[2];
    update_running_max_from(mx, 1.f, m, l, alpha, shift);
    float l4[2][4] = {};
#pragma unroll
    for (int n = 0; n < kBc / 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        s[4 * n + e] = ex2(fmaf(s[4 * n + e], c[e / 2], -shift[e / 2]));
        l4[e / 2][2 * (n % 2) + e % 2] += s[4 * n + e];
      }
#pragma unroll
    for (int i = 0; i < 2; ++i) l[i] += (l4[i][0] + l4[i][1]) + (l4[i][2] + l4[i][3]);
    bv_next = beta_v[j];
  };
  // After P̂·V̂ⱼ has landed (l. 16): Oᵢ = α_{j+1}·(Oᵢ + (P̂·V̂ⱼ)·β_V,ⱼ), one FFMA where the reference rounds
  // twice, α's product skipped by a warp where no row's maximum moved.
  auto finish_tile = [&](const float (&alpha)[2], bool rescale) {
    if (rescale && __any_sync(0xffffffffu, alpha[0] != 1.f || alpha[1] != 1.f)) {
      const float bv0 = __fmul_rn(bv_pending, alpha[0]), bv1 = __fmul_rn(bv_pending, alpha[1]);
#pragma unroll
      for (int n = 0; n < D / 8; ++n) {
        o[4 * n + 0] = fmaf(acc[4 * n + 0], bv0, __fmul_rn(o[4 * n + 0], alpha[0]));
        o[4 * n + 1] = fmaf(acc[4 * n + 1], bv0, __fmul_rn(o[4 * n + 1], alpha[0]));
        o[4 * n + 2] = fmaf(acc[4 * n + 2], bv1, __fmul_rn(o[4 * n + 2], alpha[1]));
        o[4 * n + 3] = fmaf(acc[4 * n + 3], bv1, __fmul_rn(o[4 * n + 3], alpha[1]));
      }
    } else {
#pragma unroll
      for (int e = 0; e < D / 2; ++e) o[e] = fmaf(acc[e], bv_pending, o[e]);
    }
  };
  // P̂ into the A fragments (8-bit A layout, k32) as flash3_fp8_sm90.cu packs them; the keys land in V̂ᵀ's
  // permuted order.
  auto pack_p = [&](const float (&s)[kBc / 2]) {
#pragma unroll
    for (int ks = 0; ks < kSteps; ++ks) {
      const float* c = s + 16 * ks;
      p[ks][0] = pack_e4m3x4(c[0], c[1], c[4], c[5]);
      p[ks][1] = pack_e4m3x4(c[2], c[3], c[6], c[7]);
      p[ks][2] = pack_e4m3x4(c[8], c[9], c[12], c[13]);
      p[ks][3] = pack_e4m3x4(c[10], c[11], c[14], c[15]);
    }
    bv_pending = bv_next;
  };
  auto load_q = [&] {
    SwizzledCopier<D, T::kBr, T::kThreads, D>(threadIdx.x).copy(sQ, a.q + (size_t(bh) * a.q_len + row0) * D, D,
                                                                 a.q_len - row0);
  };
  auto pin_pv = [&] {
    pin_registers(o);
    pin_registers(acc);
    pin_registers(p);
  };

  __shared__ uint64_t full[T::kStages], empty[T::kStages];
  if constexpr (ThreeStage) {
    auto steps = KvSteps{load_q, load_kv, issue_scores, issue_pv, softmax, pack_p, finish_tile, [] {}, pin_pv};
    kv_ring_three_stage<T::kStages, PingPong, kBc / 2>(tiles, steps, full, empty);
  } else {
    float sf[kBc / 2];  // S (then P̃): m64n128 FP32 accumulator
    auto steps = KvSteps{load_q,
                         load_kv,
                         [&](int j) { issue_scores(j, sf); },
                         issue_pv,
                         [&](int j, float (&alpha)[2]) { softmax(j, sf, alpha); },
                         [&] { pack_p(sf); },
                         finish_tile,
                         [&] { pin_registers(sf); },
                         pin_pv};
    kv_ring<T::kStages, PingPong>(tiles, steps, full, empty);
  }

  store_rows<D>(o, l, m, my_row0, t, a.q_len, a.o + size_t(bh) * a.q_len * D, a.lse + size_t(bh) * a.q_len, 1.f, 0.f);
#endif
}

template <int D, bool PingPong, bool ThreeStage>
cudaError_t launch(const FireqPrefillArgs& a, cudaStream_t stream) {
  using T = FireqTile<D>;
  auto* kernel = fireq_prefill_kernel<D, PingPong, ThreeStage>;
  if (const cudaError_t e =
          cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(T::kSmemBytes));
      e != cudaSuccess)
    return e;
  const dim3 grid((a.q_len + T::kBr - 1) / T::kBr, a.batch * a.q_heads);
  kernel<<<grid, T::kThreads, T::kSmemBytes, stream>>>(a);
  return cudaGetLastError();
}

template <int D>
cudaError_t launch_d(const FireqPrefillArgs& a, cudaStream_t stream) {
  if constexpr (D == 64) {
    if (a.three_stage) return a.ping_pong ? launch<D, true, true>(a, stream) : launch<D, false, true>(a, stream);
  }
  return a.ping_pong ? launch<D, true, false>(a, stream) : launch<D, false, false>(a, stream);
}

}  // namespace

bool fireq_prefill_supports(int head_dim, bool three_stage) {
  return three_stage ? head_dim == 64 : head_dim == 64 || head_dim == 128;
}

cudaError_t fireq_prefill_forward(const FireqPrefillArgs& a, cudaStream_t stream) {
  if (!fireq_prefill_supports(a.head_dim, a.three_stage) || a.kv_pad % 16 != 0 || a.kv_pad < a.kv_len ||
      a.q_len < 1 || a.kv_len < 1 || a.batch < 1 || a.kv_heads < 1 || a.q_heads % a.kv_heads != 0)
    return cudaErrorInvalidValue;
  if (!warpgroup_mma_available()) return cudaErrorNotSupported;
  return a.head_dim == 64 ? launch_d<64>(a, stream) : launch_d<128>(a, stream);
}

}  // namespace attnlab::kernels
