// attnlab kernels: the fireq prefill kernel (fireq_prefill.h states the contract) on Hopper's FP8 warpgroup
// MMA, at d = 64 and 128 — flash3_fp8_sm90.cu's kernel (2 warpgroups × 64 query rows, B_c = 128, the ring of
// kv_ring.cuh, ping-pong) with the arithmetic of core/variants/fireq.cpp (its head comment's lines), for both
// prefill K/V formats:
//   Scores   FP8 mode (App. D): S = (Q̂·K̂ᵀ)_fp32 · f_ij, f_ij = fl(fl(β_K,j·β_i)·τ) — wgmma e4m3·e4m3 → f32
//            (m64n128k32), then the per-element factor (attend(): (k_col·β)·τ), masked. INT4 mode: S =
//            (Q̂·LUT(K)ᵀ)_fp32 · fl(β_i·τ), the factor per row alone (LUT(K) holds σ_K).
//   Softmax  online in FP32: m = max of the scaled scores, P̃ = e^{S − m}, α = e^{m_old − m}, ℓ = α·ℓ + rowsum P̃
//   P·V      P̂ = E4M3(P̃) (cvt.rn.satfinite, no scale), Oᵢ = α·Oᵢ + fl32(P̂·V̂ⱼ)·β_V,ⱼ (INT4 mode: V̂ = LUT(V),
//            β_V = 1)
//   Output   O = Oᵢ/ℓ → BF16, L = m + log ℓ
// softmax_precision = fp16 (Fp16, two-stage order): FireQ §3.2.2's softmax — the FP32 scores times their factor
// rounded to half2 (S₂), the maximum by HMNMX2, P̃ = ex2.approx.f16x2(S₂ − m₂) per half2, ℓ and α in FP32, P̂
// packed from the half2s (softmax16, pack_p16; kernels/fireq/softmax_fp16.cuh). ℓ: the tile's row sums are taken in
// half2 (≤ 5 FP16 roundings) and added to the FP32 ℓ — the one departure from the reference's arithmetic
// besides ex2.approx, bounded in the [gpu] test.
// fp8_k_scale = tile (KTile): β_K one per KV tile, fl(β_K,j·τ) from the host, read from HBM one softmax ahead and
// multiplied into the row factor (fl(β_i·log₂e)·that, two FMULs per thread and tile): the softmax is then
// flash3_fp8's, with no per-score multiply and no β_K in shared memory (Alg. 1 l. 12's S = mask(τS)).
// FP8 mode (per key): β_K arrives as fl(β_K·τ) (the host's product), staged per tile in shared memory beside K (512 bytes
// a slot, copied with the tile, in V̂ᵀ's key order), and each thread reads the 32 it needs (its columns 8n + 2t
// + {0, 1}) as 8 float4s in the softmax; β_V is read once per tile from HBM. The factor per element costs one
// FMUL more per score than flash3_fp8's per-tile factor, which it folds into the exponent's FFMA; in return the
// scores equal the reference's up to the accumulator (the [gpu] test's item 1), and the running max is taken
// on them. K/V loads (fireq_prefill.h's tma_producer; FP8 mode, either order): a producer warpgroup issues
// each tile's K̂, V̂ᵀ and (per key) β_K as TMA loads (flash3_fp8_sm90.cu's, tma_fill.cuh) and the consumers, at 240
// registers by setmaxnreg, issue none (kv_ring.cuh's ProducerFills); otherwise every consumer thread copies its
// share with cp.async.
// INT4 mode (§3.1.1 Step 1): the tiles come out of decode's cache (core/variants/fireq_layout.h) — each thread
// copies its share of a tile's codes and σ words into staging (Int4Staging) with cp.async and, two iterations
// later, converts exactly those bytes through the token's table (kernels/fireq/fireq_lut.cuh) into the slot's K̂ rows
// and V̂ᵀ rows (kv_ring.cuh's converting ring: 4 slots at d = 128, where shared memory also holds 3 staging
// slots and the 128 tables).
// P̂·V̂ⱼ accumulates in its own FP32 registers (fresh per tile, as the reference's), then is added to Oᵢ times
// β_V,ⱼ by one FFMA (the reference rounds the product and the sum apart: ≤ 1 ulp per tile). P̃ is computed in
// place in the score registers.
// Loop orders (fireq_prefill.h's three_stage, FP8 mode): false runs kv_ring.cuh (FA3's two-stage pipelining);
// true runs kv_ring3.cuh (FireQ Alg. 1's three stages), which keeps two score accumulators live. Per thread
// that is 2·64 (S_{j−1}, S_j) + d/2 (Oᵢ) + d/2 (P̂·V̂ⱼ) + 16 (P̂'s fragments) registers before any address or
// index: 208 at d = 64, 272 at d = 128 — over the 255 a thread can hold, so the three-stage order is compiled
// for d = 64 only (ptxas, CUDA 13, sm_90a: d = 128 three-stage 255 registers with 1700 bytes of spill stores).
// A producer warpgroup with setmaxnreg does not help: it moves registers between warpgroups, never past 255
// per thread. Registers now (ptxas -v): two-stage 215/219 (d = 64), 255 (d = 128; 8 bytes spilled with
// ping-pong); three-stage 251/255; INT4 189/190 (d = 64), 248/246 (d = 128); β_K per tile: two-stage 197/200
// (d = 64), 239/243 (d = 128), three-stage 237/243, none spilled. Three-stage with the producer (consumers at 240
// by setmaxnreg): β_K per key spills 8/40 bytes (stores/loads) with ping-pong, 48/160 without; per tile none.
// Per-thread offsets (the copiers', the conversion's) come from opaque_thread_index() inside each step: held in
// registers across the loop they spilled 80 bytes in the INT4 kernel at d = 128.
// The exponentials are ex2.approx on S·f·(β_i·log₂e) − m: a few ulp from the reference's FP32 exp.
// Versions (kernels/PERF.md, "fireq prefill"): v1 — the reference's factor fl(fl(β_K,j·β_i)·τ) per element (three
// FMULs per score); v2 — S·fl(β_K,j·τ) per element and β_i·log₂e in the exponent's FFMA (one FMUL): the same
// time; v3 — the INT4 mode; β_K in V̂ᵀ's key order read as float4s, and the opaque thread index (FP8 mode
// 5–8% faster at d = 128: Nsight Compute had put its gap to flash3_fp8 in shared-memory waits, short scoreboard
// 0.58 against 0.17 per issue); v4 — fl(β_K·τ) from the host (another 4–6%); v5 — the INT4 mode's V̂ᵀ
// stores off one base (≤ 1.6%, within the runs' spread); v6 — the FP8 mode's TMA producer (12–18% at
// d = 128; ptxas: the consumers at 240 without spills with ping-pong, 16 bytes without); v8 (this) — β_K per
// tile (flash3_fp8's speed at d = 128, where per key takes 19–24% longer), the FP16 softmax (11–20% slower:
// sm_90 runs ex2.approx.f16x2 as two MUFU.EX2.F16), and the producer in the three-stage order (even with the
// two-stage one at d = 64 with β_K per tile).
#include "kernels/fireq/fireq_prefill.h"
#include "kernels/common/kernel_path.h"

#include "core/kernel_traits.h"
#include "core/variants/fireq_layout.h"
#include "kernels/fireq/fireq_lut.cuh"
#include "kernels/common/kv_ring3.cuh"
#include "kernels/fireq/softmax_fp16.cuh"
#include "kernels/common/tensor_map.h"
#include "kernels/common/tile_softmax.cuh"
#include "kernels/common/tma_fill.cuh"
#include "kernels/common/wgmma.cuh"

#include <algorithm>

namespace attnlab::kernels {

namespace {

// The INT4 mode's staging of one tile (kv_ring.cuh's converting ring): what each thread copies with cp.async
// and later converts itself, so no thread reads another's copies. Per tile of 128 tokens (two of the cache's
// 64-token tiles, fireq_layout.h) a thread takes
//   K: kKChunks 16-byte chunks of code rows (4·d in all; chunk u = tid + 256·i: layout tile ⌊u/2d⌋, token
//      row ⌊(u mod 2d)/(d/32)⌋, chunk (u mod 2d) mod (d/32) of the row) and, per chunk, the aligned σ_K word
//      holding its token's scale;
//   V: one unit of 8 tokens × 8 channels (2·d units: threads < 2d) — parts 2w + h of lanes (g, t) and
//      (g, t + 2) of a 32-token chunk c (tokens 32c + 16h + 4t + i and 32c + 16h + 8 + 4t + i, i < 4; channels
//      g + 8·(8w + n), n < 8) — and the two σ_V words of those tokens.
// Thread-private places: code chunk i at (i·256 + tid)·16, V part x at 64·d + (x·2d + tid)·16, σ word i after
// the codes at (i·256 + tid)·4 — consecutive threads, consecutive addresses.
template <int D>
struct Int4Staging {
  static constexpr int kThreads = 256;
  static constexpr int kKChunks = D / 64;  // per thread
  static constexpr int kVUnits = 2 * D;    // threads with a V unit
  static constexpr int kSigmaWords = kKChunks + 2;
  static constexpr int kCodeBytes = 128 * D;  // K and V codes of 128 tokens
  static constexpr int kBytes = kCodeBytes + kSigmaWords * kThreads * 4;
  static constexpr int kSlots = 3;  // tiles j + 2 … j + 4 (kv_ring.cuh)
  static_assert(kKChunks * kThreads * 16 == 64 * D && kVUnits <= kThreads, "every chunk and unit has a thread");
};

template <int D, bool Int4, bool Producer = false, bool KTile = false>
struct FireqTile {
  static constexpr KernelTraits kTraits = *find_kernel_traits("fireq", D, 90);
  static constexpr int kBr = kTraits.block_r, kBc = kTraits.block_c;
  static constexpr int kConsumers = 32 * kTraits.warps;  // two warpgroups of 64 query rows
  static constexpr int kThreads = kConsumers + (Producer ? 128 : 0);  // + the FP8 mode's TMA producer
  static constexpr int kQBytes = kBr * D, kKBytes = kBc * D, kVBytes = D * kBc;  // E4M3: a byte per element
  static constexpr int kStageBytes = kKBytes + kVBytes;
  static constexpr bool kBetaKPerKey = !Int4 && !KTile;  // β_K staged per key beside each slot
  static constexpr int kBetaBytes = kBetaKPerKey ? kBc * 4 : 0;  // β_K of one tile, FP32
  // Per ring slot besides the tile: β_K per key (FP8 mode, fp8_k_scale = token). Besides the ring: Q, β of the
  // query rows, alignment, and in the INT4 mode the staging slots and the 128 tables (2 KB).
  static constexpr size_t kSlotBytes = size_t(kStageBytes) + kBetaBytes;
  static constexpr size_t kFixedBytes = size_t(kQBytes) + size_t(kBr) * 4 + 1024 +
                                        (Int4 ? size_t(Int4Staging<D>::kSlots) * Int4Staging<D>::kBytes + kFireqScales * 16 : 0);
  // The ring: the traits' 6 slots where they fit; the INT4 mode at d = 128 holds 4 (a converting ring needs 4).
  static constexpr int kStages = ring_slots(kTraits.stages, kFixedBytes, kSlotBytes);
  static constexpr size_t kSmemBytes = kFixedBytes + size_t(kStages) * kSlotBytes;
  static_assert(kTraits.arch == 90 && !kTraits.decode_only, "the prefill row of the traits table");
  static_assert(find_kernel_traits("fireq", D, 80, true)->decode_only, "decode keeps the decode kernel's row");
  static_assert(kBr == kFireqPrefillBlock && kBc == kFireqPrefillBlock, "the V scale block is the tile");
  static_assert(kTraits.warps == 8 && kConsumers == Int4Staging<D>::kThreads, "two warpgroups of 64 query rows");
  static_assert(!(Producer && Int4), "the INT4 mode's consumers convert their own copies");
  static_assert(!(KTile && Int4), "K's scale per tile is the FP8 mode's (the INT4 cache's σ_K is per token)");
  static_assert(kTraits.stages == 6 && kStages >= (Int4 ? 4 : 6), "kv_ring.cuh's ring");
  static_assert(kBetaBytes / 16 <= kConsumers, "one 16-byte copy of β_K per thread at most");
  static_assert(kBc == 2 * fireq_layout::kTile, "a tile is two of the cache's tiles");
};

template <int D, bool PingPong, bool ThreeStage, bool Int4, bool Producer, bool KTile, bool Fp16>
__global__ void __launch_bounds__(FireqTile<D, Int4, Producer, KTile>::kThreads, 1)
    fireq_prefill_kernel(FireqPrefillArgs a, const __grid_constant__ CUtensorMap k_map,
                         const __grid_constant__ CUtensorMap vt_map, const __grid_constant__ CUtensorMap beta_map) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using T = FireqTile<D, Int4, Producer, KTile>;
  using S4 = Int4Staging<D>;
  constexpr int kBc = T::kBc, kSteps = kBc / 32;  // k-steps of P̂·V̂: 32 keys each
  constexpr float kLog2e = 1.4426950408889634f;
  extern __shared__ char smem_raw[];
  char* smem = smem_raw + ((1024u - (smem_addr(smem_raw) & 1023u)) & 1023u);
  char* sQ = smem;
  auto stage = [&](int j) { return smem + T::kQBytes + (j % T::kStages) * T::kStageBytes; };  // K̂, V̂ᵀ
  char* after_ring = smem + T::kQBytes + T::kStages * T::kStageBytes;
  float* sBetaK = reinterpret_cast<float*>(after_ring);  // FP8 mode, β_K per key: (kStages, B_c); else empty
  auto beta_k_of = [&](int j) { return sBetaK + (j % T::kStages) * kBc; };
  auto staging_of = [&](int j) { return after_ring + (j % S4::kSlots) * S4::kBytes; };  // INT4 mode
  uint4* lut = reinterpret_cast<uint4*>(after_ring + S4::kSlots * S4::kBytes);           // INT4 mode: 128 tables
  float* sBetaQ = Int4 ? reinterpret_cast<float*>(lut + kFireqScales) : sBetaK + T::kStages * (T::kBetaBytes / 4);  // (B_r)

  const int lane = threadIdx.x % 32, warp = (threadIdx.x / 32) % 4, group = threadIdx.x / 128;
  const int t = lane % 4;
  const int bh = blockIdx.y, b = bh / a.q_heads, h = bh % a.q_heads;
  const int kvh = h / (a.q_heads / a.kv_heads), bkv = b * a.kv_heads + kvh;  // notes §3.1
  const int row0 = blockIdx.x * T::kBr;
  const int last_row = min(row0 + T::kBr, a.q_len) - 1;
  const int tiles = (visible_keys(last_row, a.q_len, a.kv_len, a.causal) + kBc - 1) / kBc;

  // FP8 mode: K̂ and V̂ᵀ copied into the slot, β_K beside it.
  const uint8_t* k = Int4 ? nullptr : a.k + size_t(bkv) * a.kv_len * D;
  const uint8_t* vt = Int4 ? nullptr : a.vt + size_t(bkv) * D * a.kv_pad;
  const float* beta_k = Int4 ? nullptr : a.beta_k_tau + size_t(bkv) * a.kv_pad;  // fl(β_K·τ)
  const float* beta_v = Int4 ? nullptr : a.beta_v + size_t(bkv) * ((a.kv_len + kBc - 1) / kBc);
  const float* beta_k_tile = KTile ? a.beta_k_tile_tau + size_t(bkv) * ((a.kv_len + kBc - 1) / kBc) : nullptr;
  auto load_fp8 = [&](int j) {
    // The copiers' offsets from an opaque thread index, per tile (v_unit below says why): 16 bytes of spills
    // fewer at d = 128.
    const int tid = opaque_thread_index();
    const SwizzledCopier<D, kBc, T::kConsumers, D> k_copier(tid);  // d-byte rows: a d-byte swizzle
    const SwizzledCopier<kBc, D, T::kConsumers> v_copier(tid);     // V̂ᵀ: d rows of 128 keys
    const int col0 = j * kBc;
    if (col0 + kBc <= a.kv_len) {  // an interior tile (kv_pad ≥ kv_len): no bounds
      k_copier.copy_full(stage(j), k + size_t(col0) * D, D);
      v_copier.copy_full(stage(j) + T::kKBytes, vt + col0, a.kv_pad);
    } else {
      k_copier.copy(stage(j), k + size_t(col0) * D, D, a.kv_len - col0);
      v_copier.copy(stage(j) + T::kKBytes, vt + col0, a.kv_pad, D, (a.kv_pad - col0) / 16);  // keys are columns
    }
    if (T::kBetaKPerKey && threadIdx.x < T::kBetaBytes / 16) {  // β_K: 4 keys per copy, zero past kv_pad (masked keys)
      const int key = col0 + 4 * int(threadIdx.x);
      cp_async_16(beta_k_of(j) + 4 * threadIdx.x, key < a.kv_pad ? beta_k + key : beta_k, key < a.kv_pad);
    }
  };

  // INT4 mode (§3.1.1 Step 1): the cache's bytes of tile j — its 64-token cache tiles 2j and 2j + 1, which
  // exist while < layout_tiles (a missing one is zero-filled: codes 0, σ 0, every entry 0) — into staging
  // (Int4Staging's places), then converted by the thread that copied them.
  constexpr int kTileBytes = int(fireq_layout::tile_bytes(D));
  const int layout_tiles = int(fireq_layout::tiles_for(a.kv_len));
  const uint8_t* pair = a.cache + size_t(bkv) * layout_tiles * kTileBytes;
  // Where this thread's V unit lies (Int4Staging): chunk c, half h, word w, lanes (g, t) and (g, t + 2) of the cache
  // tile. The conversion's offsets are loop-invariant; computed from an opaque thread index inside each step
  // (a few integer instructions a tile), ptxas cannot hoist them into ~30 registers held across the softmax,
  // where the d = 128 kernel has none to spare (it spilled 80 bytes).
  struct VUnit {
    int tid, g, t, w, h, c;
  };
  auto v_unit = [&] {
    const int tid = opaque_thread_index();
    const int lane16 = tid % 16, rest = tid / 16 % (D / 16);  // D units per cache tile: 16 per (c, h, w)
    return VUnit{tid, lane16 / 2, lane16 % 2, rest % (D / 64), rest / (D / 64) % 2, rest / (D / 32)};
  };
  auto load_int4 = [&](int j) {
    const VUnit vu = v_unit();
    const int tid = vu.tid;
    char* st = staging_of(j);
#pragma unroll
    for (int i = 0; i < S4::kKChunks; ++i) {
      const int u = tid + 256 * i, half = u / (2 * D), row = u % (2 * D) / (D / 32), chunk = u % (D / 32);
      const int lt = 2 * j + half;
      const bool ok = lt < layout_tiles;
      const uint8_t* tile = pair + size_t(lt) * kTileBytes;
      cp_async_16(st + (i * 256 + tid) * 16, ok ? tile + row * (D / 2) + chunk * 16 : pair, ok);
      cp_async_4(st + S4::kCodeBytes + (i * 256 + tid) * 4, ok ? tile + fireq_layout::sigma_k_offset(D) + (row & ~3) : pair, ok);
    }
    if (tid < S4::kVUnits) {
      const int lt = 2 * j + tid / D;
      const bool ok = lt < layout_tiles;
      const uint8_t* tile = pair + size_t(lt) * kTileBytes;
      const uint8_t* part = tile + fireq_layout::v_offset(D) + vu.c * 16 * D + (32 * (2 * vu.w + vu.h) + 4 * vu.g + vu.t) * 16;
      const uint8_t* sigma = tile + fireq_layout::sigma_v_offset(D) + 32 * vu.c + 16 * vu.h + 4 * vu.t;
#pragma unroll
      for (int x = 0; x < 2; ++x) {  // lanes (g, t) and (g, t + 2): tokens 4t + i and 8 + 4t + i of the 16
        cp_async_16(st + 64 * D + (x * 2 * D + tid) * 16, ok ? part + 32 * x : pair, ok);
        cp_async_4(st + S4::kCodeBytes + ((S4::kKChunks + x) * 256 + tid) * 4, ok ? sigma + 8 * x : pair, ok);
      }
    }
  };
  // Tile j's staged codes → E4M3 operands in its slot: K̂ rows (token-major, the d-byte swizzle), V̂ᵀ rows
  // (channel-major, keys permuted per 16 as vt_permutation.h's: positions 8t … 8t + 7 of a 16-key group hold
  // keys 4t, 4t + 1, 8 + 4t, 9 + 4t, 4t + 2, 4t + 3, 10 + 4t, 11 + 4t — a thread's two token quads, interleaved
  // by halves).
  auto convert_int4 = [&](int j) {
    const VUnit vu = v_unit();
    const int tid = vu.tid;
    const char* st = staging_of(j);
    char* sk = stage(j);
    char* sv = stage(j) + T::kKBytes;
#pragma unroll
    for (int i = 0; i < S4::kKChunks; ++i) {
      const int u = tid + 256 * i, row = u / (2 * D) * 64 + u % (2 * D) / (D / 32), chunk = u % (D / 32);
      const uint4 x = *reinterpret_cast<const uint4*>(st + (i * 256 + tid) * 16);
      const uint32_t sig = *reinterpret_cast<const uint32_t*>(st + S4::kCodeBytes + (i * 256 + tid) * 4);
      const uint4 table = lut[(sig >> (8 * (row & 3))) & (kFireqScales - 1)];
      const uint32_t words[4] = {x.x, x.y, x.z, x.w};
#pragma unroll
      for (int w = 0; w < 4; ++w) {  // fireq_layout.h: word (slice st_, k-step jj) → channels 32jj + 4st_ (+ 16)
        const int wi = 4 * chunk + w, slice = wi / (D / 32), jj = wi % (D / 32);
        uint32_t lo, hi;
        lut_convert(words[w], table, lo, hi);
        *reinterpret_cast<uint32_t*>(sk + sw_offset<D>(row, 2 * jj) + 4 * slice) = lo;
        *reinterpret_cast<uint32_t*>(sk + sw_offset<D>(row, 2 * jj + 1) + 4 * slice) = hi;
      }
    }
    if (tid < S4::kVUnits) {
      uint32_t q[2][8];  // [quad][n]: channel g + 8·(8w + n), the quad's four tokens (bytes 0–3)
#pragma unroll
      for (int x = 0; x < 2; ++x) {
        const uint4 part = *reinterpret_cast<const uint4*>(st + 64 * D + (x * 2 * D + tid) * 16);
        const uint32_t sig = *reinterpret_cast<const uint32_t*>(st + S4::kCodeBytes + ((S4::kKChunks + x) * 256 + tid) * 4);
        const uint32_t words[4] = {part.x, part.y, part.z, part.w};  // token i of the quad: 8 channels
        uint32_t lo[4], hi[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) lut_convert(words[i], lut[(sig >> (8 * i)) & (kFireqScales - 1)], lo[i], hi[i]);
        transpose4(lo);
        transpose4(hi);
#pragma unroll
        for (int n = 0; n < 4; ++n) q[x][n] = lo[n], q[x][4 + n] = hi[n];
      }
      const int group16 = 4 * (tid / D) + 2 * vu.c + vu.h;  // the 16-key group within the tile's 128 keys
      // Rows g + 8·(8w + n) share row mod 8 = g, so sw128_offset's swizzle is the same for all n: one base, and
      // each row 8·128·n bytes past it (an immediate).
      char* v_row = sv + sw128_offset(vu.g + 64 * vu.w, group16) + 8 * vu.t;
#pragma unroll
      for (int n = 0; n < 8; ++n)
        *reinterpret_cast<uint2*>(v_row + 1024 * n) =
            make_uint2(prmt(q[0][n], q[1][n], 0x5410u), prmt(q[0][n], q[1][n], 0x7632u));
    }
  };
  auto load_kv = [&](int j) {
    if constexpr (Int4) load_int4(j);
    else load_fp8(j);
  };

  const int my_row0 = row0 + group * 64 + warp * 16 + lane / 4;  // rows my_row0 + 8i (wgmma.cuh's layout)
  const int all_see = visible_keys(row0, a.q_len, a.kv_len, a.causal);
  // β·log₂e of the block's query rows in shared memory (1 past q_len: finite scores; those rows are never stored), read by the
  // softmax of every tile: two registers fewer than holding them, which the d = 128 kernel needs.
  // The INT4 mode takes the reference's row factor fl(β·τ) (its S = (Q̂·LUT(K)ᵀ)·(β·τ)), times log₂e.
  if (threadIdx.x < T::kBr) {
    const float beta = row0 + int(threadIdx.x) < a.q_len ? a.beta_q[size_t(bh) * a.q_len + row0 + threadIdx.x] : 1.f;
    sBetaQ[threadIdx.x] = (Int4 ? __fmul_rn(beta, a.scale) : beta) * kLog2e;
  }
  if constexpr (Int4)
    if (threadIdx.x < kFireqScales) lut[threadIdx.x] = build_lut(threadIdx.x);  // fireq_lut.cuh
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
  __half2 ph[kBc / 4];    // Fp16: P̃ in half2 between the softmax and the packing, [2n + i] = row i's columns 8n + 2t + {0, 1}
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};  // m in log₂ units
  float bv_pending = 0.f, bv_next = 0.f;  // β_V of the tile in flight and of the next one
  // fp8_k_scale = tile: fl(β_K,j·τ) of the tile the next softmax takes, loaded one softmax ahead (a load at the
  // softmax's start would wait on L2 before the row maxima: the v7 lesson).
  float kt_next = KTile ? beta_k_tile[0] : 0.f;

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
  // S·f per score with K's per-key factor g = fl(β_K·τ) of the score's column, from shared memory in V̂ᵀ's key
  // order (the float4 at 16m + 4t holds columns 16m + 2t + {0, 1, 8, 9}, this thread's columns of n-steps 2m and
  // 2m + 1): f = g, or with row factors c (c[i] for rows g + 8i) f = fl(g·c[i]). Both softmaxes' (FP8 mode, β_K
  // per key); c is a constant nullptr or not at every call, so the test folds away.
  auto scale_per_key = [&](int j, float (&s)[kBc / 2], const float* c) {
    const float* bk = beta_k_of(j);
#pragma unroll
    for (int m2 = 0; m2 < kBc / 16; ++m2) {
      const float4 k4 = *reinterpret_cast<const float4*>(bk + 16 * m2 + 4 * t);
      const float g[4] = {k4.x, k4.y, k4.z, k4.w};
#pragma unroll
      for (int e = 0; e < 8; ++e) {
        const float key = g[2 * (e / 4) + e % 2];
        s[8 * m2 + e] = __fmul_rn(s[8 * m2 + e], c ? __fmul_rn(key, c[(e % 4) / 2]) : key);
      }
    }
  };
  // The rows' factors c of tile j: β_i·log₂e (sBetaQ; the INT4 mode's fl(β_i·τ)·log₂e), times fl(β_K,j·τ) with β_K
  // per tile — whose next value is loaded here, a softmax ahead.
  auto row_factors = [&](int j, float (&c)[2]) {
    c[0] = sBetaQ[my_row0 - row0], c[1] = sBetaQ[my_row0 - row0 + 8];
    if constexpr (KTile) {  // fl(fl(β_i·log₂e)·fl(β_K,j·τ)): the tile's K scale joins the row factor
      c[0] = __fmul_rn(c[0], kt_next), c[1] = __fmul_rn(c[1], kt_next);
      if (j + 1 < tiles) kt_next = beta_k_tile[j + 1];
    }
  };
  // β_V,ⱼ (FP8 mode) for the tile's P̂·V̂ⱼ; LUT(V) holds σ_V, so the INT4 mode's tile term is P̂·LUT(V) itself.
  auto take_v_scale = [&](int j) {
    if constexpr (Int4) bv_next = 1.f;
    else bv_next = beta_v[j];
  };
  auto softmax = [&](int j, float (&s)[kBc / 2], float (&alpha)[2]) {
    const int col0 = j * kBc;
    // S·(β_K,j·τ) per key; the INT4 mode's scale is the row's alone (LUT(K) holds σ_K), the tile mode's per tile.
    if constexpr (T::kBetaKPerKey) scale_per_key(j, s, nullptr);
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
    float c[2];
    row_factors(j, c);
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
    take_v_scale(j);
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
  // §3.2.2's FP16 softmax (softmax_precision = fp16; core/fireq/softmax_fp16.h is the contract, its lines): the
  // FP32 scores times the reference's factor — fl(g_c·c_r) per key (g_c = fl(β_K·τ) from shared memory), else c_r
  // (the INT4 mode's fl(fl(β·τ)·log₂e); β_K per tile: fl(fl(β·log₂e)·fl(β_K,j·τ))) — rounded to half2: S₂. Masked
  // S₂ = −∞; m₂ = max (exact in FP16; α = 2^{m₂_old − m₂} in FP32); P̃ = ex2(fp16(S₂ − m₂)) in half2; the tile's
  // row sums in half2, then into the FP32 ℓ. P̃ waits in ph (32 registers, where the FP32 path holds 64) for
  // pack_p16.
  auto softmax16 = [&](int j, float (&s)[kBc / 2], float (&alpha)[2]) {
    const int col0 = j * kBc;
    float c[2];
    row_factors(j, c);
    if constexpr (T::kBetaKPerKey) {  // x = fl(S·fl(g_c·c_r))
      scale_per_key(j, s, c);
    } else {  // x = fl(S·c_r)
#pragma unroll
      for (int n = 0; n < kBc / 8; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) s[4 * n + e] = __fmul_rn(s[4 * n + e], c[e / 2]);
    }
    if (col0 + kBc > all_see) mask_invisible<kBc>(s, col0, my_row0, t, a.q_len, a.kv_len, a.causal);
    const __half2 minus_inf = __float2half2_rn(-INFINITY);
    __half2 mh[2][2] = {{minus_inf, minus_inf}, {minus_inf, minus_inf}};  // two chains per row
#pragma unroll
    for (int n = 0; n < kBc / 8; ++n)
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        ph[2 * n + i] = __floats2half2_rn(s[4 * n + 2 * i], s[4 * n + 2 * i + 1]);  // S₂
        mh[i][n % 2] = __hmax2(mh[i][n % 2], ph[2 * n + i]);
      }
    float mx[2];
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const __half2 h = __hmax2(mh[i][0], mh[i][1]);
      mx[i] = fmaxf(__low2float(h), __high2float(h));
    }
    float shift[2];
    update_running_max_from(mx, 1.f, m, l, alpha, shift);  // m₂ exact: the maxima are FP16 values
    const __half2 sh[2] = {__float2half2_rn(shift[0]), __float2half2_rn(shift[1])};
    // The tile's row sums in half2 (four chains of four per row, then a two-level tree: ≤ 5 FP16 roundings of
    // non-negative addends, ≤ 5·2⁻¹¹ of the sum — the [gpu] test's allowance), added to the FP32 ℓ: 46
    // instructions a thread where unpacking every P̃ to FP32 took 128 (the reference sums in FP32).
    const __half2 zero = __float2half2_rn(0.f);
    __half2 l4[2][4] = {{zero, zero, zero, zero}, {zero, zero, zero, zero}};
#pragma unroll
    for (int n = 0; n < kBc / 8; ++n)
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        ph[2 * n + i] = half2_ex2(__hsub2_rn(ph[2 * n + i], sh[i]));  // P̃ = 2^{fp16(S₂ − m₂)}
        l4[i][n % 4] = __hadd2_rn(l4[i][n % 4], ph[2 * n + i]);
      }
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const __half2 h = __hadd2_rn(__hadd2_rn(l4[i][0], l4[i][1]), __hadd2_rn(l4[i][2], l4[i][3]));
      l[i] += __low2float(h) + __high2float(h);
    }
    take_v_scale(j);
  };
  // P̂ = E4M3(P̃) from the half2s, into pack_p's fragments (cvt.rn.satfinite.e4m3x2.f16x2: FP16 → E4M3 once).
  auto pack_p16 = [&] {
#pragma unroll
    for (int ks = 0; ks < kSteps; ++ks) {
      const __half2* h = ph + 8 * ks;  // n-steps 4ks … 4ks + 3, both rows
      p[ks][0] = pack_e4m3x4_half2(h[0], h[2]);
      p[ks][1] = pack_e4m3x4_half2(h[1], h[3]);
      p[ks][2] = pack_e4m3x4_half2(h[4], h[6]);
      p[ks][3] = pack_e4m3x4_half2(h[5], h[7]);
    }
    bv_pending = bv_next;
  };
  auto load_q = [&] {
    SwizzledCopier<D, T::kBr, T::kConsumers, D>(threadIdx.x).copy(sQ, a.q + (size_t(bh) * a.q_len + row0) * D, D,
                                                                   a.q_len - row0);
  };
  auto pin_pv = [&] {
    pin_registers(o);
    pin_registers(acc);
    pin_registers(p);
  };

  __shared__ uint64_t full[T::kStages], empty[T::kStages];
  // FP8 mode with the TMA producer (flash3_fp8_sm90.cu's; FireQ App. F Alg. 2 l. 4–12): K̂, V̂ᵀ and β_K (per key)
  // per tile, for either loop order. True to the consumers; the producer's threads return.
  auto producer_split = [&] {
    return split_warpgroups<T::kStages, T::kConsumers>(
        tiles, T::kStageBytes + T::kBetaBytes,
        [&] {
          prefetch_tensor_map(&k_map);
          prefetch_tensor_map(&vt_map);
          if constexpr (T::kBetaKPerKey) prefetch_tensor_map(&beta_map);
        },
        [&](int j, uint64_t* bar) {
          tma_load_3d(stage(j), &k_map, 0, j * kBc, bkv, bar);                 // K̂ rows j·B_c …
          tma_load_3d(stage(j) + T::kKBytes, &vt_map, j * kBc, 0, bkv, bar);  // V̂ᵀ: d rows, keys j·B_c …
          if constexpr (T::kBetaKPerKey) tma_load_3d(beta_k_of(j), &beta_map, j * kBc, 0, bkv, bar);  // fl(β_K·τ), 0 past kv_pad
        },
        full, empty);
  };
  static_assert(!(ThreeStage && Int4), "the INT4 mode runs the two-stage ring");
  static_assert(!(ThreeStage && Fp16), "the FP16 softmax runs the two-stage ring");
  if constexpr (ThreeStage) {
    auto steps = KvSteps{load_q, load_kv, issue_scores, issue_pv, softmax, pack_p, finish_tile, [] {}, pin_pv};
    if constexpr (Producer) {
      if (!producer_split()) return;
      kv_ring_three_stage<T::kStages, PingPong, kBc / 2>(tiles, steps, full, empty, ProducerFills{});
    } else {
      kv_ring_three_stage<T::kStages, PingPong, kBc / 2>(tiles, steps, full, empty);
    }
  } else {
    float sf[kBc / 2];  // S (then P̃): m64n128 FP32 accumulator
    auto steps = KvSteps{load_q,
                         load_kv,
                         [&](int j) { issue_scores(j, sf); },
                         issue_pv,
                         [&](int j, float (&alpha)[2]) {
                           if constexpr (Fp16) softmax16(j, sf, alpha);
                           else softmax(j, sf, alpha);
                         },
                         [&] {
                           if constexpr (Fp16) pack_p16();
                           else pack_p(sf);
                         },
                         finish_tile,
                         [&] { pin_registers(sf); },
                         pin_pv};
    if constexpr (Producer) {
      if (!producer_split()) return;
      kv_ring<T::kStages, PingPong>(tiles, steps, full, empty, ProducerFills{});
    } else if constexpr (Int4) {
      kv_ring<T::kStages, PingPong>(tiles, steps, full, empty, convert_int4);
    } else {
      kv_ring<T::kStages, PingPong>(tiles, steps, full, empty);
    }
  }

  store_rows<D>(o, l, m, my_row0, t, a.q_len, a.o + size_t(bh) * a.q_len * D, a.lse + size_t(bh) * a.q_len, 1.f, 0.f);
#endif
}

// The producer's tensor maps: K̂ and V̂ᵀ as flash3_fp8's, fl(β_K·τ) per key (k_tile false) in tiles of 128 keys,
// zero past kv_pad (as the cp.async copy's) — tensor_map.h.
cudaError_t tensor_maps(const FireqPrefillArgs& a, int d, bool k_tile, CUtensorMap& k_map, CUtensorMap& vt_map,
                        CUtensorMap& beta_map) {
  const int64_t heads = int64_t(a.batch) * a.kv_heads;
  cudaError_t e = k8_tensor_map(k_map, a.k, heads, a.kv_len, d, kFireqPrefillBlock);
  if (e == cudaSuccess) e = vt8_tensor_map(vt_map, a.vt, heads, a.kv_pad, d, kFireqPrefillBlock);
  if (e != cudaSuccess || k_tile) return e;
  return key_scale_tensor_map(beta_map, a.beta_k_tau, heads, a.kv_pad, kFireqPrefillBlock);
}

template <int D, bool PingPong, bool ThreeStage, bool Int4, bool Producer = false, bool KTile = false, bool Fp16 = false>
cudaError_t launch(const FireqPrefillArgs& a, cudaStream_t stream) {
  using T = FireqTile<D, Int4, Producer, KTile>;
  auto* kernel = fireq_prefill_kernel<D, PingPong, ThreeStage, Int4, Producer, KTile, Fp16>;
  CUtensorMap k_map{}, vt_map{}, beta_map{};  // unread without the producer (beta_map: without β_K per key)
  if constexpr (Producer)
    if (const cudaError_t e = tensor_maps(a, D, KTile, k_map, vt_map, beta_map); e != cudaSuccess) return e;
  if (const cudaError_t e =
          cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(T::kSmemBytes));
      e != cudaSuccess)
    return e;
  const dim3 grid((a.q_len + T::kBr - 1) / T::kBr, a.batch * a.q_heads);
  kernel<<<grid, T::kThreads, T::kSmemBytes, stream>>>(a, k_map, vt_map, beta_map);
  return cudaGetLastError();
}

// The FP8 mode's kernels for one K scale (KTile: per tile, else per key) and softmax (Fp16: §3.2.2's, two-stage
// order only).
template <int D, bool KTile, bool Fp16>
cudaError_t launch_fp8(const FireqPrefillArgs& a, cudaStream_t stream) {
  if constexpr (D == 64 && !Fp16) {
    if (a.three_stage) {
      if (a.tma_producer)
        return a.ping_pong ? launch<D, true, true, false, true, KTile>(a, stream)
                           : launch<D, false, true, false, true, KTile>(a, stream);
      return a.ping_pong ? launch<D, true, true, false, false, KTile>(a, stream)
                         : launch<D, false, true, false, false, KTile>(a, stream);
    }
  }
  if (a.tma_producer)
    return a.ping_pong ? launch<D, true, false, false, true, KTile, Fp16>(a, stream)
                       : launch<D, false, false, false, true, KTile, Fp16>(a, stream);
  return a.ping_pong ? launch<D, true, false, false, false, KTile, Fp16>(a, stream)
                     : launch<D, false, false, false, false, KTile, Fp16>(a, stream);
}

template <int D, bool Fp16>
cudaError_t launch_softmax(const FireqPrefillArgs& a, cudaStream_t stream) {
  if (a.int4_kv)
    return a.ping_pong ? launch<D, true, false, true, false, false, Fp16>(a, stream)
                       : launch<D, false, false, true, false, false, Fp16>(a, stream);
  return a.k_tile ? launch_fp8<D, true, Fp16>(a, stream) : launch_fp8<D, false, Fp16>(a, stream);
}

template <int D>
cudaError_t launch_d(const FireqPrefillArgs& a, cudaStream_t stream) {
  return a.fp16_softmax ? launch_softmax<D, true>(a, stream) : launch_softmax<D, false>(a, stream);
}

}  // namespace

bool fireq_prefill_supports(int head_dim, bool three_stage, bool int4_kv, bool fp16_softmax) {
  if (head_dim != 64 && head_dim != 128) return false;
  return !three_stage || (head_dim == 64 && !int4_kv && !fp16_softmax);
}

cudaError_t fireq_prefill_forward(const FireqPrefillArgs& a, cudaStream_t stream) {
  if (!fireq_prefill_supports(a.head_dim, a.three_stage, a.int4_kv, a.fp16_softmax) || a.q_len < 1 || a.kv_len < 1 || a.batch < 1 ||
      a.kv_heads < 1 || a.q_heads % a.kv_heads != 0)
    return cudaErrorInvalidValue;
  if (a.int4_kv ? a.cache == nullptr : (a.kv_pad % 16 != 0 || a.kv_pad < a.kv_len)) return cudaErrorInvalidValue;
  if (!a.int4_kv && (a.k_tile ? a.beta_k_tile_tau == nullptr : a.beta_k_tau == nullptr)) return cudaErrorInvalidValue;
  if (!warpgroup_mma_available()) return cudaErrorNotSupported;
  return a.head_dim == 64 ? launch_d<64>(a, stream) : launch_d<128>(a, stream);
}

}  // namespace attnlab::kernels
