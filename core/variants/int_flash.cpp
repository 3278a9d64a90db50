// attnlab core — reference of `int_flash`: INT-FlashAttention (Chen et al., "INT-FlashAttention:
// Enabling Flash Attention for INT8 Quantization"; §3.2 and Algorithm 1), in exact emulation.
//
// Inputs (Alg. 1, Require line; §3.2): Q, K, V are INT8 in HBM with FP32 scales, quantized before the
// kernel by linear symmetric quantization:
//   S_Q = rowmax|Q| / R, S_K = rowmax|K| / R     one scale per token (row)       (§3.2)
//   S_V = max|V| / R                             one scale for the whole tensor  (§3.2, footnote 2)
// and the codes q = clamp(rne(x / s), −R, R) — the generic quantizer (core/quant/quantize.h) with
// Granularity::token for Q and K and Granularity::tensor for V, q_max = R = 127.
// Per query row block Qᵢ (B_r rows) and KV tile j (B_c keys):
//   l. 9   Sᵢ⁽ʲ⁾ = diag(S_Qᵢ)(QᵢKⱼᵀ)diag(S_Kⱼ)·softmax_scale     INT8·INT8 → INT32, scaled in FP32
//   l. 10  mᵢ⁽ʲ⁾ = max(mᵢ⁽ʲ⁻¹⁾, rowmax Sᵢ⁽ʲ⁾)                       FP32
//   l. 11  Pᵢ⁽ʲ⁾ = round(R·exp(Sᵢ⁽ʲ⁾ − mᵢ⁽ʲ⁾))  ∈ [0, R]            INT8 codes of P̃ with S_P = 1/R
//   l. 12  ℓᵢ⁽ʲ⁾ = e^{m⁽ʲ⁻¹⁾ − m⁽ʲ⁾}·ℓᵢ⁽ʲ⁻¹⁾ + rowsum Pᵢ⁽ʲ⁾        the QUANTIZED P, as §3.2 says
//   l. 13  Oᵢ⁽ʲ⁾ = diag(e^{m⁽ʲ⁻¹⁾ − m⁽ʲ⁾})·Oᵢ⁽ʲ⁻¹⁾ + Pᵢ⁽ʲ⁾Vⱼ        INT8·INT8 → INT32, added in FP32
//   l. 16  Oᵢ = diag(ℓᵢ)⁻¹·Oᵢ·S_V                                  stored in FP16
// Why l. 16 gives softmax(S)V: ℓ ≈ R·Σⱼe^{Sⱼ−m} and O ≈ R·Σⱼe^{Sⱼ−m}·V^q, so R cancels in O/ℓ (the
// paper's "implicitly dividing S_P into ℓ") and S_V turns the INT8 codes of V back into values. Since ℓ
// sums exactly the weights that multiply V, the output is the S_V-scaled average of the V codes under the
// integer weights P: a weight p̃ = e^{S−m} < 1/(2R) rounds to 0 and drops out of both.
//
// Half-INT8 (§4, the "half-INT8 version" of Tables 1–2; parameter v_fp16): Q and K as above, V kept in
// FP16 (rounded once from the input). The P·V product is then an FP16 tensor-core product, so P cannot
// be INT8; we follow the FlashAttention-2 kernel this design extends: P̃ = exp(S − m) in FP32, rounded to
// FP16 for the product, ℓ summing the FP32 P̃, O accumulated in FP32, and l. 16 without S_V. (§4 says
// "INT8-format Q and V matrices and FP16-format V matrix"; we read the first V as K, since V cannot be
// both. How P is handled there is not stated; the FA2 reading above is ours.)
//
// Choices the paper leaves open or states inconsistently, fixed here:
//   - R = 127. Alg. 1's Require line says "INT8 maximum R = 127"; §3.2 writes "R = 256 is the INT8
//     quantization range", which would map max|x| to ±256, outside INT8. We use 127 for Q, K and V, and
//     the parameter r_p (default 127 = Alg. 1) for P.
//   - l. 11's rounding: round-half-to-even (std::nearbyint / Eigen rint under the default rounding
//     mode, the rule of the generic quantizer and of CUDA's cvt.rni). §3.2's text prints
//     "round(P̃/R)"; Alg. 1's "round(R × exp(·))" is the one that puts P̃ ∈ (0, 1] on [0, R] and is
//     implemented. exp is FP32 exp (ExpF32); R·exp(·) is one FP32 multiply before rounding.
//   - "Tensor" for S_V is one (batch entry, KV head): Alg. 1 is written for one head's V ∈ 𝕀₈^{N×d}
//     with S_V ∈ ℝ, which is what the kernel receives per head.
//   - Alg. 1 omits the softmax scale 1/√d; it belongs to S (as in FlashAttention-2). The FP32
//     multiplications of l. 9 are done in the order written: ((S_Q[r]·(QKᵀ)[r,c])·S_K[c])·softmax_scale,
//     each one correctly rounded FP32 product.
//   - l. 13's INT32 product is converted to FP32 and then added to the rescaled Oᵢ (one FP32 addition
//     per element): the integer accumulator of the tile, then the FP32 accumulator of the row block.
//     That is the default (pv_accumulation = per_tile). The option across_tiles keeps Pᵢ⁽ʲ⁾Vⱼ in the INT32
//     accumulator across tiles while row r's running max holds: the integers add exactly, and the sum is
//     flushed into the FP32 Oᵢ — converted once (round to nearest even), added once — when the row's max
//     moves, before that tile's rescale (Oᵢ = e^{m⁽ʲ⁻¹⁾ − m⁽ʲ⁾}·(Oᵢ + float(acc))), before every tile j with
//     j mod K = 0, j > 0, K = ⌊(2³¹ − 1)/(127·r_p·B_c)⌋ (so the INT32 sum cannot overflow: each tile adds at
//     most 127·r_p·B_c in magnitude; K = 1040 at B_c = 128), and after the last tile. A row's "max moves"
//     when some visible score of the tile exceeds its running max. It is exact where per_tile rounds once a
//     tile, and it is the order the wgmma kernel runs fastest (its per-tile INT32 → FP32 conversion and add of
//     the D/2 accumulator registers become a rare flush). Not the default: Alg. 1 l. 13 adds per tile, and the
//     mma.sync kernel (the default B_c = 64's) computes that. Half-INT8 has no INT32 product: the option
//     does not apply there.
//   - l. 16 in the order written: (Oᵢ / ℓᵢ)·S_V, two FP32 operations per element; O stored in FP16.
//   - Alg. 1 is self-attention with one N; here q_len and kv_len may differ, causal masks are aligned
//     bottom-right (core/problem.h) with the tiles above the diagonal skipped as in FlashAttention-2,
//     and GQA maps query head h to KV head h / (H_q/H_kv).
//   - The logsumexp (not written by Alg. 1, kept as FlashAttention-2 keeps it for a backward pass):
//     L = (m + log ℓ) − log R in FP32, ℓ being R times the sum of exponentials.
// Probes (core/variants/README.md): scales.q [B, H_q, q_len] and scales.k [B, H_kv, kv_len] (per token),
// scales.v [B, H_kv, 1] (absent under v_fp16: there is no S_V), channels.{k,v}.{min,max}, clamped and
// underflow (labels q, k, v, p: codes clamped to ±127, nonzero values quantized to 0 — for P, visible
// weights with rne(R·e^{S−m}) = 0), hbm_bytes and kv_cache.bytes of the schedule, trace.*, lse.
// Exactness of the integer products (core/variants/README.md): every INT8·INT8 dot product here has at
// most max(d, B_c) ≤ 256 terms, so each partial sum is an integer of magnitude ≤ 127·127·256 < 2²⁴ and
// Eigen's FP32 GEMM on integer-valued floats returns the INT32 result of the tensor cores bit for bit.
// Likewise rowsum P (≤ 256 integers ≤ 127) is exact.
#include "core/variants/int_flash_accumulation.h"
#include "core/variants/kernel_param.h"
#include "core/variants/shared_probes.h"
#include "core/variants/variants.h"

#include "core/formats/round.h"
#include "core/online_softmax.h"
#include "core/parallel.h"
#include "core/quant/head_priority.h"
#include "core/quant/quantize.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace attnlab::variants {

namespace {

constexpr double kR = 127;                              // Alg. 1: INT8 maximum R (Q, K, V)
constexpr double kI8 = 1.0, kF16 = 2.0, kF32 = 4.0;     // bytes per element

struct Settings {
  int64_t block_r, block_c;
  float r_p;     // R of l. 11
  bool v_fp16;   // half-INT8: V in FP16, P̃ in FP16
  bool pv_across_tiles;  // full INT8: P·V summed in INT32 while a row's max holds (the head comment)

  explicit Settings(const ParamValues& v)
      : block_r(v.integer("block_r")),
        block_c(v.integer("block_c")),
        r_p(static_cast<float>(v.integer("r_p"))),
        v_fp16(v.flag("v_fp16")),
        pv_across_tiles(variants::pv_across_tiles(v)) {}
};

// Alg. 1 l. 11 as the exponential of the online softmax: P = rne(R·exp(S − m)) ∈ [0, R]. The rescale
// factor e^{m_old − m_new} of l. 12–13 stays the plain FP32 exp.
struct QuantizedExp {
  float r;
  float operator()(float x) const { return std::exp(x); }
  template <class Row>
  void apply(Row&& seen, float m_new) const {
    seen = (r * (seen.array() - m_new).exp()).rint().matrix();
  }
};

// Codes of one head's matrix as integer-valued floats, and what quantizing it recorded.
RowMatrix<float> codes_of(const quant::Quantized& q) {
  RowMatrix<float> m(q.rows, q.cols);
  std::copy(q.q.begin(), q.q.end(), m.data());
  return m;
}

// Nonzero inputs whose code is 0 (below half a quantization step).
int64_t zeroed(const float* x, const quant::Quantized& q) {
  int64_t n = 0;
  for (size_t i = 0; i < q.q.size(); ++i) n += x[i] != 0.0f && q.q[i] == 0;
  return n;
}

quant::Quantized int8(const float* x, int64_t rows, int64_t cols, quant::Granularity g) {
  return quant::quantize(x, rows, cols, quant::Spec{.bits = 8, .granularity = g, .q_max = kR});
}

// One KV head as it sits in HBM (Alg. 1, Require line).
struct KvHead {
  RowMatrix<float> k, v;      // INT8 codes (integer-valued floats); v is FP16 values under v_fp16
  std::vector<float> s_k;     // (kv_len) S_K, per token
  float s_v = 1.0f;           // S_V, per tensor (1 under v_fp16: no scale)
  int64_t clamped_k = 0, clamped_v = 0, zeroed_k = 0, zeroed_v = 0;
};

// What one query head records for the probes.
struct HeadRecord {
  std::vector<float> s_q;  // (q_len) S_Q
  int64_t clamped_q = 0, zeroed_q = 0;
  int64_t visible = 0, zeroed_p = 0;  // visible scores, and those whose P is 0
  double kv_rows = 0;                 // K (= V) rows loaded over all row blocks
  std::vector<double> trace_tile, trace_m, trace_l, trace_bytes;
};

template <class Exp>
void attend(const Problem& p, const Tensor::ConstMap& q, const KvHead& kv, const Settings& s, Exp exp_fn,
            int64_t trace_block, Tensor::Map o, float* lse, HeadRecord& rec) {
  const int64_t d = p.head_dim, Br = s.block_r, Bc = s.block_c, Tr = (p.q_len + Br - 1) / Br;
  const float softmax_scale = static_cast<float>(p.scale());
  const quant::Quantized qq = int8(q.data(), p.q_len, d, quant::Granularity::token);
  const RowMatrix<float> Q = codes_of(qq);
  rec.s_q = qq.scale;
  rec.clamped_q = qq.stats.clamped;
  rec.zeroed_q = zeroed(q.data(), qq);
  const double v_bytes = s.v_fp16 ? kF16 : kI8;

  OnlineSoftmax state;
  RowMatrix<float> S, PV;
  RowMatrix<double> pending;  // across_tiles: Σ Pᵢ⁽ʲ⁾Vⱼ since the row's last flush, exact integers
  const int64_t flush_tiles = pv_flush_tiles(int64_t(s.r_p), Bc);
  for (int64_t i = 0; i < Tr; ++i) {  // l. 4: one CTA per (batch, head, row block) on the GPU
    const int64_t row0 = i * Br, rows = std::min(Br, p.q_len - row0);
    const auto Qi = Q.middleRows(row0, rows);  // l. 5: Qᵢ and S_Qᵢ
    const float* s_qi = rec.s_q.data() + row0;
    state.reset(rows, d);  // l. 6
    if (s.pv_across_tiles) pending.setZero(rows, d);
    // Causal: the last row of the block sees the most keys; tiles past it are skipped entirely.
    const int64_t tiles = (p.visible_keys(row0 + rows - 1) + Bc - 1) / Bc;
    double bytes = rows * d * kI8 + rows * kF32;
    for (int64_t j = 0; j < tiles; ++j) {  // l. 7
      const int64_t col0 = j * Bc, cols = std::min(Bc, p.kv_len - col0);
      const auto Kj = kv.k.middleRows(col0, cols);  // l. 8: Kⱼ, Vⱼ, S_Kⱼ
      const auto Vj = kv.v.middleRows(col0, cols);
      const float* s_kj = kv.s_k.data() + col0;
      bytes += cols * d * (kI8 + v_bytes) + cols * kF32;
      rec.kv_rows += double(cols);
      S.noalias() = Qi * Kj.transpose();  // l. 9: exact INT32 (see the head comment)
      for (int64_t r = 0; r < rows; ++r) {
        float* row = S.row(r).data();
        const float sq = s_qi[r];
        for (int64_t c = 0; c < cols; ++c) row[c] = ((sq * row[c]) * s_kj[c]) * softmax_scale;
      }
      auto visible = [&](int64_t r) { return std::clamp<int64_t>(p.visible_keys(row0 + r) - col0, 0, cols); };
      // across_tiles: before the rescale, flush the rows whose max moves (every row every K tiles) — the pending
      // exact integers converted once (round to nearest even) and added once, as the kernel's flush. The row max is
      // taken here as step() takes it again: the flush must come before step's rescale.
      for (int64_t r = 0; s.pv_across_tiles && r < rows; ++r) {
        const int64_t vis = visible(r);
        const bool moves = vis > 0 && S.row(r).head(vis).maxCoeff() > state.m[r];
        if (moves || (j > 0 && j % flush_tiles == 0)) {
          state.G.row(r) += pending.row(r).cast<float>();
          pending.row(r).setZero();
        }
      }
      state.step(S, visible, exp_fn);  // l. 10–12 (S now holds P, masked entries 0); Oᵢ rescaled
      if (s.v_fp16) formats::round_fp16_inplace(S.data(), S.size());  // P̃ enters the FP16 product
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t vis = visible(r);
        rec.visible += vis;
        rec.zeroed_p += (S.row(r).head(vis).array() == 0.0f).count();
      }
      if (s.v_fp16) {
        state.G.noalias() += S * Vj;  // FP16 operands, FP32 accumulate
      } else {
        PV.noalias() = S * Vj;  // l. 13: Pᵢ⁽ʲ⁾Vⱼ, exact INT32
        if (s.pv_across_tiles)
          pending += PV.cast<double>();  // kept in INT32 while the row's max holds
        else
          state.G += PV;  // added to the rescaled Oᵢ in FP32
      }
      if (i == trace_block) {
        rec.trace_tile.push_back(double(j));
        rec.trace_m.insert(rec.trace_m.end(), state.m.data(), state.m.data() + rows);
        rec.trace_l.insert(rec.trace_l.end(), state.l.data(), state.l.data() + rows);
        rec.trace_bytes.push_back(bytes);
      }
    }
    if (s.pv_across_tiles) state.G += pending.cast<float>();  // the last flush, every row
    auto Oi = o.middleRows(row0, rows);
    float* lse_i = lse + row0;
    state.finish(Oi, lse_i);  // l. 16: Oᵢ / ℓᵢ (rows that saw no key: 0, L = −∞)
    if (!s.v_fp16) {
      Oi *= kv.s_v;  // l. 16: · S_V (l. 15 loads it)
      const float log_r = std::log(s.r_p);
      for (int64_t r = 0; r < rows; ++r) lse_i[r] -= log_r;
    }
    formats::round_fp16_inplace(Oi.data(), Oi.size());  // l. 17: O written in FP16
  }
}

ReferenceOutput run(const Problem& p, const QKV& in, const ParamValues& params, const ProbeRequest& req) {
  const Settings s(params);
  const int64_t d = p.head_dim, kv_heads = p.batch * p.kv_heads, q_heads = p.batch * p.q_heads;

  // The INT8 K and V of every KV head (quantized before the kernel, §3.2).
  std::vector<KvHead> kv(static_cast<size_t>(kv_heads));
  parallel_for(kv_heads, [&](int64_t bh) {
    const int64_t b = bh / p.kv_heads, h = bh % p.kv_heads;
    const float* k = in.k.head(b, h).data();
    const float* v = in.v.head(b, h).data();
    KvHead& e = kv[bh];
    const quant::Quantized kq = int8(k, p.kv_len, d, quant::Granularity::token);
    e.k = codes_of(kq);
    e.s_k = kq.scale;
    e.clamped_k = kq.stats.clamped;
    e.zeroed_k = zeroed(k, kq);
    if (s.v_fp16) {
      quant::require_finite(v, p.kv_len, d, "int_flash.v");
      e.v = in.v.head(b, h);
      formats::round_fp16_inplace(e.v.data(), e.v.size());
      for (int64_t i = 0; i < e.v.size(); ++i) e.zeroed_v += v[i] != 0.0f && e.v.data()[i] == 0.0f;
    } else {
      const quant::Quantized vq = int8(v, p.kv_len, d, quant::Granularity::tensor);
      e.v = codes_of(vq);
      e.s_v = vq.scale[0];
      e.clamped_v = vq.stats.clamped;
      e.zeroed_v = zeroed(v, vq);
    }
  });

  ReferenceOutput out;
  out.o = Tensor(p.q_shape());
  Tensor lse({p.batch, p.q_heads, p.q_len, 1});
  std::vector<HeadRecord> rec(static_cast<size_t>(q_heads));
  const int64_t Tr = (p.q_len + s.block_r - 1) / s.block_r;
  const int64_t trace_block = traced_row_block(req, Tr);
  parallel_for(q_heads, [&](int64_t bh) {
    const int64_t b = bh / p.q_heads, h = bh % p.q_heads;
    const KvHead& e = kv[b * p.kv_heads + p.kv_head_of(h)];
    const int64_t traced = b == req.batch && h == req.head ? trace_block : -1;
    float* l = lse.data() + lse.offset(b, h, 0);
    if (s.v_fp16)
      attend(p, in.q.head(b, h), e, s, ExpF32{}, traced, out.o.head(b, h), l, rec[bh]);
    else
      attend(p, in.q.head(b, h), e, s, QuantizedExp{s.r_p}, traced, out.o.head(b, h), l, rec[bh]);
  });

  // Probes.
  std::vector<std::vector<float>> s_q, s_k, s_v;
  for (const auto& r : rec) s_q.push_back(r.s_q);
  for (const auto& e : kv) s_k.push_back(e.s_k), s_v.push_back({e.s_v});
  out.probes["scales.q"] = per_head(p, p.q_heads, s_q, "S_Q = rowmax|Q|/127 per query token (§3.2)");
  out.probes["scales.k"] = per_head(p, p.kv_heads, s_k, "S_K = rowmax|K|/127 per key token (§3.2)");
  if (!s.v_fp16)
    out.probes["scales.v"] = per_head(p, p.kv_heads, s_v, "S_V = max|V|/127, one per (batch, KV head) (§3.2)");
  add_channel_probes(out.probes, p, in);
  double clamped[3] = {0, 0, 0}, zero[4] = {0, 0, 0, 0}, visible = 0, kv_rows = 0;
  for (const auto& r : rec)
    clamped[0] += double(r.clamped_q), zero[0] += double(r.zeroed_q), zero[3] += double(r.zeroed_p),
        visible += double(r.visible), kv_rows += r.kv_rows;
  for (const auto& e : kv)
    clamped[1] += double(e.clamped_k), clamped[2] += double(e.clamped_v), zero[1] += double(e.zeroed_k),
        zero[2] += double(e.zeroed_v);
  // P = rne(R·e^{S−m}) ≤ R since e^{S−m} ≤ 1: l. 11 never clamps, the entry is there for completeness.
  out.probes["clamped"] = labelled({"q", "k", "v", "p"}, {clamped[0], clamped[1], clamped[2], 0.0}, "values",
                                   "codes clamped to [−127, 127] (absmax scales never clamp; P ≤ R by construction)");
  out.probes["underflow"] = labelled(
      {"q", "k", "v", "p", "p_visible"}, {zero[0], zero[1], zero[2], zero[3], visible}, "values",
      s.v_fp16 ? "nonzero inputs quantized to 0 (V: FP16 underflow); visible P̃ that are 0 in FP16, of p_visible"
               : "nonzero inputs quantized to 0; visible weights with P = rne(R·e^{S−m}) = 0 (e^{S−m} < 1/2R), of p_visible");

  // HBM traffic of Alg. 1: Qᵢ and S_Qᵢ once (l. 5), Kⱼ, Vⱼ and S_Kⱼ once per row block that needs them
  // (l. 8), S_V once per row block (l. 15), Oᵢ written in FP16 (l. 17) and L in FP32 (as FA2).
  const double heads = double(q_heads), rows_q = heads * p.q_len;
  const double v_bytes = s.v_fp16 ? kF16 : kI8;
  const double scale_bytes = rows_q * kF32 + kv_rows * kF32 + (s.v_fp16 ? 0.0 : heads * Tr * kF32);
  out.probes["hbm_bytes"] = labelled(
      {"q", "k", "v", "o", "lse", "scales"},
      {rows_q * d * kI8, kv_rows * d * kI8, kv_rows * d * v_bytes, rows_q * d * kF16, rows_q * kF32, scale_bytes},
      "bytes",
      s.v_fp16 ? "Alg. 1 schedule, half-INT8: INT8 Q/K and FP16 V in (K, V once per row block), FP32 S_Q/S_K, "
                 "FP16 O and FP32 L out"
               : "Alg. 1 schedule: INT8 Q/K/V in (K, V once per row block), FP32 S_Q/S_K/S_V, FP16 O and FP32 L out");
  const double kv_codes = double(p.kv_shape().count()) * (kI8 + v_bytes);
  const double kv_scales = double(kv_heads) * (p.kv_len + (s.v_fp16 ? 0 : 1)) * kF32;
  out.probes["kv_cache.bytes"] = labelled({"codes", "scales"}, {kv_codes, kv_scales}, "bytes",
                                          s.v_fp16 ? "INT8 K and FP16 V; FP32 S_K per token"
                                                   : "INT8 K and V; FP32 S_K per token and S_V per KV head");
  out.kv_cache_bytes = static_cast<int64_t>(kv_codes + kv_scales);

  const HeadRecord& tr = rec[static_cast<size_t>(std::clamp<int64_t>(req.batch * p.q_heads + req.head, 0, q_heads - 1))];
  add_trace_probes(out.probes, p, req,
                   {tr.trace_tile, tr.trace_m, tr.trace_l, tr.trace_bytes, trace_block, s.block_r, s.block_c,
                    s.v_fp16 ? "running sum ℓ of the FP32 P̃ after each KV tile"
                                    : "running sum ℓ of the integer P after each KV tile (l. 12; ≈ R·Σe^{S−m})",
                    "bytes loaded by the traced row block's CTA so far (Qᵢ, S_Qᵢ, then Kⱼ, Vⱼ, S_Kⱼ)"});
  add_lse_probe(out.probes, p, lse, "logsumexp L = m + log(ℓ/R) per row (m + log ℓ under v_fp16)");
  return out;
}

// Storage (Alg. 1's Require line, §3.2): INT8 Q and K with one FP32 scale per token, INT8 V with one FP32
// scale per (batch, KV head), P as INT8 codes in [0, r_p]; half-INT8 keeps V in FP16 without a scale and
// P̃ in FP16. O in FP16.
Storage storage(const Problem& p, const ParamValues& v) {
  const bool half = v.flag("v_fp16");
  Storage s;
  s.q = s.k = kInt8;
  s.v = s.p = half ? kFp16 : kInt8;
  s.o = kFp16;
  s.q_in = {kInt8, kWhole, {{"S_Q", kFp32, {1, kWhole}}}};
  s.cache.channels = p.head_dim;
  const TensorStorage v_cache =
      half ? unscaled(kFp16) : TensorStorage{kInt8, kWhole, {{"S_V", kFp32, {kWhole, kWhole}}}};
  s.cache.classes = {{kOtherHeads, {kInt8, kWhole, {{"S_K", kFp32, {1, kWhole}}}}, v_cache}};
  return s;
}

}  // namespace

bool pv_across_tiles(const ParamValues& v) {
  return !v.flag("v_fp16") && v.choice("pv_accumulation") == "across_tiles";
}

VariantSpec int_flash() {
  VariantSpec v;
  v.id = "int_flash";
  v.title = "INT-FlashAttention: INT8 Q/K per token, INT8 V per tensor, INT8 P = round(127·exp)";
  v.source = "INT-FlashAttention §3.2 and Algorithm 1 (half-INT8 of §4 as the option v_fp16)";
  v.phases = {Phase::prefill};
  v.storage = storage;
  v.params = {
      ParamSpec::integer("block_r", 128, 16, 256, "B_r: query rows per block (one CTA each)"),
      ParamSpec::integer("block_c", 64, 16, 256, "B_c: keys per KV tile; ≤ 256 keeps the INT32 P·V exact in FP32"),
      ParamSpec::integer("r_p", 127, 1, 127, "R of Alg. 1 l. 11: P = round(R·exp(S − m)) in [0, R]"),
      ParamSpec::boolean("v_fp16", false, "half-INT8 (§4): V in FP16, P̃ in FP16, no S_V"),
      ParamSpec::choice("pv_accumulation", "per_tile", {"per_tile", "across_tiles"},
                        "l. 13's INT32 P·V: converted and added to the FP32 O every tile (Alg. 1), or kept in INT32 "
                        "while a row's max holds and flushed when it moves (exact; the wgmma kernel's faster order). "
                        "Full INT8 only"),
      kernel_generation_param(),
      ParamSpec::choice("kv_loads", "tma_producer", {"tma_producer", "cp_async"},
                        "the wgmma kernel's K/V loads: a producer warpgroup's TMA copies (FlashAttention-3 §3.1's warp "
                        "specialization), or every thread's cp.async (wgmma v2's pipeline); the numbers do not depend on it"),
  };
  v.reference = run;
  v.working_memory = int_flash_working_memory;
  return v;
}

}  // namespace attnlab::variants
