// attnlab core — the K and V one KV head of `fireq` hands its attention loop (fireq.cpp, whose head comment
// is the variant's specification): the smoothing factors (§3.2.1 RPN + CRS), then either the INT4 cache
// turned into E4M3 operands (Eq. 1, §3.1.1 Step 1's LUT, or the exact ablation), or, in a prefill with
// prefill_kv = fp8, App. D's FP8 K̃ and V with BF16 scales by Eq. 2's rule (β_K per token, β_V per KV tile);
// and the counts the probes show.
#pragma once

#include "core/fireq/rope_smoothing.h"
#include "core/fireq/token_int4.h"
#include "core/params.h"
#include "core/problem.h"
#include "core/tensor.h"

#include <Eigen/Core>

#include <cstdint>
#include <string>
#include <vector>

namespace attnlab::variants::fireq_detail {

constexpr double kF8 = 1.0, kBF16 = 2.0, kF32 = 4.0;  // bytes per element
constexpr int64_t kPad = 16;                           // S columns padded to a multiple of 16 floats

enum class Smoothing { rpn_crs, crs, rpn, none };

struct Settings {
  int64_t block_r, block_c;
  Smoothing smoothing;
  fireq::SmoothingParams sp;
  fireq::ScaleFormat format;
  bool lut;
  bool fp8_kv;         // K̃ and V in FP8 with BF16 scales, β_K per token (or tile) and β_V per KV tile: prefill
                       // with prefill_kv = fp8 (App. D)
  bool k_tile;         // fp8_kv with fp8_k_scale = tile: one β_K per KV tile of block_c tokens, as β_V
  bool fp16_softmax;   // prefill with softmax_precision = fp16: S, m and P̃ in FP16 (§3.2.2; softmax_fp16.h)
  double code_bytes;   // per K or V element as this run reads it: ½ (packed INT4) or 1 (E4M3)
  double sigma_bytes;  // per token scale of the INT4 cache (which every run leaves): σ in E4M3 (1) or FP32 (4)
  double scale_bytes;  // per token scale as this run reads it: σ of K and V, or β_K in BF16 (2) under fp8_kv
                       // (β_V is per tile there, and β_K with k_tile: kv_tile_bytes)

  Settings(const ParamValues& v, Phase phase)
      : block_r(v.integer("block_r")),
        block_c(v.integer("block_c")),
        smoothing([&] {
          const std::string& s = v.choice("smoothing");
          return s == "rpn_crs" ? Smoothing::rpn_crs : s == "crs" ? Smoothing::crs : s == "rpn" ? Smoothing::rpn
                                                                                                  : Smoothing::none;
        }()),
        sp{static_cast<int>(v.integer("top_k")), v.real("alpha"), v.real("beta")},
        format(v.choice("scale_format") == "fp32" ? fireq::ScaleFormat::fp32 : fireq::ScaleFormat::fp8_e4m3),
        lut(v.choice("int4_to_fp8") == "lut"),
        fp8_kv(phase == Phase::prefill && v.choice("prefill_kv") == "fp8"),  // decode reads the INT4 cache
        k_tile(fp8_kv && v.choice("fp8_k_scale") == "tile"),
        fp16_softmax(phase == Phase::prefill && v.choice("softmax_precision") == "fp16"),  // decode: FP32
        code_bytes(fp8_kv ? kF8 : 0.5),
        sigma_bytes(format == fireq::ScaleFormat::fp32 ? kF32 : kF8),
        scale_bytes(fp8_kv ? kBF16 : sigma_bytes) {}

  // K's scale applied to S per key column (its operand unscaled): FP8 K̂, or INT4 codes without the LUT.
  bool k_scale_per_column() const { return fp8_kv || !lut; }

  // K's β_K per KV tile (k_tile) rather than per token: one scale for every column of a tile of S.
  int64_t k_scale_block() const { return k_tile ? block_c : 1; }

  // Bytes of one KV tile of `cols` keys of d channels as this run reads it: K and V codes, K's scale per
  // token (or, with k_tile, one BF16 β_K for the tile), V's per token (σ) or, under fp8_kv, one BF16 β_V for
  // the tile.
  double kv_tile_bytes(int64_t cols, int64_t d) const {
    const double k_scales = k_tile ? kBF16 : double(cols) * scale_bytes;
    const double v_scales = fp8_kv ? kBF16 : double(cols) * scale_bytes;
    return 2.0 * double(cols * d) * code_bytes + k_scales + v_scales;
  }
};

// One KV head's cache as the attention reads it, and what it records for the probes.
struct KvHead {
  std::vector<float> s;            // (d) smoothing factor per channel: k ← k/s, q ← q·s
  std::vector<int64_t> outliers;   // the CRS pairs (empty for rpn / none)
  std::vector<float> s_k;          // (N) per-token scales σ_K (E4M3 or FP32 values), or β_K (BF16) under fp8_kv
                                   // — (⌈N / B_c⌉) per KV tile with k_tile
  std::vector<float> s_v;          // (N) per-token σ_V; under fp8_kv (⌈N / B_c⌉) β_V,j (BF16) per KV tile j,
                                   // which attend() applies to tile j's P̂·V̂
  RowMatrix<float> k, v;           // (N + kPad, d) FP8 operands (LUT entries, exact, or FP8; head comment)
  Eigen::VectorXf k_col;           // (N + kPad) k_scale_per_column: σ_K or β_K per key column (0 in the padding)
  std::vector<float> ks_min, ks_max;  // (d) channel ranges of the smoothed K
  int64_t clamped_k = 0, clamped_v = 0, lut_k = 0, lut_v = 0;     // INT4 clamps (FP8 saturations under
                                                                  // fp8_kv); LUT entries out of E4M3
  int64_t under_k = 0, under_v = 0, sat_k = 0, sat_v = 0;         // token scales underflowed / saturated
                                                                  // (under_v counts V tiles under fp8_kv)
  int64_t sub_k = 0, sub_v = 0;                                   // token scales below the normal range
};

// k and v are one KV head's (n, d) post-RoPE keys and values, as given (FP32).
KvHead prepare_kv(const float* k, const float* v, int64_t n, int64_t d, const Settings& st);

}  // namespace attnlab::variants::fireq_detail
