// attnlab kernels: INT-FlashAttention (full and half INT8) on Hopper's warpgroup MMA (wgmma, sm_90a) — the same
// function as int_flash.cu (int_flash.h states the contract), at d = 64 and 128.
//
// Two warpgroups × 64 query rows, B_c = 128, S_{j+1} issued before P·V_j so the softmax of one tile runs under the
// other's MMA (FlashAttention-3 §3.2's intra-warpgroup pipelining); what changes from flash2_sm90.cu is Alg. 1's
// arithmetic:
//   l. 9   S = ((QKᵀ)_int32·(s_Q·scale·log₂e))·s_K     wgmma s8·s8 → s32 (m64n128k32), Q and K K-major
//   l. 11  P = ⌊127·2^{S − m}⌉ (cvt.rni)                 codes packed from the S registers into A fragments
//   l. 12  ℓ = 2^{m_old − m}·ℓ + rowsum P                the quantized P
//   l. 13  O = 2^{m_old − m}·O + float(P·Vᵀ_int32)       wgmma s8 with A = P from registers, B = Vᵀ
//   l. 16  O = (O / ℓ)·s_V → FP16
// 8-bit wgmma reads B K-major only, so V arrives transposed (Vᵀ: d × keys, key-contiguous), with int_flash.h's
// 16-key permutation: a wgmma's A fragment per warp is mma.m16n8k32's, so the codes pack exactly as there.
// P·V_j accumulates in its own INT32 registers (fresh per tile) and is added to the FP32 O once it lands — or, with
// pv_across_tiles (the reference's pv_accumulation = across_tiles), stays there across tiles while a row's running max
// holds: a thread flushes a row's sum into O (cvt.rn.f32.s32 and one FP32 add per element, then the rescale) when the
// row's max moves, every kFlushTiles tiles (the INT32 sum's bound) and after the last tile.
// Half-INT8 (v_fp16): S as above, P̃ = 2^{S − m} in FP32, ℓ from it, P̃ rounded to FP16 for an FP16 wgmma
// with V (keys × d) read MN-major, as flash2_sm90.cu does; O accumulates there directly.
// Q and K rows are d bytes: the 128-byte swizzle at d = 128, the 64-byte one at d = 64 (wgmma.cuh); Vᵀ rows
// (128 keys) and FP16 V rows (d = 64: 128 bytes; d = 128: two 128-byte column blocks) use the 128-byte one.
//
// K/V loads (int_flash.h's tma_producer, ping_pong). true, the default: FlashAttention-3 §3.1's warp
// specialization, as flash3_fp8_sm90.cu has it — a producer warpgroup, one of whose threads copies each tile's K, V
// (Vᵀ, or FP16 V in 64-channel column blocks) and s_K with TMA loads (tma_fill.cuh) into a ring of mbarriers
// (kv_ring.cuh's ProducerFills: 6 slots, 4 for half INT8 at d = 128, whose slots are 49 KB); setmaxnreg gives the
// two consumer warpgroups 240 registers each, and they issue no copy and meet at no CTA barrier. With ping_pong their
// MMA issues alternate (§3.1's ping-pong scheduling: one's softmax under the other's MMAs). false: wgmma v2's
// pipeline (kv_pipeline.cuh: every thread's cp.async, three stages, a CTA barrier per tile). Each warpgroup runs the
// same steps (below) on the same bytes in the same order either way: the same numbers, bit for bit (the [gpu] test).
// Versions (kernels/PERF.md, "int_flash"): wgmma v1 — INT8 on warpgroup MMA; v2 — every int↔float through the
// 1.5·2²³ constant (1.40–1.61× FA2 at d 128 on the H100), then d = 64; v3 (this) — the producer, ring and ping-pong.
#include "kernels/int8/int_flash_sm90.h"

#include "core/kernel_traits.h"
#include "core/variants/int_flash_accumulation.h"
#include "kernels/common/kv_ring.cuh"
#include "kernels/common/tensor_map.h"
#include "kernels/common/tile_softmax.cuh"
#include "kernels/common/tma_fill.cuh"
#include "kernels/common/wgmma.cuh"

#include <algorithm>
#include <cmath>

namespace attnlab::kernels {

namespace {

template <int D, bool VHalf, bool Producer>
struct IntHopperTile {
  static constexpr KernelTraits kTraits = *find_kernel_traits("int_flash", D, 90);
  static constexpr int kBr = kTraits.block_r, kBc = kTraits.block_c;
  static constexpr int kConsumers = 32 * kTraits.warps;               // two warpgroups of 64 query rows
  static constexpr int kThreads = kConsumers + (Producer ? 128 : 0);  // + the TMA producer warpgroup
  static constexpr int kQBytes = kBr * D, kKBytes = kBc * D;
  static constexpr int kVBytes = VHalf ? kBc * D * 2 : D * kBc;  // V in FP16 (keys × d) or Vᵀ in INT8 (d × keys)
  static constexpr int kScaleBytes = 1024;                        // s_K (kBc floats), keeps stages 1024-aligned
  static constexpr int kStageBytes = kKBytes + kVBytes + kScaleBytes;
  static constexpr int kLoadedBytes = kKBytes + kVBytes + kBc * 4;  // what one tile's TMA loads write
  // The producer's ring: the traits' 6 slots where they fit beside Q (half INT8 at d = 128: 4); the cp.async
  // pipeline: kv_pipeline.cuh's 3.
  static constexpr int kStages = Producer ? ring_slots(kTraits.stages, kQBytes + 1024, kStageBytes) : kKvPipelineStages;
  static constexpr size_t kSmemBytes = size_t(kQBytes) + size_t(kStages) * kStageBytes + 1024;  // + alignment
  static_assert(kBr == 128 && kTraits.warps == 8, "two warpgroups of 64 query rows");
  static_assert(kBc == 128 && kBc * 4 <= kScaleBytes, "S is one m64n128 accumulator; Vᵀ rows are one swizzle row");
  static_assert(kSmemBytes + 2 * kStages * sizeof(uint64_t) <= kSm90SmemPerCta, "the ring and its mbarriers fit");
  static_assert(kLoadedBytes <= kStageBytes, "a tile's loads fill its slot");
};

// Dump: also write the INT32 scores to a.scores (a test-only instantiation; the timed kernel has none of it).
// Producer, PingPong: the K/V loads and schedule (the head comment); the maps are read by the producer only.
// Across: P·V in INT32 across tiles (the head comment; full INT8 only).
template <int D, bool VHalf, bool Dump, bool Producer, bool PingPong, bool Across>
__global__ void __launch_bounds__(IntHopperTile<D, VHalf, Producer>::kThreads, 1)
    int_flash_sm90_kernel(IntFlashArgs a, const __grid_constant__ CUtensorMap k_map,
                          const __grid_constant__ CUtensorMap v_map, const __grid_constant__ CUtensorMap sk_map) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using T = IntHopperTile<D, VHalf, Producer>;
  constexpr int kBc = T::kBc;
  constexpr float kLog2e = 1.4426950408889634f;
  constexpr float kR = 127.f;  // Alg. 1: INT8 maximum R, the scale of P's codes
  static_assert(!(Across && VHalf), "half INT8 accumulates P̃·V in FP32: there is no INT32 sum to keep");
  constexpr int kFlushTiles = int(variants::pv_flush_tiles(127, kBc));  // Across: the INT32 sum's bound (1 040)
  extern __shared__ char smem_raw[];
  char* smem = smem_raw + ((1024u - (smem_addr(smem_raw) & 1023u)) & 1023u);
  char* sQ = smem;
  auto stage = [&](int j) { return smem + T::kQBytes + (j % T::kStages) * T::kStageBytes; };  // K, V, s_K

  const int group = warpgroup_index();  // warp-uniform to the compiler: the descriptors stay in uniform registers
  const int bh = blockIdx.y, b = bh / a.q_heads, h = bh % a.q_heads;
  const int kvh = h / (a.q_heads / a.kv_heads), bkv = b * a.kv_heads + kvh;  // notes §3.1
  const int row0 = blockIdx.x * T::kBr;
  const int8_t* k = a.k + size_t(bkv) * a.kv_len * D;
  const int8_t* vt = VHalf ? nullptr : a.vt + size_t(bkv) * D * a.kv_pad;
  const __half* v16 = VHalf ? a.v16 + size_t(bkv) * a.kv_len * D : nullptr;
  const float* s_k = a.s_k + size_t(bkv) * a.kv_pad;
  const int last_row = min(row0 + T::kBr, a.q_len) - 1;
  const int tiles = (visible_keys(last_row, a.q_len, a.kv_len, a.causal) + kBc - 1) / kBc;

  const SwizzledCopier<D, kBc, T::kConsumers, D> k_copier(threadIdx.x);  // d-byte rows: a d-byte swizzle
  const SwizzledCopier<VHalf ? 2 * D : kBc, VHalf ? kBc : D, T::kConsumers> v_copier(threadIdx.x);
  auto load_kv = [&](int j) {
    const int col0 = j * kBc;
    char* st = stage(j);
    k_copier.copy(st, k + size_t(col0) * D, D, a.kv_len - col0);
    if constexpr (VHalf) v_copier.copy(st + T::kKBytes, v16 + size_t(col0) * D, 2 * D, a.kv_len - col0);
    else v_copier.copy(st + T::kKBytes, vt + col0, a.kv_pad, D, (a.kv_pad - col0) / 16);  // Vᵀ: keys are columns
    if (threadIdx.x < kBc / 4)  // s_K, zero past kv_pad
      cp_async_16(st + T::kKBytes + T::kVBytes + threadIdx.x * 16, s_k + col0 + 4 * threadIdx.x,
                  col0 + 4 * int(threadIdx.x) < a.kv_pad);
  };

  // Thread tid's first row; its rows are that + 8i (wgmma.cuh's layout: warpgroup, warp, lane / 4).
  auto first_row = [&](unsigned tid) { return row0 + (tid / 128) * 64 + ((tid / 32) % 4) * 16 + (tid % 32) / 4; };
  const int my_row0 = first_row(threadIdx.x);
  const float scale_log2 = a.scale * kLog2e;
  float row_scale[2];  // l. 9 with s_Q and the scale folded per row (≤ 2 ulp from the reference's order)
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int row = my_row0 + 8 * i;
    row_scale[i] = row < a.q_len ? a.s_q[size_t(bh) * a.q_len + row] * scale_log2 : 0.f;
  }

  // Descriptors (wgmma.cuh). Q, K: one d-byte swizzle block per row, 8 rows = 8d bytes apart; k-step kk
  // reads bytes 32kk.. of it. Vᵀ (full): d rows × 128 keys, k-step ks reads keys 32ks... V (half): as in
  // flash2_sm90.cu. Each advanced by its k-step's constant from the tile's (wgmma_descriptor.h's desc_advance).
  const uint64_t q_desc = sw_desc<D>(sQ + group * 64 * D, 16, 8 * D);
  auto desc_q = [&](int kk) { return desc_advance(q_desc, kk * 32); };
  auto desc_k = [&](int j, int kk) { return desc_advance(sw_desc<D>(stage(j), 16, 8 * D), kk * 32); };
  auto desc_v = [&](int j, int ks) {
    if constexpr (VHalf) return desc_advance(sw128_desc(stage(j) + T::kKBytes, kBc * 128, 1024), ks * 16 * 128);
    else return desc_advance(sw128_desc(stage(j) + T::kKBytes, 16, 1024), ks * 32);
  };

  constexpr int kSteps = VHalf ? kBc / 16 : kBc / 32;  // k-steps of P·V: 16 keys (FP16) or 32 (INT8)
  int si[kBc / 2];            // S in INT32: m64n128 accumulator
  float o[D / 2] = {};        // O in FP32
  int acc[VHalf ? 1 : D / 2];  // P·V_j in INT32 (full INT8)
  uint32_t p[kSteps][4];      // P as A fragments: INT8 codes or FP16 P̃, read by the P·V in flight
  // The next tile's P, computed while that P·V runs and packed into p only once it has landed (the A
  // registers of an in-flight wgmma may not be written; a second packed copy would cost register moves
  // that ptxas answers by serializing the wgmmas).
  float p_real[VHalf ? kBc / 2 : 1];  // half-INT8: P̃ in FP32
  int p_code[VHalf ? 1 : kBc / 2];    // full INT8: P's codes
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};
  bool moved[2] = {true, true};  // Across: the rows whose running max the last softmax moved
  int pending_tiles = 0;         // Across: tiles added since the last flush of every row

  auto issue_scores = [&](int j) {
#pragma unroll
    for (int kk = 0; kk < D / 32; ++kk) wgmma_m64n128k32_s8_ss(si, desc_q(kk), desc_k(j, kk), kk > 0);
  };
  auto issue_pv = [&](int j) {
#pragma unroll
    for (int ks = 0; ks < kSteps; ++ks) {
      if constexpr (VHalf && D == 128) wgmma_m64n128k16_f16_rs_tb(o, p[ks], desc_v(j, ks), j > 0 || ks > 0);
      else if constexpr (VHalf) wgmma_m64n64k16_f16_rs_tb(o, p[ks], desc_v(j, ks), j > 0 || ks > 0);
      else if constexpr (D == 128) wgmma_m64n128k32_s8_rs(acc, p[ks], desc_v(j, ks), ks > 0 || (Across && j > 0));
      else wgmma_m64n64k32_s8_rs(acc, p[ks], desc_v(j, ks), ks > 0 || (Across && j > 0));
    }
  };
  // Lines 9–12 for tile j on si: scores, masks, running max, P into p_real / p_code, ℓ; returns α per row.
  // The thread's rows, its columns' offset t and the keys all rows see are recomputed here from a thread index read
  // anew (opaque_thread_index), not held across the loop: the warp-specialized kernel's consumers have 240
  // registers, and holding them spilled 8–24 bytes at d = 128 (fireq prefill v3's remedy).
  auto softmax = [&](int j, float (&alpha)[2]) {
    const int col0 = j * kBc;
    const unsigned tid = opaque_thread_index();
    const int t = tid % 4, rows0 = first_row(tid);
    const float* sk = reinterpret_cast<const float*>(stage(j) + T::kKBytes + T::kVBytes);
    if constexpr (Dump) store_int_scores<kBc>(si, a.scores + size_t(bh) * a.q_len * a.kv_len, col0, rows0, t, a.q_len, a.kv_len);
    float s[kBc / 2];
#pragma unroll
    for (int n = 0; n < kBc / 8; ++n) {
      const float2 skn = *reinterpret_cast<const float2*>(sk + n * 8 + 2 * t);
#pragma unroll
      for (int e = 0; e < 4; ++e)
        s[4 * n + e] = (exact_float(si[4 * n + e]) * row_scale[e / 2]) * (e % 2 ? skn.y : skn.x);
    }
    if (col0 + kBc > visible_keys(row0, a.q_len, a.kv_len, a.causal))  // the diagonal, the ragged end
      mask_invisible<kBc>(s, col0, rows0, t, a.q_len, a.kv_len, a.causal);
    float shift[2];
    const float m_before[2] = {m[0], m[1]};
    update_running_max<kBc>(s, 1.f, m, l, alpha, shift);  // s is already in scaled log₂ units
    if constexpr (Across) moved[0] = m[0] != m_before[0], moved[1] = m[1] != m_before[1];
    if constexpr (VHalf) {
#pragma unroll
      for (int n = 0; n < kBc / 8; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          p_real[4 * n + e] = ex2(s[4 * n + e] - shift[e / 2]);
          l[e / 2] += p_real[4 * n + e];
        }
    } else {
      // p_code holds the bits of 1.5·2²³ + code (its low byte is the code, which the packing takes). The
      // row sums add those bits as unsigned integers (mod 2³²) and remove the kBc/4 offsets once, so
      // ℓ = α·ℓ + rowsum P is one exact integer sum and one rounding, as in the reference.
      uint32_t row_sum[2] = {0, 0};
#pragma unroll
      for (int n = 0; n < kBc / 8; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          p_code[4 * n + e] = rounded_bits(kR * ex2(s[4 * n + e] - shift[e / 2]));
          row_sum[e / 2] += uint32_t(p_code[4 * n + e]);
        }
#pragma unroll
      for (int i = 0; i < 2; ++i) l[i] += float(int(row_sum[i] - uint32_t(kBc / 4) * uint32_t(kMagicBits)));
    }
  };
  // After P·V_j has landed: O += float(P·V_j) (full INT8), then O ·= α of the next tile. Across: only the rows
  // whose max moves are flushed (every row after the last tile, rescale false, and every kFlushTiles tiles); a
  // flushed row's INT32 sum may exceed the 1.5·2²³ conversion's 2²² range, so it takes cvt.rn.f32.s32.
  auto finish_tile = [&](const float (&alpha)[2], bool rescale) {
    if constexpr (Across) {
      const bool every = !rescale || ++pending_tiles == kFlushTiles;
      if (every) pending_tiles = 0;
#pragma unroll
      for (int i = 0; i < 2; ++i)
        if (every || moved[i]) {
#pragma unroll
          for (int n = 0; n < D / 8; ++n)
#pragma unroll
            for (int c = 0; c < 2; ++c) {
              o[4 * n + 2 * i + c] += __int2float_rn(acc[4 * n + 2 * i + c]);
              acc[4 * n + 2 * i + c] = 0;
            }
        }
    } else if constexpr (!VHalf) {
#pragma unroll
      for (int e = 0; e < D / 2; ++e) o[e] += exact_float(acc[e]);
    }
    if (rescale && __any_sync(0xffffffffu, alpha[0] != 1.f || alpha[1] != 1.f)) {
#pragma unroll
      for (int n = 0; n < D / 8; ++n) {
        o[4 * n + 0] *= alpha[0], o[4 * n + 1] *= alpha[0];
        o[4 * n + 2] *= alpha[1], o[4 * n + 3] *= alpha[1];
      }
    }
  };
  // P into the A fragments. FP16: k-step ks covers accumulator chunks 2ks, 2ks + 1 (flash2_sm90.cu).
  // INT8, C layout → A layout (k32) as in int_flash.cu: a0/a1 take chunks 4ks, 4ks+1 (rows g, g+8), a2/a3
  // chunks 4ks+2, 4ks+3; the keys land in the order of Vᵀ's permutation (int_flash_host.h).
  auto pack_p = [&]() {
#pragma unroll
    for (int ks = 0; ks < kSteps; ++ks) {
      if constexpr (VHalf) {
        const float* r = p_real + 8 * ks;
        p[ks][0] = pack_half2(r[0], r[1]), p[ks][1] = pack_half2(r[2], r[3]);
        p[ks][2] = pack_half2(r[4], r[5]), p[ks][3] = pack_half2(r[6], r[7]);
      } else {
        const int* c = p_code + 16 * ks;  // chunk 4ks's first register
        p[ks][0] = pack_s8x4(c[0], c[1], c[4], c[5]);
        p[ks][1] = pack_s8x4(c[2], c[3], c[6], c[7]);
        p[ks][2] = pack_s8x4(c[8], c[9], c[12], c[13]);
        p[ks][3] = pack_s8x4(c[10], c[11], c[14], c[15]);
      }
    }
  };

  auto steps = KvSteps{[&] {
                         SwizzledCopier<D, T::kBr, T::kConsumers, D>(threadIdx.x)
                             .copy(sQ, a.q + (size_t(bh) * a.q_len + row0) * D, D, a.q_len - row0);
                       },
                       load_kv, issue_scores, issue_pv, softmax, pack_p, finish_tile,
                       [&] { pin_registers(si); },
                       [&] {
                         pin_registers(o);
                         if constexpr (!VHalf) pin_registers(acc);
                         pin_registers(p);
                       }};
  if constexpr (Producer) {  // FlashAttention-3 §3.1: the producer warpgroup copies, the consumers compute
    __shared__ uint64_t full[T::kStages], empty[T::kStages];
    const bool consumer = split_warpgroups<T::kStages, T::kConsumers>(
        tiles, T::kLoadedBytes,
        [&] {
          prefetch_tensor_map(&k_map);
          prefetch_tensor_map(&v_map);
          prefetch_tensor_map(&sk_map);
        },
        [&](int j, uint64_t* bar) {
          char* st = stage(j);
          tma_load_3d(st, &k_map, 0, j * kBc, bkv, bar);  // K rows j·B_c …, d bytes each
          if constexpr (VHalf) {  // V rows j·B_c …, one load per 64-channel column block
#pragma unroll
            for (int c = 0; c < D / 64; ++c)
              tma_load_3d(st + T::kKBytes + c * kBc * 128, &v_map, 64 * c, j * kBc, bkv, bar);
          } else {
            tma_load_3d(st + T::kKBytes, &v_map, j * kBc, 0, bkv, bar);  // Vᵀ: d rows, keys j·B_c …
          }
          tma_load_3d(st + T::kKBytes + T::kVBytes, &sk_map, j * kBc, 0, bkv, bar);  // s_K, zero past kv_pad
        },
        full, empty);
    if (!consumer) return;
    kv_ring<T::kStages, PingPong>(tiles, steps, full, empty, ProducerFills{});
  } else {
    kv_pipeline(tiles, steps);
  }

  // l. 16: O = (O/ℓ)·s_V; L = m + log ℓ − log R (natural units). Half-INT8: O/ℓ (× 1, exact), L = m + log ℓ.
  store_rows<D>(o, l, m, my_row0, threadIdx.x % 4, a.q_len, a.o + size_t(bh) * a.q_len * D,
                a.lse + size_t(bh) * a.q_len, VHalf ? 1.f : a.s_v[bkv], VHalf ? 0.f : logf(kR));
#endif
}

// The producer's tensor maps (tensor_map.h): K and Vᵀ as flash3_fp8's, or FP16 V; s_K per key.
cudaError_t tensor_maps(const IntFlashArgs& a, int d, int tile, CUtensorMap& k_map, CUtensorMap& v_map,
                        CUtensorMap& sk_map) {
  const int64_t heads = int64_t(a.batch) * a.kv_heads;
  cudaError_t e = k8_tensor_map(k_map, a.k, heads, a.kv_len, d, tile);
  if (e == cudaSuccess)
    e = a.v_fp16 ? fp16_rows_tensor_map(v_map, a.v16, heads, a.kv_len, d, tile)
                 : vt8_tensor_map(v_map, a.vt, heads, a.kv_pad, d, tile);
  return e == cudaSuccess ? key_scale_tensor_map(sk_map, a.s_k, heads, a.kv_pad, tile) : e;
}

template <int D, bool VHalf, bool Dump, bool Producer, bool PingPong, bool Across>
cudaError_t launch(const IntFlashArgs& a, cudaStream_t stream) {
  using T = IntHopperTile<D, VHalf, Producer>;
  auto* kernel = int_flash_sm90_kernel<D, VHalf, Dump, Producer, PingPong, Across>;
  CUtensorMap k_map{}, v_map{}, sk_map{};  // unread without the producer
  if constexpr (Producer)
    if (const cudaError_t e = tensor_maps(a, D, T::kBc, k_map, v_map, sk_map); e != cudaSuccess) return e;
  if (const cudaError_t e =
          cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(T::kSmemBytes));
      e != cudaSuccess)
    return e;
  const dim3 grid((a.q_len + T::kBr - 1) / T::kBr, a.batch * a.q_heads);
  kernel<<<grid, T::kThreads, T::kSmemBytes, stream>>>(a, k_map, v_map, sk_map);
  return cudaGetLastError();
}

// The loads and schedule `a` asks for (tma_producer, ping_pong: the head comment).
template <int D, bool VHalf, bool Dump, bool Across = false>
cudaError_t launch_loads(const IntFlashArgs& a, cudaStream_t stream) {
  if (!a.tma_producer) return launch<D, VHalf, Dump, false, false, Across>(a, stream);
  return a.ping_pong ? launch<D, VHalf, Dump, true, true, Across>(a, stream)
                     : launch<D, VHalf, Dump, true, false, Across>(a, stream);
}

// The score dump (tests) is compiled for the per-tile accumulation only: the scores do not depend on it.
template <int D>
cudaError_t launch_d(const IntFlashArgs& a, cudaStream_t stream) {
  if (a.scores) return a.v_fp16 ? launch_loads<D, true, true>(a, stream) : launch_loads<D, false, true>(a, stream);
  if (a.v_fp16) return launch_loads<D, true, false>(a, stream);
  return a.pv_across_tiles ? launch_loads<D, false, false, true>(a, stream) : launch_loads<D, false, false>(a, stream);
}

}  // namespace

bool int_flash_sm90_supports(int head_dim) { return head_dim == 64 || head_dim == 128; }

cudaError_t int_flash_sm90_forward(const IntFlashArgs& a, cudaStream_t stream) {
  if (!int_flash_sm90_supports(a.head_dim) || a.kv_pad % 16 != 0 || a.kv_pad < a.kv_len || (a.v_fp16 && a.v16 == nullptr) ||
      (a.pv_across_tiles && (a.v_fp16 || a.scores)))
    return cudaErrorInvalidValue;
  return a.head_dim == 64 ? launch_d<64>(a, stream) : launch_d<128>(a, stream);
}

}  // namespace attnlab::kernels
