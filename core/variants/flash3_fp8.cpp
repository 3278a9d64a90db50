// attnlab core — reference of `flash3_fp8`: the FP8 forward pass of FlashAttention-3 (Shah et al.,
// "FlashAttention-3: Fast and Accurate Attention with Asynchrony and Low-precision", §3.3 block
// quantization), in emulation. The paper is not among this project's sources, so this head comment is
// the project's specification of the variant:
//
//   Inputs   Q, K, V in FP8 E4M3 with FP32 per-block scales, quantized before the kernel:
//            Q per block of B_r rows × d, K and V per block of B_c rows × d (one block = one tile of
//            the loops below), per (batch, head);
//            s = max|block| / 448 (E4M3 max) by the generic quantizer's scale rule
//            (quant::scale_for_span: one FP32 division; an all-zero block, or one whose quotient is not
//            a normal FP32 number, gets s = 1), and x₈ = round_fp8(x / s) — a true FP32 division, then
//            E4M3 round-to-nearest-even with saturation (formats::round_fp8, cvt.rn.satfinite).
//   Loop     outer over row blocks Qᵢ (B_r rows), inner over KV tiles j (B_c keys); causal tiles above
//            the diagonal skipped (bottom-right aligned, core/problem.h); GQA through kv_head_of.
//   Scores   Sᵢⱼ = (Qᵢ₈·Kⱼ₈ᵀ accumulated in FP32)·f with f = (s_Qᵢ·s_Kⱼ)·softmax_scale: one FP32 scalar
//            per tile, computed first (the descale factors and the softmax scale are scalars of the
//            tile, which a kernel folds into one multiplier), then one FP32 product per score.
//   Softmax  online softmax of core/online_softmax.h with exact FP32 exp (ExpF32): m, ℓ, the rescale
//            factor e^{m_old − m_new} in FP32; ℓ sums the FP32 P̃ (as FlashAttention-2/3 do).
//   P·V      P̃ ∈ [0, 1] converted to E4M3 directly, without a scale (FA3's FP8 path feeds the softmax
//            output to the second WGMMA as E4M3); values below 2⁻¹⁰ flush to 0 and those below 2⁻⁶ are
//            E4M3 subnormals. p_format = fp16 rounds P̃ to FP16 instead (isolates P's rounding).
//            Oᵢ ← e^{m_old − m_new}·Oᵢ + (P̃₈·Vⱼ₈)·s_Vⱼ: the tile product accumulated in FP32 into a fresh
//            accumulator, times the tile's V scale, then added (one FP32 product and one addition per
//            element).
//   Output   Oᵢ = Oᵢ / ℓᵢ in FP32, stored in FP16; L = m + log ℓ in FP32.
//
// Emulation: products of two E4M3 values are exact in FP32 (4-bit significands), and the GEMMs
// accumulate in FP32 with Eigen's summation order, like wgmma's FP32 accumulator but not bit-exact with
// it (core/variants/README.md).
//
// Choices, fixed here:
//   - Tiles: B_r = 128, B_c = 128 by default. FA3's tuned tile table (hopper/tile_size.h) uses B_r = 128
//     for FP8 at d ≤ 128 with B_c = 224 (160 under paged KV); 128 × 128 is the tile FA3 picks for FP16 at
//     d = 128 under causal masking, a power of two that divides the usual sequence lengths, so the
//     per-block scales align with 128-token pages. B_c = 224 can be set to reproduce the tuned tile (the
//     scale blocks follow B_c). Both range over 16…256, which holds every tile dimension of that table.
//   - The scales are FP32 and per (batch, head, block); FA3's released kernel takes per-tensor or
//     per-head descale factors — per-block is the §3.3 scheme this variant studies.
//   - Saturation: round_fp8 saturates |x/s| > 464 to ±448 (fp8.h); with absmax scales |x/s| ≤ 448 up to
//     two FP32 roundings, so it cannot happen here — the count (`clamped`) is kept for other scales.
//     Nonzero values that round to 0 are counted in `underflow` (for P: visible weights P̃ ≤ 2⁻¹⁰).
//   - Phases: prefill and decode (decode is the same loop with one query row).
// Probes: scales.q [B, H_q, ⌈q_len/B_r⌉], scales.k and scales.v [B, H_kv, ⌈kv_len/B_c⌉], channels.{k,v}.
// {min,max}, clamped and underflow (labels q, k, v, p), hbm_bytes, kv_tiles_loaded, kv_cache.bytes,
// trace.*, lse.
#include "core/variants/shared_probes.h"
#include "core/variants/variants.h"

#include "core/formats/fp8.h"
#include "core/formats/round.h"
#include "core/online_softmax.h"
#include "core/parallel.h"
#include "core/quant/fp8_blocks.h"
#include "core/quant/head_priority.h"
#include "core/quant/quantize.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace attnlab::variants {

namespace {

constexpr double kF8 = 1.0, kF16 = 2.0, kF32 = 4.0;  // bytes per element

struct Settings {
  int64_t block_r, block_c;
  bool p_fp16;

  explicit Settings(const ParamValues& v)
      : block_r(v.integer("block_r")), block_c(v.integer("block_c")), p_fp16(v.choice("p_format") == "fp16") {}
};

// One head's matrix in E4M3 with one FP32 scale per block of `block` rows (core/quant/fp8_blocks.h: the rule
// the kernel's host side uses too), its codes decoded to FP32.
struct Fp8Blocks {
  RowMatrix<float> x;         // E4M3 values (decoded to FP32), without the scales
  std::vector<float> scale;   // (⌈rows / block⌉)
  int64_t saturated = 0, zeroed = 0;
};

Fp8Blocks fp8_blocks(const Tensor::ConstMap& in, int64_t block, const char* where) {
  quant::Fp8BlockCodes c = quant::fp8_block_codes(in.data(), in.rows(), in.cols(), block, where);
  Fp8Blocks out{RowMatrix<float>(in.rows(), in.cols()), std::move(c.scale), c.saturated, c.zeroed};
  for (size_t i = 0; i < c.bits.size(); ++i) out.x.data()[i] = formats::fp8_value(c.bits[i], formats::Fp8::e4m3);
  return out;
}

struct KvHead {
  Fp8Blocks k, v;
};

struct HeadRecord {
  std::vector<float> s_q;  // (row blocks)
  int64_t saturated_q = 0, zeroed_q = 0;
  int64_t visible = 0, zeroed_p = 0;
  double kv_rows = 0, kv_tiles = 0;
  std::vector<double> trace_tile, trace_m, trace_l, trace_bytes;
};

void attend(const Problem& p, const Tensor::ConstMap& q, const KvHead& kv, const Settings& s, int64_t trace_block,
            Tensor::Map o, float* lse, HeadRecord& rec) {
  const int64_t d = p.head_dim, Br = s.block_r, Bc = s.block_c, Tr = (p.q_len + Br - 1) / Br;
  const float softmax_scale = static_cast<float>(p.scale());
  const Fp8Blocks Q = fp8_blocks(q, Br, "flash3_fp8.q");
  rec.s_q = Q.scale;
  rec.saturated_q = Q.saturated;
  rec.zeroed_q = Q.zeroed;

  OnlineSoftmax state;
  RowMatrix<float> S, PV;
  for (int64_t i = 0; i < Tr; ++i) {
    const int64_t row0 = i * Br, rows = std::min(Br, p.q_len - row0);
    const auto Qi = Q.x.middleRows(row0, rows);
    state.reset(rows, d);
    const int64_t tiles = (p.visible_keys(row0 + rows - 1) + Bc - 1) / Bc;  // causal: later tiles skipped
    double bytes = rows * d * kF8 + kF32;
    for (int64_t j = 0; j < tiles; ++j) {
      const int64_t col0 = j * Bc, cols = std::min(Bc, p.kv_len - col0);
      const auto Kj = kv.k.x.middleRows(col0, cols);
      const auto Vj = kv.v.x.middleRows(col0, cols);
      bytes += 2 * cols * d * kF8 + 2 * kF32;
      rec.kv_rows += double(cols);
      const float f = (Q.scale[i] * kv.k.scale[j]) * softmax_scale;
      S.noalias() = Qi * Kj.transpose();  // FP8 × FP8, FP32 accumulate
      S *= f;
      auto visible = [&](int64_t r) { return std::clamp<int64_t>(p.visible_keys(row0 + r) - col0, 0, cols); };
      state.step(S, visible, ExpF32{});  // S now holds P̃ (masked entries 0); ℓ sums the FP32 P̃
      if (s.p_fp16)
        formats::round_fp16_inplace(S.data(), S.size());
      else
        formats::round_fp8_inplace(S.data(), S.size(), formats::Fp8::e4m3);
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t vis = visible(r);
        rec.visible += vis;
        rec.zeroed_p += (S.row(r).head(vis).array() == 0.0f).count();
      }
      PV.noalias() = S * Vj;              // P̃₈·Vⱼ₈, FP32 accumulate
      state.G += PV * kv.v.scale[j];      // × s_Vⱼ, added to the rescaled Oᵢ
      if (i == trace_block) {
        rec.trace_tile.push_back(double(j));
        rec.trace_m.insert(rec.trace_m.end(), state.m.data(), state.m.data() + rows);
        rec.trace_l.insert(rec.trace_l.end(), state.l.data(), state.l.data() + rows);
        rec.trace_bytes.push_back(bytes);
      }
    }
    rec.kv_tiles += double(tiles);
    auto Oi = o.middleRows(row0, rows);
    state.finish(Oi, lse + row0);
    formats::round_fp16_inplace(Oi.data(), Oi.size());  // O stored in FP16
  }
}

ReferenceOutput run(const Problem& p, const QKV& in, const ParamValues& params, const ProbeRequest& req) {
  const Settings s(params);
  const int64_t d = p.head_dim, kv_heads = p.batch * p.kv_heads, q_heads = p.batch * p.q_heads;

  std::vector<KvHead> kv(static_cast<size_t>(kv_heads));
  parallel_for(kv_heads, [&](int64_t bh) {
    const int64_t b = bh / p.kv_heads, h = bh % p.kv_heads;
    kv[bh].k = fp8_blocks(in.k.head(b, h), s.block_c, "flash3_fp8.k");
    kv[bh].v = fp8_blocks(in.v.head(b, h), s.block_c, "flash3_fp8.v");
  });

  ReferenceOutput out;
  out.o = Tensor(p.q_shape());
  Tensor lse({p.batch, p.q_heads, p.q_len, 1});
  std::vector<HeadRecord> rec(static_cast<size_t>(q_heads));
  const int64_t Tr = (p.q_len + s.block_r - 1) / s.block_r;
  const int64_t trace_block = traced_row_block(req, Tr);
  parallel_for(q_heads, [&](int64_t bh) {
    const int64_t b = bh / p.q_heads, h = bh % p.q_heads;
    const int64_t traced = b == req.batch && h == req.head ? trace_block : -1;
    attend(p, in.q.head(b, h), kv[b * p.kv_heads + p.kv_head_of(h)], s, traced, out.o.head(b, h),
           lse.data() + lse.offset(b, h, 0), rec[bh]);
  });

  // Probes.
  std::vector<std::vector<float>> s_q, s_k, s_v;
  for (const auto& r : rec) s_q.push_back(r.s_q);
  for (const auto& e : kv) {
    s_k.push_back(e.k.scale), s_v.push_back(e.v.scale);
  }
  out.probes["scales.q"] = per_head(p, p.q_heads, s_q, "s_Q = max|Qᵢ|/448 per query row block (B_r rows)");
  out.probes["scales.k"] = per_head(p, p.kv_heads, s_k, "s_K = max|Kⱼ|/448 per KV block (B_c rows)");
  out.probes["scales.v"] = per_head(p, p.kv_heads, s_v, "s_V = max|Vⱼ|/448 per KV block (B_c rows)");
  add_channel_probes(out.probes, p, in);
  double sat[3] = {0, 0, 0}, zero[4] = {0, 0, 0, 0}, visible = 0, kv_rows = 0, kv_tiles = 0;
  for (const auto& r : rec)
    sat[0] += double(r.saturated_q), zero[0] += double(r.zeroed_q), zero[3] += double(r.zeroed_p),
        visible += double(r.visible), kv_rows += r.kv_rows, kv_tiles += r.kv_tiles;
  for (const auto& e : kv)
    sat[1] += double(e.k.saturated), sat[2] += double(e.v.saturated), zero[1] += double(e.k.zeroed),
        zero[2] += double(e.v.zeroed);
  out.probes["clamped"] = labelled({"q", "k", "v", "p"}, {sat[0], sat[1], sat[2], 0.0}, "values",
                                   "values saturated to ±448 in E4M3 (|x/s| > 464); P̃ ≤ 1 never saturates");
  out.probes["underflow"] = labelled({"q", "k", "v", "p", "p_visible"}, {zero[0], zero[1], zero[2], zero[3], visible},
                                     "values",
                                     s.p_fp16 ? "nonzero inputs rounded to 0 in E4M3; visible P̃ that are 0 in FP16, "
                                                "of p_visible"
                                              : "nonzero inputs rounded to 0 in E4M3; visible P̃ ≤ 2⁻¹⁰ that are 0 in "
                                                "E4M3, of p_visible");

  // HBM traffic: Qᵢ (FP8) and s_Qᵢ once, Kⱼ, Vⱼ (FP8) and s_Kⱼ, s_Vⱼ once per row block that needs them,
  // O written in FP16 and L in FP32.
  const double rows_q = double(q_heads) * p.q_len;
  const double scale_bytes = double(q_heads) * Tr * kF32 + 2 * kv_tiles * kF32;
  out.probes["hbm_bytes"] = labelled(
      {"q", "k", "v", "o", "lse", "scales"},
      {rows_q * d * kF8, kv_rows * d * kF8, kv_rows * d * kF8, rows_q * d * kF16, rows_q * kF32, scale_bytes},
      "bytes", "FP8 Q/K/V in (K, V once per row block) with FP32 block scales, FP16 O and FP32 L out");
  out.probes["kv_tiles_loaded"] = labelled({"tiles"}, {kv_tiles}, "tiles",
                                           "KV tiles loaded over all row blocks and heads (causal skips tiles)");
  const double blocks = double((p.kv_len + s.block_c - 1) / s.block_c);
  const double kv_codes = 2.0 * double(p.kv_shape().count()) * kF8;
  const double kv_scales = 2.0 * double(kv_heads) * blocks * kF32;
  out.probes["kv_cache.bytes"] = labelled({"codes", "scales"}, {kv_codes, kv_scales}, "bytes",
                                          "E4M3 K and V; FP32 s_K and s_V per block of B_c tokens");
  out.kv_cache_bytes = static_cast<int64_t>(kv_codes + kv_scales);

  const HeadRecord& tr = rec[static_cast<size_t>(std::clamp<int64_t>(req.batch * p.q_heads + req.head, 0, q_heads - 1))];
  add_trace_probes(out.probes, p, req,
                   {tr.trace_tile, tr.trace_m, tr.trace_l, tr.trace_bytes, trace_block, s.block_r, s.block_c,
                    "running sum ℓ (FP32 P̃) after each KV tile",
                    "bytes loaded by the traced row block's CTA so far (Qᵢ, s_Qᵢ, then Kⱼ, Vⱼ, scales)"});
  add_lse_probe(out.probes, p, lse, "logsumexp L = m + log ℓ per row");
  return out;
}

// Storage (the head comment's Inputs): E4M3 Q, K, V with one FP32 scale per block — Q per B_r rows, K and V
// per B_c tokens, the cache's blocks; P̃ in E4M3 (or FP16, p_format); O in FP16.
Storage storage(const Problem& p, const ParamValues& v) {
  Storage s;
  s.q = s.k = s.v = kE4m3;
  s.p = v.choice("p_format") == "fp16" ? kFp16 : kE4m3;
  s.o = kFp16;
  s.q_in = {kE4m3, kWhole, {{"s_Q", kFp32, {v.integer("block_r"), kWhole}}}};
  s.cache.channels = p.head_dim;
  s.cache.block_tokens = v.integer("block_c");
  s.cache.classes = {{kOtherHeads, {kE4m3, kWhole, {{"s_K", kFp32, {kPerBlock, kWhole}}}},
                      {kE4m3, kWhole, {{"s_V", kFp32, {kPerBlock, kWhole}}}}}};
  return s;
}

}  // namespace

VariantSpec flash3_fp8() {
  VariantSpec v;
  v.id = "flash3_fp8";
  v.title = "FlashAttention-3 FP8: E4M3 Q/K/V with per-block scales, P̃ in E4M3, FP32 accumulate";
  v.source = "FlashAttention-3 §3.3 (FP8, block quantization); specification in core/variants/flash3_fp8.cpp";
  v.phases = {Phase::prefill, Phase::decode};
  v.storage = storage;
  v.params = {
      ParamSpec::integer("block_r", 128, 16, 256, "B_r: query rows per block and per Q scale"),
      ParamSpec::integer("block_c", 128, 16, 256, "B_c: keys per KV tile and per K/V scale (FA3 tuned: 224)"),
      ParamSpec::choice("p_format", "e4m3", {"e4m3", "fp16"}, "format of P̃ in the P·V product (fp16 isolates P's rounding)"),
      ParamSpec::choice("kv_loads", "tma_producer", {"tma_producer", "cp_async"},
                        "the GPU kernel's K/V loads: a producer warpgroup's TMA copies (FlashAttention-3 §3.1's warp "
                        "specialization), or every consumer thread's cp.async; the reference's numbers do not depend on it"),
  };
  v.reference = run;
  v.working_memory = flash3_fp8_working_memory;
  return v;
}

}  // namespace attnlab::variants
