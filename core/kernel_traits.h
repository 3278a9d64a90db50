// attnlab core: the tile shapes of the CUDA kernels, as one table that the kernels (kernels/) compile
// against and the cost model (sim/) reads, so the model predicts the kernel that actually runs.
//
// Plain constexpr data, usable from host and device code. A variant/head-dim pair without a row has no
// kernel; the cost model then uses the variant's own block_r/block_c parameters and says so.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string_view>

namespace attnlab {

struct KernelTraits {
  const char* variant;    // registry id
  int head_dim;           // d the kernel is compiled for
  int arch;               // lowest compute capability × 10 it runs on: 80 = mma.sync (sm_80 and later),
                          // 90 = warpgroup MMA (sm_90a, compute capability 9.0 only)
  int block_r, block_c;   // B_r query rows per CTA, B_c keys per KV tile
  int warps;              // warps per CTA; each warp (mma.sync) or warpgroup of 4 (wgmma) owns its share
                          // of the B_r query rows (FlashAttention-2's split: Q across warps, K/V shared)
  int stages;             // K/V tiles resident: 2 = double-buffered cp.async, 3 = one more in flight
  int regs_per_thread;    // from ptxas -v of the kernel (bounds CTAs per SM); 255 until measured
  int decode_splits_max;  // split-KV decode: at most this many CTAs share one (batch, KV head); 1 = the
                          // kernel does not split (decode then runs on the arch-80 row's kernel)
  bool decode_only = false;  // the kernel computes decode only (prefill has no kernel row)
  bool warp_chains = false;  // each warp of a CTA runs its own split of the keys (a chain), independent of the
                             // CTA's other warps (the turbo and kivi decode kernels)
  bool pow2_ctas = false;    // CTAs per SM a power of two: the launch asks for enough shared memory that a
                             // count in between does not fit (turbo decode: 4 or 2, never 3 — kSmemRequest)
  bool int8_prepass = false;  // prefill: a pre-pass quantizes K and V once into INT8 tiles in HBM (and writes
                              // the compressed cache), a second one Q into INT8 blocks; the attention reads
                              // the INT8 tiles (turbo prefill: kernels/turbo/turbo_cache_write.cu; PrefillIssue)
  bool balanced_chains = false;  // warp-chain decode: chains per pair from balanced_warp_chains (the busiest SM's
                                 // tiles), not decode_splits (fireq decode)
  int block_c_not_causal = 0;  // prefill with the producer's loads, not causal: B_c of FlashAttention-3's wider tile
                               // (core/producer_loads.h's prefill_block_c says when), its ring as many of them as fit
                               // beside Q (at most `stages`); 0: block_c everywhere
  // The wide tile's cost per key against block_c's, measured (kv_tile = auto weighs it against the wide tile's padding
  // of the last tile: core/producer_loads.h's wide_tile_pays).
  float wide_tile_key_cost = 1.f;
  // pow2_ctas's exception: where every pair of the cache is 2-bit and the query heads per KV head are at most this,
  // three CTAs per SM where three fit (turbo decode at d 128, GE 4: kCtasPerSm; GE 8's registers allow two). 0: none.
  int narrow_three_ctas_group = 0;
  // A warpgroup-MMA kernel's query rows per warpgroup (four warps): turbo's Alg. 1 query block.
  constexpr int warpgroup_rows() const { return block_r / (warps / 4); }
};

inline constexpr KernelTraits kKernelTraits[] = {
    //  variant      d   arch B_r  B_c  warps stages regs splits
    {"flash2",      64,  80,  128, 64,  4,    2,     218, 128},
    {"flash2",      128, 80,  128, 64,  4,    2,     255, 128},
    // flash2 wgmma (kernels/flash2/flash2_sm90.cu): two warpgroups of 64 query rows, three K/V tiles; v2 (kv_loads =
    // tma_producer, kProducerLoads) adds the producer warpgroup (384 threads: 168 registers at launch, the consumers
    // 240 by setmaxnreg), v1 (cp_async) 256 threads at 168 / 210. Shared memory holds either to one CTA per SM at d 128.
    // v3: not causal at d 128, FlashAttention-3's 176-key tile, two in the ring (kernels/PERF.md, flash2 prefill v3).
    {"flash2",      64,  90,  128, 128, 8,    3,     168, 1},
    // Its cost per key 0.987 of the 128-key tile's: v9 on an H100 under locked clocks, N 16k (B 4, H 16; no padding at
    // 128, 16 keys in the last 176-key tile): 20 281.1 k SM cycles for 94 tiles of 176 keys, 20 355.2 k for 128 of
    // 128 — (20 281.1 / (94 · 176)) / (20 355.2 / (128 · 128)) = 0.9867 (kernels/PERF.md, "v8's epilogue, v9 and v10").
    {"flash2",      128, 90,  128, 128, 8,    3,     210, 1, false, false, false, false, false, 176, 0.987f},
    // flash2 decode (kernels/flash2/flash2_decode.cu): B_r = the ≤ 8 query heads of one KV head (the MMA's N columns),
    // B_c = 32 tokens; one warp per CTA running one chain, 3 tiles in its ring (d 128: 51 KB, so 4 CTAs on an H100's
    // SM, 3 on an A100's, 1 on an RTX 4090's; d 64: 27 KB); chains from decode_splits over the warps the GPU holds.
    // Registers are the cp.async chain's; on sm_90a its TMA chain (v4: 48 / 24 KB unpadded + 1 KB alignment, 124 / 72
    // registers) fits the same 4 CTAs per SM, so the row holds for both.
    {"flash2",      64,  80,  8,   32,  1,    3,     72,  128, true, true},
    {"flash2",      128, 80,  8,   32,  1,    3,     96,  128, true, true},
    {"int_flash",   64,  80,  128, 64,  4,    2,     215, 1},
    {"int_flash",   128, 80,  128, 64,  4,    2,     255, 1},
    // int_flash wgmma (kernels/int8/int_flash_sm90.cu) v3: a TMA producer warpgroup fills a six-tile ring (half INT8 at
    // d 128 holds 4: its FP16 V makes a slot 49 KB); the consumers at setmaxnreg's 240 registers. Its loads =
    // cp_async (wgmma v2: three stages) reads no row of its own.
    {"int_flash",   64,  90,  128, 128, 8,    6,     240, 1},
    {"int_flash",   128, 90,  128, 128, 8,    6,     240, 1},
    // flash3_fp8 (kernels/fp8/flash3_fp8_sm90.cu): int_flash's wgmma tiling on FP8 operands; B_r = B_c = 128, the
    // reference's default scale blocks; a six-tile ring (kernels/common/kv_ring.cuh).
    {"flash3_fp8",  64,  90,  128, 128, 8,    6,     198, 1},
    {"flash3_fp8",  128, 90,  128, 128, 8,    6,     252, 1},
    // turbo decode (kernels/turbo/turbo_decode.cu): B_r = the ≤ 8 query heads of one KV head (MMA rows g; g + 8
    // carry the low half of q·s), B_c = one 64-token cache block; 4 warps per CTA, each its own chain
    // (core/variants/turbo_chains.h decides how many, not this table), 3 blocks in flight per warp. Registers:
    // the 2-bit kernel's 128 (its launch bounds ask for 4 CTAs per SM); the 4-bit one's 132 do not bind,
    // shared memory holds it to 2 CTAs. At d 128 a cache of 2-bit pairs at 3–4 query heads per KV head runs three CTAs
    // (v17: 156 registers, 57 KB each; narrow_three_ctas_group 4); at d 64 every launch already runs four.
    {"turbo",       64,  80,  8,   64,  4,    3,     128, 0, true, true, true},
    {"turbo",       128, 80,  8,   64,  4,    3,     128, 0, true, true, true, false, false, 0, 1.f, 4},
    // turbo prefill (kernels/turbo/turbo_prefill_sm90.cu): two warpgroups of 64 query rows (each one of Alg. 1's
    // query blocks), B_c = 64 keys (the paper's tile, and the pre-pass's cache block). kv_loads = tma_producer: a TMA
    // producer warpgroup fills an eight-tile ring (16 KB a tile at d 128), the consumers at setmaxnreg's 240
    // registers; cp_async (the kernel before it): three stages, 256 threads at 254 / 202 registers.
    {"turbo",       64,  90,  128, 64,  8,    8,     240, 1, false, false, false, true},
    {"turbo",       128, 90,  128, 64,  8,    8,     240, 1, false, false, false, true},
    // kivi decode (kernels/kivi/kivi_decode.cu): B_r = the ≤ 8 query heads (MMA N columns), B_c = 64 tokens;
    // 4 warps per CTA, one chain each, 2 tiles in flight per warp; chains from balanced_warp_chains (v5; decode_splits
    // over warps before: 11 chains at GQA 4:1 on an H100 with three CTAs per SM, 3 on 88 SMs). Registers:
    // v4's (the FP32 path out of line; ptxas -v, sm_90a): d 128 166 at 2 bits (three CTAs per SM; 4 bits: 224, its
    // 80 KB of rings hold it to two either way), d 64 128 (four).
    {"kivi",        64,  80,  8,   64,  4,    2,     128, 128, true, true, false, false, true},
    {"kivi",        128, 80,  8,   64,  4,    2,     166, 128, true, true, false, false, true},
    // fireq decode (kernels/fireq/fireq_decode.cu): B_r = the ≤ 8 query heads (MMA N columns), B_c = 64 tokens; 4 warps
    // per CTA, one chain each, 2 tiles in flight per warp, 3 CTAs per SM at d 128 (147 registers on sm_90);
    // chains from balanced_warp_chains. The mma.sync generation, on FP8 operands: it needs sm_89's e4m3 mma.sync
    // (the backend refuses older GPUs).
    {"fireq",       64,  80,  8,   64,  4,    2,     100, 128, true, true, false, false, true},
    {"fireq",       128, 80,  8,   64,  4,    2,     147, 128, true, true, false, false, true},
    // fireq prefill (kernels/fireq/fireq_prefill_sm90.cu): flash3_fp8's wgmma tiling on E4M3 K and V — App. D's, or the
    // INT4 cache's converted by LUT; B_r = B_c = 128 (the V scale block is the tile), a six-tile ring
    // (kernels/common/kv_ring.cuh; the INT4 mode at d 128 holds 4, beside its staging). Registers: the FP8 mode's.
    {"fireq",       64,  90,  128, 128, 8,    6,     215, 1},
    {"fireq",       128, 90,  128, 128, 8,    6,     255, 1},
};

// The kernels whose K/V tiles a producer warpgroup can copy (FlashAttention-3 §3.1's warp specialization: one
// thread of a third warpgroup issues each tile's TMA loads; the consumer warpgroups issue no copy and wait only on
// the slot's full mbarrier), and the variant parameter values that select it: every (param, value) of `when` must
// hold. Anywhere else the consumers copy with cp.async. The kernel backends (kernels/fp8/flash3_fp8_backend.cpp,
// kernels/fireq/fireq_backend.cpp) and the cost model (sim/schedule.cpp) both ask core/producer_loads.h, which reads
// this table: a kernel that gains a producer is one row here.
struct ProducerLoads {
  const char* variant;
  int arch;  // the kernel generation (KernelTraits::arch) that has the producer
  struct Holds {
    const char* param;
    const char* value;
  };
  Holds when[3];  // unused entries: {nullptr, nullptr}
};
inline constexpr ProducerLoads kProducerLoads[] = {
    // flash2 wgmma v2 (kernels/flash2/flash2_sm90.cu): FlashAttention-3's pipeline on FP16 K/V, three tiles in the ring.
    {"flash2", 90, {{"kv_loads", "tma_producer"}, {nullptr, nullptr}, {nullptr, nullptr}}},
    // flash3_fp8 v8 (kernels/fp8/flash3_fp8_sm90.cu), prefill and decode (its prefill kernel at q_len 1).
    {"flash3_fp8", 90, {{"kv_loads", "tma_producer"}, {nullptr, nullptr}, {nullptr, nullptr}}},
    // fireq prefill (kernels/fireq/fireq_prefill_sm90.cu): the FP8 mode, both loop orders (v6: the two-stage one; v8:
    // the three-stage one too, FireQ App. F Alg. 2's producer); the INT4 mode converts in the consumers.
    {"fireq", 90, {{"kv_loads", "tma_producer"}, {"prefill_kv", "fp8"}, {nullptr, nullptr}}},
    // turbo prefill (kernels/turbo/turbo_prefill_sm90.cu): int_flash v3's producer and ring on Alg. 1's 64-key tiles; the
    // turbo prefill rows measured before it (sim/measurements, 2026-11-26) record kv_loads = cp_async, what ran then.
    {"turbo", 90, {{"kv_loads", "tma_producer"}, {nullptr, nullptr}, {nullptr, nullptr}}},
    // int_flash wgmma v3 (kernels/int8/int_flash_sm90.cu). Without a measured issue row the producer's full overlap
    // put the model at 0.76–0.81 of v3's times (2026-11-28): its loop is bound by issue, not by its loads, which
    // kPrefillIssue's measured row (d 128) now says; at d 64, with no row, the loads' overlap alone.
    {"int_flash", 90, {{"kv_loads", "tma_producer"}, {nullptr, nullptr}, {nullptr, nullptr}}},
};

// A warp's stall per issued instruction, in cycles, by what it waits for (Nsight Compute's stall reasons of
// the kernel, per issued instruction): the fixed-latency pipes' results (FMA, integer, ALU: "wait"), the MIO
// pipes' (shared memory, SFU, conversions: "short scoreboard"), global memory ("long scoreboard"), barriers,
// and the rest (pipe and dispatch throttles, branches, instruction fetch). Their sum is the latency term's Z
// (sim/cost_model.h step 2); all 0: not measured.
struct StallParts {
  double fixed_latency = 0, mio = 0, global = 0, barrier = 0, other = 0;
  constexpr double total() const { return fixed_latency + mio + global + barrier + other; }
  constexpr StallParts scaled(double f) const { return {f * fixed_latency, f * mio, f * global, f * barrier, f * other}; }
  constexpr StallParts& operator+=(const StallParts& o) {
    fixed_latency += o.fixed_latency, mio += o.mio, global += o.global, barrier += o.barrier, other += o.other;
    return *this;
  }
};

// Warp instructions a decode kernel's warp issues per KV tile (one 64-token cache block), by head dim, query
// heads per KV head (the kernels' GE: the group rounded up to a power of two) and cache bits — the work the
// cost model's issue term counts for the warp-chain kernels, where it binds (the latency term,
// sim/cost_model.h). Measured, not derived: Nsight Compute's smsp__inst_executed.sum of the chains kernel
// on an H100 at 8192 and 16384 keys with the same chains, the difference over the tiles added
// (kernels/bench/ncu_decode_instructions.sh → kernels/bench/h100-decode-instructions-2026-11-26.csv; turbo
// decode v11, kivi decode v2 (its own file, below); llm_like data, whose 2-bit blocks have saturating channels) —
// except turbo's d 128 rows at G 1 and 4 (v21, on an H200) and kivi's d 128 2-bit rows (v4), one launch's count
// over its tiles at B 16, N 32k, the prologues included (below each). An sm_90a build; other GPUs run other code and
// take these as an estimate.
struct DecodeIssue {
  const char* variant;
  int head_dim, group, bits;
  double warp_instructions_per_tile;
  // The chains kernel's warp stall per instruction (Nsight Compute, the mean of two launches;
  // kernels/bench/ncu_profile.sh). turbo at d 128, G 1 and 4: at the benchmark's shape, B 16, 32 query heads,
  // N 32768 (v21 on an H200: sim/measurements/h200-ncu-decode-stalls-bench-v21-2026-12-07.csv). The others at B 4
  // (kivi d 128: h100-ncu-kernels-2026-11-26.csv; the rest h100-ncu-decode-stalls-2026-11-26.csv), whose chains are 4×
  // shorter: their prologues' stalls weigh more there (turbo 4-bit at G 4: 3.68 cycles at B 4, 2.49 at B 16;
  // at G 1: 3.51, 3.20), so those rows overstate a long run's stall. A row without one would take the spec's L̄.
  StallParts stall = {};
};
// kivi decode v4's warp stall at d 128 (the kivi rows of kDecodeIssue say where it comes from).
inline constexpr StallParts kKiviD128Stall = {1.07, 0.15, 0.07, 0, 1.08};
inline constexpr DecodeIssue kDecodeIssue[] = {
    // turbo decode at d 128: v21 (the ring filled by the copy engine, v20; 2-bit operands by one mask, v21; at G 4 a
    // 2-bit cache at three CTAs per SM, v17) measured on an H200 on 2026-12-07 at the benchmark's shape, B 16, N 32k,
    // G 1 (H 32/32) and G 4 (32/8), both widths (kernels/bench/ncu_profile.sh decode-stalls-bench:
    // sim/measurements/h200-ncu-decode-stalls-bench-v21-2026-12-07.csv, two launches each): per tile 866.4 / 875.3
    // instructions at G 1 (4 / 2 bits), 1 223.7 / 1 335.3 at G 4 — the binary's count, the same on any sm_90a GPU —
    // and the stalls of those launches. The stall is the H200's: the model takes one stall for every GPU, and the
    // H100's differs most where memory binds (v19 at G 1 on this H200: 2.97 / 3.62 cycles, 4 / 2 bits; v18 on an H100:
    // 3.33 / 3.59). G 2 and G 8 (not re-measured): the previous rows scaled by the measured rows' change v18 → v21
    // (G 2 by the mean of G 1's and G 4's, G 8 by G 4's: 4 bits × 0.932 / 0.931, 2 bits × 0.906 / 0.912), with v10's
    // stalls at B 4.
    {"turbo", 128, 1, 4, 866.4, {1.59, 0.32, 0.20, 0.01, 0.81}},  {"turbo", 128, 1, 2, 875.3, {1.73, 0.50, 0.27, 0.01, 1.47}},
    {"turbo", 128, 2, 4, 1147.1, {1.04, 0.44, 0.39, 0.04, 0.94}}, {"turbo", 128, 2, 2, 1160.7, {1.12, 0.44, 0.24, 0.04, 2.92}},
    {"turbo", 128, 4, 4, 1223.7, {1.03, 0.26, 0.20, 0.01, 0.74}}, {"turbo", 128, 4, 2, 1335.3, {1.12, 0.29, 0.15, 0.01, 0.93}},
    {"turbo", 128, 8, 4, 1469.2, {0.85, 0.23, 0.66, 0.03, 2.65}}, {"turbo", 128, 8, 2, 1658.2, {0.75, 0.20, 0.39, 0.02, 2.54}},
    {"turbo", 64, 1, 4, 655.3, {1.43, 0.82, 0.54, 0.04, 1.69}},   {"turbo", 64, 1, 2, 851.8, {1.60, 0.52, 0.17, 0.03, 1.14}},
    {"turbo", 64, 4, 4, 1061.8, {0.95, 0.49, 0.78, 0.06, 2.55}},  {"turbo", 64, 4, 2, 1496.9, {0.93, 0.39, 0.41, 0.04, 1.17}},
    // kivi decode at d 128, 2 bits: v4 (kernels/kivi/kivi_decode.cu: the FP32 path — ≈ 0.2% of llm_like's slots — a
    // called function, three CTAs per SM) measured on an H100 on 2026-12-06 at B 16, N 32k: G 1 (H 32/32) 364 733 903
    // warp instructions over 262 144 warp-tiles (kernels/bench/h100-kivi-decode-v4-mha-ncu-2026-12-06.txt), G 4
    // (32/8) 93 054 211 over 65 536 (h100-compressed-decode-gqa-v4-ncu-2026-12-06.txt), the prologues included; G 2
    // and G 8 by v2's measured steps (kernels/bench/h100-kivi-v2-decode-instructions-2026-12-05.csv: G 1 → 2 +4.9,
    // G 4 → 8 +6.8 — the query heads are the MMA's N columns, so the loop is nearly the same at every group). 4 bits:
    // v3's counts (G 1 measured, 2026-12-06, h100-kivi-decode-mha-ncu-2026-12-06.txt; the others by v2's steps) — v4's
    // 4-bit kernel (224 registers, two CTAs, as v3) was not profiled. The stall (kKiviD128Stall): v4's 2-bit kernel at
    // G 4, the SASS samples of that launch (19 445 samples, 3.97 cycles per issued instruction at 2.50 warps per
    // scheduler): "wait" 1.07, short scoreboard and MIO 0.15, long scoreboard 0.07, and other 1.08 (math-pipe throttle
    // 0.47, dispatch 0.40, no instruction 0.12, branch 0.09) — against v3's {1.05, 0.18, 0.03, 0, 0.78} at 1.88 warps:
    // the third CTA's warps wait on the same pipes and the same dispatch. The 4-bit rows take the 2-bit split (bound
    // by DRAM there). d 64: v2's counts and v1's stalls (not measured since).
    {"kivi", 128, 1, 4, 1451.7, kKiviD128Stall}, {"kivi", 128, 1, 2, 1391.3, kKiviD128Stall},
    {"kivi", 128, 2, 4, 1457.3, kKiviD128Stall}, {"kivi", 128, 2, 2, 1396.2, kKiviD128Stall},
    {"kivi", 128, 4, 4, 1464.9, kKiviD128Stall}, {"kivi", 128, 4, 2, 1419.9, kKiviD128Stall},
    {"kivi", 128, 8, 4, 1471.3, kKiviD128Stall}, {"kivi", 128, 8, 2, 1426.7, kKiviD128Stall},
    {"kivi", 64, 1, 4, 988.5, {0.76, 0.20, 0.05, 0, 0.84}},    {"kivi", 64, 1, 2, 951.7, {0.64, 0.17, 0.02, 0, 0.88}},
    {"kivi", 64, 4, 4, 994.6, {0.82, 0.23, 0.15, 0, 0.89}},    {"kivi", 64, 4, 2, 957.7, {0.69, 0.20, 0.07, 0, 0.91}},
    // fireq decode v11 (kernels/fireq/fireq_decode.cu, sm_90's FP16-MMA form) at the benchmark's shape (B 16, N 32768,
    // d 128; 3 CTAs per SM, 3 and 12 chains per pair; ncu_profile.sh fireq →
    // sim/measurements/h100-ncu-fireq-decode-v11-2026-11-28.csv): the chains kernel's warp instructions over its
    // tiles (the prologue, < 1% of 171 or 43 tiles per chain, included). The heads are the MMA's N columns, so
    // the loop is the same at every group (1 597 at G 1, 1 616 at G 4): G 4's row stands for 2 and 8. Stall
    // "other": math-pipe throttle 0.86 / 0.84, dispatch 0.15 / 0.14, branch and fetch 0.04 each, MIO throttle 0.01.
    {"fireq", 128, 1, 4, 1596.8, {0.93, 0.21, 0.03, 0, 1.10}}, {"fireq", 128, 2, 4, 1615.7, {0.93, 0.21, 0.10, 0, 1.07}},
    {"fireq", 128, 4, 4, 1615.7, {0.93, 0.21, 0.10, 0, 1.07}}, {"fireq", 128, 8, 4, 1615.7, {0.93, 0.21, 0.10, 0, 1.07}},
    // flash2's decode kernel (kernels/flash2/flash2_decode.cu) has no measured row yet: the model counts its work by
    // the format's formula and the spec's L̄. (The row of the prefill kernel at q_len 1, which decode ran on before,
    // is in sim/measurements/h100-ncu-decode-stalls-2026-11-26.csv.)
};

// The measured row for (variant, d, group, bits): the group rounded up to the kernels' power of two, and
// where that group was not measured (d 64 at 2 and 8) the nearest measured one (the returned row says which).
// nullptr where the variant, d or bits has no row.
constexpr const DecodeIssue* find_decode_issue(std::string_view variant, int head_dim, int group, int bits) {
  int ge = 1;
  while (ge < group) ge *= 2;
  const DecodeIssue* best = nullptr;
  int best_gap = 1 << 30;
  for (const auto& r : kDecodeIssue) {
    if (variant != r.variant || head_dim != r.head_dim || bits != r.bits) continue;
    const int gap = r.group > ge ? r.group - ge : ge - r.group;
    if (gap < best_gap) best = &r, best_gap = gap;
  }
  return best;
}

// The turbo prefill kernels' measured work (kernels/turbo/turbo_prefill_sm90.cu and the pre-pass of
// kernels/turbo/turbo_cache_write.cu, FP16 inputs): warp instructions per warp and KV tile of the attention — by the
// exponential it evaluates (sas_precision fp32 or fp16, or exact_exp) — and per CTA of the pre-pass (one
// 64-token block of one KV head, d threads) and of Q's blocks (64 rows of one head). Nsight Compute's
// smsp__inst_executed.sum on an H100 (2026-11-26, `kernels/bench/ncu_profile.sh OUT instructions` →
// kernels/bench/h100-turbo-prefill-instructions-2026-11-26.csv; B 4, H 16, N 8192, non-causal: 64 tiles per
// warp, the prologue and epilogue under 2%) over the warp-tiles or CTAs; and the attention's warp stall Z, the
// cycles a warp waits after each instruction (Nsight Compute's stall reasons per issued instruction, all but
// "selected" and "not selected": the scheduler's own) — what the cost model's latency term takes (sim/cost_model.h
// step 2). As kDecodeIssue, an sm_90a build's count. By the K/V loads too (the variant's kv_loads): the rows above
// were measured on the cp.async kernel; the producer kernel (v3, kernels/turbo/turbo_prefill_sm90.cu) has its own
// row where it was measured (H100, 2026-12-05, SAS FP32 at d 128: kernels/bench/h100-turbo-prefill-v3-ncu-2026-12-05.txt,
// 5.82·10⁹ warp instructions over 4 194 304 consumer warp-tiles, the producer's few included). Its stall is the Z
// that the repairman model (sim/cost_model.h step 2) needs for the issue rate Nsight Compute measured, 0.63 per cycle
// and scheduler at the kernel's two consumer warps per scheduler: Z = 1.82, split as the cp.async kernel's (its
// reasons were not collected). Elsewhere the producer kernel takes the cp.async kernel's row.
struct PrefillIssue {
  const char* variant;
  int head_dim;
  const char* exponential;  // "sas_fp32", "sas_fp16", "exp2"
  const char* loads;        // "cp_async", "tma_producer"
  double warp_instructions_per_tile;
  double prepass_warp_instructions_per_block, q_warp_instructions_per_block;
  StallParts stall;
  int prepass_regs = 128, q_regs = 29;  // registers per thread of the two pre-pass kernels (ptxas -v, sm_90a)
};
inline constexpr PrefillIssue kPrefillIssue[] = {
    {"turbo", 128, "sas_fp32", "cp_async", 1420.3, 44379.4, 6075.0, {0.48, 0.29, 0.05, 0.09, 0.38}},
    {"turbo", 128, "sas_fp16", "cp_async", 1421.4, 44379.4, 6075.0, {0.51, 0.29, 0.05, 0.06, 0.44}},
    {"turbo", 128, "exp2", "cp_async", 1058.8, 44379.4, 6075.0, {0.68, 0.37, 0.07, 0.14, 0.52}},
    {"turbo", 64, "sas_fp32", "cp_async", 1222.1, 22137.9, 3097.0, {0.55, 0.31, 0.06, 0.08, 0.34}},
    {"turbo", 64, "sas_fp16", "cp_async", 1223.4, 22137.9, 3097.0, {0.57, 0.33, 0.06, 0.06, 0.41}},
    {"turbo", 64, "exp2", "cp_async", 881.8, 22137.9, 3097.0, {0.76, 0.36, 0.09, 0.10, 0.45}},
    {"turbo", 128, "sas_fp32", "tma_producer", 1388.3, 44379.4, 6075.0, {0.68, 0.41, 0.07, 0.13, 0.54}},
    // exp2 with the producer: H200, 2026-12-05 (kernels/bench/h200-int8-prefill-ncu-2026-12-05.txt), 4.307·10⁹ warp
    // instructions over 4 194 304 consumer warp-tiles, issue 0.56 at two consumer warps: Z = 2.27, split as the
    // cp.async exp2 kernel's.
    {"turbo", 128, "exp2", "tma_producer", 1027.0, 44379.4, 6075.0, {0.87, 0.47, 0.09, 0.18, 0.66}},
    // int_flash wgmma v3, full INT8 (no pre-pass: its inputs are Alg. 1's INT8 tensors): H200, 2026-12-05,
    // kernels/bench/h200-int8-prefill-ncu-2026-12-05.txt — 2.100·10⁹ warp instructions over 2 097 152 consumer
    // warp-tiles (16 rows × 128 keys), issue 0.60 per cycle and scheduler at two consumer warps: Z = 2.0 exactly
    // (1 − P₀ = 0.6 at W = 2), all of it under `other` (the reasons were not collected).
    {"int_flash", 128, "exp2", "tma_producer", 1001.4, 0, 0, {0, 0, 0, 0, 2.0}},
};
// The row for (variant, d, exponential, loads); a producer kernel without its own row takes the cp.async kernel's.
constexpr const PrefillIssue* find_prefill_issue(std::string_view variant, int head_dim, std::string_view exponential,
                                                 std::string_view loads = "cp_async") {
  for (const auto& r : kPrefillIssue)
    if (variant == r.variant && head_dim == r.head_dim && exponential == r.exponential && loads == r.loads) return &r;
  return loads == "cp_async" ? nullptr : find_prefill_issue(variant, head_dim, exponential, "cp_async");
}

// Split-KV decode (flash-decoding): how many CTAs share one (batch, head)'s keys. FlashAttention-2's
// rule, which our decode kernel follows: with `blocks` CTAs before splitting and `slots` CTAs the GPU
// runs at once, no split when blocks already fill 80% of the slots; otherwise, of the splits s ≤
// min(max_splits, tiles) whose wave efficiency (blocks·s/slots over its ceiling) reaches 85% of the
// best one's, the smallest.
constexpr int decode_splits(long blocks, long slots, long tiles, int max_splits) {
  if (blocks >= 0.8 * double(slots)) return 1;
  const long limit = tiles < max_splits ? tiles : max_splits;
  auto efficiency = [&](long s) {
    const double waves = double(blocks * s) / double(slots);
    const double whole = waves > double(long(waves)) ? double(long(waves) + 1) : double(long(waves));
    return waves / whole;
  };
  double best = 0;
  for (long s = 1; s <= limit; ++s) best = efficiency(s) > best ? efficiency(s) : best;
  for (long s = 1; s <= limit; ++s)
    if (efficiency(s) >= 0.85 * best) return static_cast<int>(s);
  return 1;
}

// Chains per pair for a warp-chain decode kernel (one chain per warp, warps_per_cta to a CTA, ctas_per_sm CTAs
// on each of sm_count SMs at once) that keeps the SMs evenly loaded: every chain resident at once (the
// ⌈pairs·C / warps_per_cta⌉ CTAs at most ctas_per_sm to an SM: a second wave would pay each chain's prologue
// and partial result again), and among those counts the shortest chains, ⌈tiles / C⌉ tiles, with the fewest
// chains that reach it (each adds a partial result to merge). decode_splits' first-within-85%-of-the-best
// wave fill stops short of that: at GQA 4:1 on an H100 with 3 CTAs of 4 warps per SM (B 16, H 32/8, N 32k)
// it takes 11 chains of 47 tiles where 12 of 43 still fit (kernels/PERF.md, fireq decode v8). One chain when
// even that fills the GPU more than once.
constexpr int balanced_warp_chains(long pairs, long tiles, long sm_count, long ctas_per_sm, long warps_per_cta,
                                   int max_chains) {
  if (pairs < 1 || tiles < 1 || sm_count < 1 || ctas_per_sm < 1 || warps_per_cta < 1) return 1;
  auto up = [](long x, long y) { return (x + y - 1) / y; };
  const long limit = tiles < max_chains ? tiles : max_chains;
  long most = 0;  // the most chains whose CTAs all fit at once
  for (long c = 1; c <= limit && up(up(pairs * c, warps_per_cta), sm_count) <= ctas_per_sm; ++c) most = c;
  if (most == 0) return 1;
  long c = 1;
  while (up(tiles, c) > up(tiles, most)) ++c;
  return static_cast<int>(c);
}

// Which kernel generation runs a problem: the warpgroup-MMA one (arch 90) on a compute-capability-9.0 GPU
// when the problem needs no KV split and has at least one warpgroup's 64 query rows per head; the
// mma.sync one (arch 80) otherwise — decode included, where 64-row tiles would be mostly padding.
constexpr int kernel_arch(int gpu_arch, long q_len, int splits) {
  return gpu_arch == 90 && splits == 1 && q_len >= 64 ? 90 : 80;
}

// The row of (variant, d) for kernel generation `arch` (kernel_arch), falling back to the arch-80 row
// where the variant has no kernel of that generation. Decode-only rows answer only when `decode`, and then
// first: a variant with a decode kernel of its own (flash2) runs decode on it.
constexpr const KernelTraits* find_kernel_traits(std::string_view variant, int head_dim, int arch = 80,
                                                 bool decode = false) {
  if (decode)
    for (const auto& t : kKernelTraits)
      if (t.decode_only && variant == t.variant && head_dim == t.head_dim) return &t;
  const KernelTraits* fallback = nullptr;
  for (const auto& t : kKernelTraits) {
    if (variant != t.variant || head_dim != t.head_dim || (t.decode_only && !decode)) continue;
    if (t.arch == arch) return &t;
    if (t.arch == 80) fallback = &t;
  }
  return fallback;
}

// Variants whose numbers depend on the kernel's tile width: int_flash's codes P = ⌊127·e^{S − m}⌉ take
// m as the running max after each B_c-key tile, so a kernel computes the reference's function only at the
// reference's block_c.
constexpr bool tile_width_is_numeric(std::string_view variant) { return variant == "int_flash"; }

// The one rule, for the kernel backend and the cost model alike: the kernel generation (80 or 90) that
// runs `variant` at head dim d on a GPU of compute capability gpu_arch (× 10), or 0 when none computes the
// variant's function. `pinned` is the variant's `kernel` parameter (0 = auto, 80 = mma_sync, 90 = wgmma);
// `block_c` its parameter, which must equal the kernel's B_c for tile_width_is_numeric variants (auto then
// takes the generation whose B_c matches, wgmma first).
constexpr int kernel_generation(std::string_view variant, int head_dim, int gpu_arch, long q_len, bool split,
                                int pinned, int block_c) {
  const KernelTraits* group = find_kernel_traits(variant, head_dim, 90, split);
  const KernelTraits* sync = find_kernel_traits(variant, head_dim, 80, split);
  const bool group_runs = gpu_arch == 90 && group && group->arch == 90;
  if (!tile_width_is_numeric(variant)) {
    if (pinned == 80) return sync ? 80 : 0;
    if (pinned == 90) return group_runs ? 90 : 0;
    // A variant whose only kernel is the warpgroup one (flash3_fp8) runs it for every problem it runs: decode
    // too, as its prefill kernel at q_len 1 (a B_r-row block per query head, no split).
    if (kernel_arch(group_runs ? 90 : 80, q_len, split ? 2 : 1) == 90) return 90;
    return sync ? 80 : (group_runs ? 90 : 0);
  }
  if (pinned != 80 && group_runs && block_c == group->block_c) return 90;
  if (pinned != 90 && sync && block_c == sync->block_c) return 80;
  return 0;
}

// The shared memory one sm_90 CTA may ask for (227 KB: sim/specs' smem_per_cta_bytes for the H100 and H200).
inline constexpr size_t kSm90SmemPerCta = 227 * 1024;

// A warpgroup kernel's K/V ring: `wanted` slots (the traits' stages) where they fit beside `fixed_bytes` in
// kSm90SmemPerCta, else as many as do (fireq's INT4 mode and half-INT8 int_flash at d = 128 hold 4; flash2's 176-key
// tile two). The kernels size their rings by it and the cost model schedules by it.
constexpr int ring_slots(int wanted, size_t fixed_bytes, size_t slot_bytes) {
  return std::min<int>(wanted, int((kSm90SmemPerCta - fixed_bytes) / slot_bytes));
}
// flash2's wgmma kernel (kernels/flash2/flash2_sm90.cu): FP16 Q of B_r rows (+ 1 KB of barriers and alignment) and a
// ring of FP16 K and V tiles of block_c keys.
constexpr int flash2_ring_slots(const KernelTraits& t, int head_dim, int block_c) {
  return ring_slots(t.stages, size_t(t.block_r) * head_dim * 2 + 1024, size_t(2) * block_c * head_dim * 2);
}

}  // namespace attnlab
