// attnlab sim: the tile schedule of each variant's kernel — the loop nest it runs, as data.
//
// Forward (prefill), FlashAttention-2 style (notes §2.2, App. D): one CTA per (batch, query head, query
// row block of B_r rows); it loads Qᵢ (prologue), loops over the K/V tiles of B_c keys its rows can see
// (causal CTAs stop at the diagonal), and writes Oᵢ and its logsumexp (epilogue). Decode (q_len = 1):
// flash-decoding — the KV sequence of each (batch, KV head) is split over `splits` CTAs, each handling
// the group's query heads together, followed by a small combine pass over the partial results; a kernel
// that runs decode as its prefill at q_len 1 (our FP16 kernel) has a CTA per query head instead, computing a
// whole B_r-row block.
// Unfused naive attention is three passes over HBM (S = QKᵀ, P = softmax S, O = PV).
//
// What one iteration costs is a Work: bytes per tensor moved between HBM and the chip, and operations
// per execution unit. Every byte comes from the variant's storage declaration (core/storage.h): Q and its
// scales, K and V or the cache's codes, scales and zero points, O; its operand formats pick the tensor
// cores of the two products. Each variant's row in the format table (schedule.cpp) says the rest: where
// its exponential runs (SFU, or polynomial on the FMA units for SAS) and what conversions it pays.
#pragma once

#include "core/config.h"
#include "core/kernel_traits.h"
#include "core/problem.h"
#include "sim/gpu_spec.h"

#include <map>
#include <string>
#include <vector>

namespace attnlab::sim {

struct Work {
  std::map<std::string, double> bytes;  // tensor → bytes (read or written): q, k, v, o, lse, scales, s, p, kv_cache…
  std::map<Unit, double> ops;           // unit → operations (tensor/FMA: flops; SFU/INT32/CVT: instructions)
  Work& operator+=(const Work& w);
  Work scaled(double f) const;
  double total_bytes() const;
};

// The bytes of w that the launch writes (O, the logsumexp, a written cache or INT8 tiles, half the split
// partials and of unfused S and P — written, then read back); the rest are reads.
double written_bytes(const Work& w);

struct CtaClass {
  double count = 0;   // CTAs of this class
  int64_t tiles = 0;  // KV-tile iterations each runs
  double rows = 0;    // query rows each really has (a ragged last row block has fewer than B_r)
  double keys = 0;    // keys each really reads (the last tile may be short)
};

struct Schedule {
  std::string variant;
  std::string tiles_from;  // "kernel traits" or "variant parameters"
  int block_r = 0, block_c = 0, warps = 4, stages = 2, regs_per_thread = 255, splits = 1;
  bool warpgroup_mma = false;     // the kernel issues wgmma (sm_90a): the full tensor peak applies
  bool warp_chains = false;       // decode: each warp runs its own split (core/kernel_traits.h), a CTA `warps` of them
  bool pow2_ctas = false;         // the kernel runs a power of two of CTAs per SM (core/kernel_traits.h)
  bool balanced_chains = false;   // warp chains per pair from balanced_warp_chains, not decode_splits
  bool producer_loads = false;    // K/V copied by a producer warpgroup; the consumers issue none (kProducerLoads)
  bool persistent_ctas = false;   // one CTA per slot loops over the grid's CTAs in a fixed order (flash2's row_blocks =
                                  // persistent): the grid's work, placed statically (cost_model.cpp's tail)
  int persistent_heads = 0, persistent_band_heads = 1;  // their order's batch·heads and band (core/persistent_order.h)
  bool persistent_dynamic = false;  // each takes the next row block as it finishes one: the grid's placement
  std::vector<CtaClass> classes;  // the grid, grouped by loop length
  // Bytes follow the real rows and keys (a kernel predicates its loads); operations follow full tiles
  // (the tensor cores compute on whole fragments, padding included).
  Work per_row;   // bytes per query row: Q in, O and the logsumexp out, their scales
  Work per_key;   // bytes per key read: K, V, their scales (or the cache's codes, scales and zero points)
  Work per_tile;  // operations per KV-tile iteration (full B_r × B_c tile)
  Work per_cta;   // operations per CTA outside the loop (Q's scaling, O / ℓ)
  Work extra;                         // whole-grid work outside the CTAs' loops (combine pass, unfused passes)
  double smem_bytes = 0;              // on-chip footprint per CTA
  double kv_unique_bytes = 0;         // K/V (and their scales) of every KV head, each byte once
  double cache_bytes = 0;             // the KV cache the run leaves: its storage declaration's count
                                      // (core/storage.h), which the reference's kv_cache_bytes equals
  double kv_heads_total = 1;          // batch × KV heads
  double ctas_per_head = 1;           // CTAs that read one KV head's tiles (row blocks × group, or splits)
  bool readers_in_step = false;       // those CTAs run side by side over the same tiles (decode's per-query-head
                                      // CTAs, consecutive in the grid): their re-reads hit L2 at any head size
  int threads = 128;
  StallParts stall;                   // a warp's measured stall per instruction, by cause (cost_model.h step 2; 0: none)
  std::vector<std::string> explain;   // one line per modelling decision, for the report and the GUI
  // Launches that run after this one, each its own grid (a cache whose head classes differ in width runs
  // one launch per width where the narrower gains occupancy: the turbo decode kernel). Their times add.
  std::vector<Schedule> then;

  double ctas() const;
  double kv_read_bytes() const;  // K/V bytes (and their scales) all CTAs read
  Work total() const;  // every CTA's rows, keys, tiles and fixed work, plus extra
};

// Whose kernel the schedule describes. `ours`: attnlab's kernels as they run (core/kernel_traits.h, with their
// measured counts) — our FP16 decode, the prefill kernel at q_len 1, computes a B_r-row block per query head.
// `design`: another implementation of the variant's design (a measurement's `implementation`, e.g.
// FlashAttention-2 through PyTorch SDPA), whose decode is flash-decoding with the group's query heads packed
// into one CTA's rows and no measured counts of ours.
enum class Kernels { ours, design };

// The schedule of `v` on problem p for `gpu` (decode splits the KV sequence to fill its SMs). Throws
// InputError when the model has no schedule for the variant.
Schedule make_schedule(const Problem& p, const VariantRequest& v, const GpuSpec& gpu, Kernels kernels = Kernels::ours);

}  // namespace attnlab::sim
