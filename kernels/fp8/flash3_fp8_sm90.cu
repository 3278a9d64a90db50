// attnlab kernels: flash3_fp8 (flash3_fp8.h states the contract) on Hopper's FP8 warpgroup MMA, at d = 64 and
// 128. The loop nest of int_flash_sm90.cu (2 warpgroups × 64 query rows, B_c = 128, S_{j+1} issued before
// P̃·V_j so one tile's softmax runs under the other's MMA) on a six-tile ring synchronized by mbarriers
// (kv_ring.cuh: the warpgroups need not meet every tile), with the
// arithmetic of core/variants/flash3_fp8.cpp (its head comment's lines):
//   Scores   S = (Q₈·K₈ᵀ)_fp32 · f, f = (s_Qᵢ·s_Kⱼ)·softmax_scale    wgmma e4m3·e4m3 → f32 (m64n128k32)
//   Softmax  online, P̃ = e^{S − m}, α = e^{m_old − m}, ℓ = α·ℓ + rowsum P̃ (FP32 P̃)
//   P·V      P̃ → E4M3 (cvt.rn.satfinite: the reference's round_fp8), Oᵢ = α·Oᵢ + (P̃₈·Vⱼ₈)_fp32·s_Vⱼ
//   Output   O = Oᵢ/ℓ → FP16, L = m + log ℓ
// P̃·V_j accumulates in its own FP32 registers (fresh per tile, as the reference's), then is added to Oᵢ times
// s_Vⱼ by one FFMA (the reference rounds the product and the sum apart: ≤ 1 ulp per tile). The exponentials
// are ex2.approx in log₂ units (S·f·log₂e, the running max in those units): a few ulp from the reference's
// FP32 exp. The FP8 tensor cores' accumulation keeps about 14 bits, not FP32's 24 — the [gpu] test's header
// derives what each of these can change. Q and K rows are d bytes (the d-byte swizzle, as
// int_flash_sm90.cu); Vᵀ rows (128 keys) the 128-byte one.
//
// K/V loads (flash3_fp8.h's tma_producer): true adds a producer warpgroup (FlashAttention-3 §3.1's warp
// specialization) — one of its threads copies each K and Vᵀ tile with two TMA loads (tma_fill.cuh) into the
// six-tile ring, and setmaxnreg moves registers to the consumers (240 each, the producer 24). The two consumer
// warpgroups then issue no copies (kv_ring.cuh's ProducerFills). false: every consumer thread copies its share
// of each tile with cp.async. The same numbers either way, bit for bit (the [gpu] test holds it).
#include "kernels/fp8/flash3_fp8.h"
#include "kernels/common/kernel_path.h"

#include "core/kernel_traits.h"
#include "kernels/common/fp8_pack.cuh"
#include "kernels/common/kv_ring.cuh"
#include "kernels/common/tensor_map.h"
#include "kernels/common/tile_softmax.cuh"
#include "kernels/common/tma_fill.cuh"
#include "kernels/common/wgmma.cuh"

namespace attnlab::kernels {

namespace {

template <int D, bool Producer>
struct Fp8Tile {
  static constexpr KernelTraits kTraits = *find_kernel_traits("flash3_fp8", D, 90);
  static constexpr int kBr = kTraits.block_r, kBc = kTraits.block_c, kStages = kTraits.stages;
  static constexpr int kConsumers = 32 * kTraits.warps;  // two warpgroups of 64 query rows
  static constexpr int kThreads = kConsumers + (Producer ? 128 : 0);
  static constexpr int kQBytes = kBr * D, kKBytes = kBc * D, kVBytes = D * kBc;  // E4M3: a byte per element
  static constexpr int kStageBytes = kKBytes + kVBytes;
  static constexpr size_t kSmemBytes = size_t(kQBytes) + size_t(kStages) * kStageBytes + 1024;  // + alignment
  static_assert(kBr == kFlash3Fp8Block && kBc == kFlash3Fp8Block, "the scale blocks are the tiles");
  static_assert(kTraits.warps == 8, "two warpgroups of 64 query rows");
  static_assert(kStages == 6, "kv_ring.cuh: tiles j − 2 … j + 4 in the ring");
};

template <int D, bool PingPong, bool Producer>
__global__ void __launch_bounds__(Fp8Tile<D, Producer>::kThreads, 1)
    flash3_fp8_kernel(Flash3Fp8Args a, const __grid_constant__ CUtensorMap k_map,
                      const __grid_constant__ CUtensorMap vt_map) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using T = Fp8Tile<D, Producer>;
  constexpr int kBc = T::kBc, kSteps = kBc / 32;  // k-steps of P̃·V: 32 keys each
  constexpr float kLog2e = 1.4426950408889634f;
  extern __shared__ char smem_raw[];
  char* smem = smem_raw + ((1024u - (smem_addr(smem_raw) & 1023u)) & 1023u);
  char* sQ = smem;
  auto stage = [&](int j) { return smem + T::kQBytes + (j % T::kStages) * T::kStageBytes; };  // K, Vᵀ

  const int lane = threadIdx.x % 32, warp = (threadIdx.x / 32) % 4, group = threadIdx.x / 128;
  const int t = lane % 4;
  const int bh = blockIdx.y, b = bh / a.q_heads, h = bh % a.q_heads;
  const int kvh = h / (a.q_heads / a.kv_heads), bkv = b * a.kv_heads + kvh;  // notes §3.1
  const int row0 = blockIdx.x * T::kBr;
  const int kv_blocks = (a.kv_len + kBc - 1) / kBc;
  const uint8_t* k = a.k + size_t(bkv) * a.kv_len * D;
  const uint8_t* vt = a.vt + size_t(bkv) * D * a.kv_pad;
  const float* s_k = a.s_k + size_t(bkv) * kv_blocks;
  const float* s_v = a.s_v + size_t(bkv) * kv_blocks;
  const int last_row = min(row0 + T::kBr, a.q_len) - 1;
  const int tiles = (visible_keys(last_row, a.q_len, a.kv_len, a.causal) + kBc - 1) / kBc;

  auto load_kv = [&](int j) {
    // The copiers' offsets from opaque_thread_index() per tile (mma.cuh), not held across the loop.
    const int tid = opaque_thread_index();
    const SwizzledCopier<D, kBc, T::kConsumers, D> k_copier(tid);  // d-byte rows: a d-byte swizzle
    const SwizzledCopier<kBc, D, T::kConsumers> v_copier(tid);     // Vᵀ: d rows of 128 keys
    const int col0 = j * kBc;
    if (col0 + kBc <= a.kv_len) {  // an interior tile (kv_pad ≥ kv_len): no bounds
      k_copier.copy_full(stage(j), k + size_t(col0) * D, D);
      v_copier.copy_full(stage(j) + T::kKBytes, vt + col0, a.kv_pad);
    } else {
      k_copier.copy(stage(j), k + size_t(col0) * D, D, a.kv_len - col0);
      v_copier.copy(stage(j) + T::kKBytes, vt + col0, a.kv_pad, D, (a.kv_pad - col0) / 16);  // keys are columns
    }
  };

  const int my_row0 = row0 + group * 64 + warp * 16 + lane / 4;  // rows my_row0 + 8i (wgmma.cuh's layout)
  const int all_see = visible_keys(row0, a.q_len, a.kv_len, a.causal);
  const float s_q = a.s_q[size_t(bh) * ((a.q_len + T::kBr - 1) / T::kBr) + blockIdx.x];

  // Descriptors from one base each: a descriptor holds the address >> 4 in its low 14 bits (shared memory
  // < 256 KB: no carry out of them), so an offset adds as offset >> 4.
  const uint64_t q_desc = sw_desc<D>(sQ + group * 64 * D, 16, 8 * D);
  const uint64_t k_desc = sw_desc<D>(stage(0), 16, 8 * D);
  const uint64_t v_desc = sw128_desc(stage(0) + T::kKBytes, 16, 1024);
  auto slot_offset = [](int j) { return uint64_t((j % T::kStages) * (T::kStageBytes >> 4)); };
  auto desc_q = [&](int kk) { return q_desc + uint64_t(kk * 2); };
  auto desc_k = [&](int j, int kk) { return k_desc + slot_offset(j) + uint64_t(kk * 2); };
  auto desc_v = [&](int j, int ks) { return v_desc + slot_offset(j) + uint64_t(ks * 2); };

  float sf[kBc / 2];        // S: m64n128 FP32 accumulator
  float o[D / 2] = {};      // Oᵢ in FP32
  float acc[D / 2];         // P̃₈·V_j, fresh per tile
  uint32_t p[kSteps][4];    // P̃ in E4M3 as A fragments, read by the P̃·V in flight
  float p_real[kBc / 2];    // the next tile's P̃ (FP32), packed only once the P̃·V in flight has landed
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};
  float sv_pending = 0.f, sv_next = 0.f;  // s_V of the tile in flight and of the next one

  auto issue_scores = [&](int j) {
#pragma unroll
    for (int kk = 0; kk < D / 32; ++kk) wgmma_m64n128k32_e4m3_ss(sf, desc_q(kk), desc_k(j, kk), kk > 0);
  };
  auto issue_pv = [&](int j) {
#pragma unroll
    for (int ks = 0; ks < kSteps; ++ks) {
      if constexpr (D == 128) wgmma_m64n128k32_e4m3_rs(acc, p[ks], desc_v(j, ks), ks > 0);
      else wgmma_m64n64k32_e4m3_rs(acc, p[ks], desc_v(j, ks), ks > 0);
    }
  };
  // Scores, masks, running max, P̃ and ℓ for tile j; α per row. In log₂ units, the factor folded into the
  // exponent: P̃ = 2^{sf·f·log₂e − m} as one FFMA and one ex2 per score, the running max taken on the raw
  // accumulator (f > 0, and rounding is monotonic: max(sf)·f₂ = max(sf·f₂) exactly).
  auto softmax = [&](int j, float (&alpha)[2]) {
    const int col0 = j * kBc;
    const float f2 = ((s_q * s_k[j]) * a.scale) * kLog2e;  // the reference's per-tile factor, in its order
    if (col0 + kBc > all_see) mask_invisible<kBc>(sf, col0, my_row0, t, a.q_len, a.kv_len, a.causal);
    // Row maxima and sums over four independent chains per row, not one 32-long chain of dependent
    // instructions (the maximum is exact in any order; ℓ's FP32 order is the kernel's own either way).
    float mx4[2][4];
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
      for (int c = 0; c < 4; ++c) mx4[i][c] = -INFINITY;
#pragma unroll
    for (int n = 0; n < kBc / 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) mx4[e / 2][2 * (n % 2) + e % 2] = fmaxf(mx4[e / 2][2 * (n % 2) + e % 2], sf[4 * n + e]);
    float mx[2];
#pragma unroll
    for (int i = 0; i < 2; ++i) mx[i] = fmaxf(fmaxf(mx4[i][0], mx4[i][1]), fmaxf(mx4[i][2], mx4[i][3]));
    float shift[2];
    update_running_max_from(mx, f2, m, l, alpha, shift);
    float l4[2][4] = {};
#pragma unroll
    for (int n = 0; n < kBc / 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        p_real[4 * n + e] = ex2(fmaf(sf[4 * n + e], f2, -shift[e / 2]));
        l4[e / 2][2 * (n % 2) + e % 2] += p_real[4 * n + e];
      }
#pragma unroll
    for (int i = 0; i < 2; ++i) l[i] += (l4[i][0] + l4[i][1]) + (l4[i][2] + l4[i][3]);
    sv_next = s_v[j];
  };
  // After P̃·V_j has landed: Oᵢ = α_{j+1}·(Oᵢ + (P̃₈·V_j)·s_Vⱼ), the reference's order of operations with one
  // rounding (an FFMA) where it has two, and α's product skipped by a warp where no row's maximum moved.
  auto finish_tile = [&](const float (&alpha)[2], bool rescale) {
    if (rescale && __any_sync(0xffffffffu, alpha[0] != 1.f || alpha[1] != 1.f)) {
      const float sv0 = sv_pending * alpha[0], sv1 = sv_pending * alpha[1];
#pragma unroll
      for (int n = 0; n < D / 8; ++n) {
        o[4 * n + 0] = fmaf(acc[4 * n + 0], sv0, o[4 * n + 0] * alpha[0]);
        o[4 * n + 1] = fmaf(acc[4 * n + 1], sv0, o[4 * n + 1] * alpha[0]);
        o[4 * n + 2] = fmaf(acc[4 * n + 2], sv1, o[4 * n + 2] * alpha[1]);
        o[4 * n + 3] = fmaf(acc[4 * n + 3], sv1, o[4 * n + 3] * alpha[1]);
      }
    } else {
#pragma unroll
      for (int e = 0; e < D / 2; ++e) o[e] = fmaf(acc[e], sv_pending, o[e]);
    }
  };
  // P̃ into the A fragments (8-bit A layout, k32), as int_flash_sm90.cu packs its codes: a0/a1 take
  // accumulator chunks 4ks, 4ks + 1 (rows g, g + 8), a2/a3 chunks 4ks + 2, 4ks + 3; the keys land in Vᵀ's
  // permuted order.
  auto pack_p = [&]() {
#pragma unroll
    for (int ks = 0; ks < kSteps; ++ks) {
      const float* c = p_real + 16 * ks;
      p[ks][0] = pack_e4m3x4(c[0], c[1], c[4], c[5]);
      p[ks][1] = pack_e4m3x4(c[2], c[3], c[6], c[7]);
      p[ks][2] = pack_e4m3x4(c[8], c[9], c[12], c[13]);
      p[ks][3] = pack_e4m3x4(c[10], c[11], c[14], c[15]);
    }
    sv_pending = sv_next;
  };

  auto steps = KvSteps{[&] {
                         SwizzledCopier<D, T::kBr, T::kConsumers, D>(threadIdx.x)
                             .copy(sQ, a.q + (size_t(bh) * a.q_len + row0) * D, D, a.q_len - row0);
                       },
                       load_kv, issue_scores, issue_pv, softmax, pack_p, finish_tile,
                       [&] { pin_registers(sf); },
                       [&] {
                         pin_registers(o);
                         pin_registers(acc);
                         pin_registers(p);
                       }};
  __shared__ uint64_t full[T::kStages], empty[T::kStages];
  if constexpr (Producer) {  // tma_fill.cuh: the producer warpgroup copies, the consumers compute
    const bool consumer = split_warpgroups<T::kStages, T::kConsumers>(
        tiles, T::kStageBytes,
        [&] {
          prefetch_tensor_map(&k_map);
          prefetch_tensor_map(&vt_map);
        },
        [&](int j, uint64_t* bar) {
          tma_load_3d(stage(j), &k_map, 0, j * kBc, bkv, bar);                 // K rows j·B_c …, d bytes each
          tma_load_3d(stage(j) + T::kKBytes, &vt_map, j * kBc, 0, bkv, bar);  // Vᵀ: d rows, keys j·B_c …
        },
        full, empty);
    if (!consumer) return;
    kv_ring<T::kStages, PingPong>(tiles, steps, full, empty, ProducerFills{});
  } else {
    kv_ring<T::kStages, PingPong>(tiles, steps, full, empty);
  }

  // O = Oᵢ/ℓ → FP16; L = m + log ℓ (natural units).
  store_rows<D>(o, l, m, my_row0, t, a.q_len, a.o + size_t(bh) * a.q_len * D, a.lse + size_t(bh) * a.q_len, 1.f, 0.f);
#endif
}

template <int D, bool PingPong, bool Producer>
cudaError_t launch(const Flash3Fp8Args& a, cudaStream_t stream) {
  using T = Fp8Tile<D, Producer>;
  CUtensorMap k_map{}, vt_map{};  // unread without the producer
  if constexpr (Producer) {  // the producer's tensor maps (tensor_map.h)
    const int64_t heads = int64_t(a.batch) * a.kv_heads;
    cudaError_t e = k8_tensor_map(k_map, a.k, heads, a.kv_len, D, kFlash3Fp8Block);
    if (e == cudaSuccess) e = vt8_tensor_map(vt_map, a.vt, heads, a.kv_pad, D, kFlash3Fp8Block);
    if (e != cudaSuccess) return e;
  }
  if (const cudaError_t e = cudaFuncSetAttribute(flash3_fp8_kernel<D, PingPong, Producer>,
                                                 cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                 static_cast<int>(T::kSmemBytes));
      e != cudaSuccess)
    return e;
  const dim3 grid((a.q_len + T::kBr - 1) / T::kBr, a.batch * a.q_heads);
  flash3_fp8_kernel<D, PingPong, Producer><<<grid, T::kThreads, T::kSmemBytes, stream>>>(a, k_map, vt_map);
  return cudaGetLastError();
}

template <int D, bool PingPong>
cudaError_t launch_p(const Flash3Fp8Args& a, cudaStream_t stream) {
  return a.tma_producer ? launch<D, PingPong, true>(a, stream) : launch<D, PingPong, false>(a, stream);
}

template <int D>
cudaError_t launch_d(const Flash3Fp8Args& a, cudaStream_t stream) {
  return a.ping_pong ? launch_p<D, true>(a, stream) : launch_p<D, false>(a, stream);
}

}  // namespace

bool flash3_fp8_supports(int head_dim) { return head_dim == 64 || head_dim == 128; }

cudaError_t flash3_fp8_forward(const Flash3Fp8Args& a, cudaStream_t stream) {
  if (!flash3_fp8_supports(a.head_dim) || a.kv_pad % 16 != 0 || a.kv_pad < a.kv_len || a.q_len < 1 || a.kv_len < 1)
    return cudaErrorInvalidValue;
  if (!warpgroup_mma_available()) return cudaErrorNotSupported;
  return a.head_dim == 64 ? launch_d<64>(a, stream) : launch_d<128>(a, stream);
}

}  // namespace attnlab::kernels
