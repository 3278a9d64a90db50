// attnlab core: each variant's working memory (working_memory.h). Sizes are doubles: no product of
// problem sizes can overflow here, and the runner compares the sum against a limit in bytes.
#include "core/variants/working_memory.h"

#include <algorithm>

namespace attnlab::variants {

namespace {

constexpr double kI8 = 1, kI16 = 2, kF32 = 4, kF64 = 8;  // bytes per element
constexpr double kPad = 16;                             // fireq pads K/V operands by 16 rows

// The problem's sizes as doubles, and the worker threads busy on one loop over `items` heads.
struct Sizes {
  double B, Hq, Hkv, Nq, Nkv, d;
  int threads;

  Sizes(const Problem& p, int t)
      : B(double(p.batch)), Hq(double(p.q_heads)), Hkv(double(p.kv_heads)), Nq(double(p.q_len)),
        Nkv(double(p.kv_len)), d(double(p.head_dim)), threads(t) {}

  double q() const { return B * Hq * Nq * d; }    // elements of Q and of O
  double kv() const { return B * Hkv * Nkv * d; }  // elements of K (= of V)
  double q_rows() const { return B * Hq * Nq; }
  double kv_rows() const { return B * Hkv * Nkv; }
  double q_busy() const { return std::min(double(threads), B * Hq); }   // loops over query heads
  double kv_busy() const { return std::min(double(threads), B * Hkv); }  // loops over KV heads
};

// O (FP32), the logsumexp tensor (FP32) and its probe copy (FP64): every tiled variant returns these.
double output_and_lse(const Sizes& s) { return kF32 * s.q() + (kF32 + kF64) * s.q_rows(); }

// FlashAttention-2's loop on one query head: its FP16-rounded copies of Q, K and V (held as FP32), the
// S and P tiles and the accumulator of one row block (flash2.cpp).
double flash2_per_thread(const Sizes& s, double Br, double Bc) {
  return kF32 * s.d * (s.Nq + 2 * s.Nkv) + kF32 * (Br * Bc + 2 * Br * s.d);
}

}  // namespace

// naive.cpp: O, and per thread the full (N_q, N_kv) score matrix S (P in place) with the Q·Kᵀ temporary
// Eigen evaluates before scaling it, and the S·V product it evaluates into a temporary before it is
// stored into O's head.
double naive_working_memory(const Problem& p, const ParamValues&, int threads) {
  const Sizes s(p, threads);
  return kF32 * s.q() + s.q_busy() * kF32 * (2 * s.Nq * s.Nkv + s.Nq * s.d);
}

// flash2.cpp: O and L, and per thread the FP16 copies of one head's Q, K, V with the tiles.
double flash2_working_memory(const Problem& p, const ParamValues& params, int threads) {
  const Sizes s(p, threads);
  return output_and_lse(s) +
         s.q_busy() * flash2_per_thread(s, double(params.integer("block_r")), double(params.integer("block_c")));
}

// flash3_fp8.cpp: the E4M3 K and V of every KV head (held as FP32), O and L, and per thread the E4M3
// copy of one query head's Q; per-block scales and probes are a few values per block.
double flash3_fp8_working_memory(const Problem& p, const ParamValues& params, int threads) {
  const Sizes s(p, threads);
  const double blocks = s.kv_rows() / double(params.integer("block_c")) + s.B * s.Hkv;
  return 2 * kF32 * s.kv() + output_and_lse(s) + s.q_busy() * kF32 * s.Nq * s.d + 2 * (kF32 + kF64) * blocks;
}

// int_flash.cpp: the INT8 codes of K and V of every KV head (held as FP32) with S_K per token, O and L;
// then either the quantizer's INT16 codes of one KV head per thread (while the codes are made) or, per
// thread, one query head's INT16 codes and their FP32 copy. Probes: S_Q and S_K per token in FP64.
double int_flash_working_memory(const Problem& p, const ParamValues&, int threads) {
  const Sizes s(p, threads);
  const double kv_side = 2 * kF32 * s.kv() + kF32 * s.kv_rows();
  const double make_codes = s.kv_busy() * 2 * kI16 * s.Nkv * s.d;
  const double attend = s.q_busy() * (kI16 + kF32) * s.Nq * s.d;
  const double probes = (kF32 + kF64) * s.q_rows() + kF64 * s.kv_rows();
  return kv_side + output_and_lse(s) + std::max(make_codes, attend) + probes;
}

// turbo.cpp and turbo_cache.cpp: the INT8 tiles of K and V of every KV head (held as FP32), O and L; then
// per thread either one KV head's quantizer codes (INT16) and, with decode_steps > 0, the decode buffers'
// flushed blocks (INT8 values and codes, K and V) and a tile matrix grown to kv_len (its old rows alive
// during the resize), or one query head's INT8 Q (FP32) with its INT16 codes. s_P per (row block, tile)
// per query head, kept as FP32 and as a probe.
double turbo_working_memory(const Problem& p, const ParamValues& params, int threads) {
  const Sizes s(p, threads);
  const double Br = double(params.integer("block_r")), Bc = double(params.integer("block_c"));
  const double steps = p.phase == Phase::decode ? double(params.integer("decode_steps")) : 0.0;
  const double kv_side = 2 * kF32 * s.kv();
  const double grow = steps > 0 ? kF32 * s.Nkv * s.d + 2 * 2 * kI8 * steps * s.d : 0.0;
  const double make_tiles = s.kv_busy() * (2 * kI16 * s.Nkv * s.d + grow);
  const double attend = s.q_busy() * (kF32 + kI16) * s.Nq * s.d;
  const double tiles = (s.Nq / Br + 1) * (s.Nkv / Bc + 1 + steps);
  const double s_p = s.B * s.Hq * tiles * (kF32 + kF64);
  return kv_side + output_and_lse(s) + std::max(make_tiles, attend) + s_p;
}

// kivi.cpp and quant/kivi.cpp: the dequantized cache K̂, V̂ and its copy of Q (the inputs flash2 is then
// called on), the KIVI caches of every KV head (INT16 codes, per-group FP32 scale, zero, min and max,
// the FP32 residual tokens), then per thread either the FP16 copies of one head's K and V being
// quantized, or flash2 on the dequantized cache. Probes: the group scales in FP64.
double kivi_working_memory(const Problem& p, const ParamValues& params, int threads) {
  const Sizes s(p, threads);
  const double g = double(params.integer("group"));
  const double residual = std::min(s.Nkv, double(params.integer("residual")) + g);
  const double groups = (s.Nkv / g + 1) * s.d + s.Nkv * (s.d / g + 1);  // keys + values, per KV head
  const double caches = s.B * s.Hkv * (2 * kI16 * s.Nkv * s.d + 4 * kF32 * groups + 2 * kF32 * residual * s.d);
  const double inputs = kF32 * s.q() + 2 * kF32 * s.kv();
  const double quantize = s.kv_busy() * 2 * kF32 * s.Nkv * s.d;
  const double attend = output_and_lse(s) + s.q_busy() * flash2_per_thread(s, double(params.integer("block_r")),
                                                                           double(params.integer("block_c")));
  return inputs + caches + std::max(quantize, attend) + kF64 * s.B * s.Hkv * groups;
}

// fireq.cpp: the FP8 operand rows of K and V of every KV head (N + 16 rows each, FP32) with σ per token
// (and σ_K per column under int4_to_fp8 = exact), O and L; then per thread either one KV head's smoothed
// K and its INT4 codes of K and V, or one query head's smoothed Q (FP32) and its FP8 copy (FP64). Probes:
// β per query token, σ per K and V token, in FP64 (β also kept as FP32).
double fireq_working_memory(const Problem& p, const ParamValues&, int threads) {
  const Sizes s(p, threads);
  const double padded_rows = s.B * s.Hkv * (s.Nkv + kPad);
  const double kv_side = 2 * kF32 * padded_rows * s.d + kF32 * padded_rows + 2 * kF32 * s.kv_rows();
  const double prepare_kv = s.kv_busy() * (kF32 + 2 * kI8) * s.Nkv * s.d;
  const double prepare_q = s.q_busy() * (kF32 + kF64) * s.Nq * s.d;
  const double probes = (kF32 + kF64) * s.q_rows() + 2 * kF64 * s.kv_rows();
  return kv_side + output_and_lse(s) + std::max(prepare_kv, prepare_q) + probes;
}

}  // namespace attnlab::variants
