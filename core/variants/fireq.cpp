// attnlab core — reference of `fireq`: FireQ's attention layer, KV4Q8-FP (FireQ §2.1 Eq. 1–2, §3.1.1,
// §3.2.1 RPN + CRS, §3.2.2 Alg. 1), prefill and decode, in exact emulation.
//
// Per (batch, KV head), the cache (decode reads it, and prefill with prefill_kv = int4, the default):
//   §3.2.1      K arrives post-RoPE (our data is post-RoPE; rope_smoothing.h explains why RPN's pair
//               factor may be applied to post-RoPE data). Smoothing factors s (d): RPN (Thm 3.1, Eq. 10)
//               on the regular pairs, CRS (tᵢ = β·maxₙ|kᵢⁿ|) on the top_k outlier pairs
//               (fireq::two_stage_scales); K̃ = K / s per channel.
//   §2.1 Eq. 1  K̃ and V per token to INT4, σ = max|x|/7 stored in FP8 E4M3 (fireq::quantize_token_int4).
//   §3.1.1 St.1 Each INT4 code becomes an FP8 operand through a 16-entry lookup table built from the
//               token's scale: LUT[c] = FP8(c·σ), c ∈ [−8, 7] (fireq::int4_fp8_lut). The tensor core
//               multiplies these E4M3 values.
//   App. D      prefill with prefill_kv = fp8 reads K and V "quantized in FP8 (not in INT4)" instead, to
//               E4M3 with BF16 scales by Eq. 2's rule: K̃ (smoothed as above) per token (or per KV tile:
//               fp8_k_scale), k̂ = FP8(k̃/β_K); V per KV tile j of B_c tokens, v̂ = FP8(v/β_V,ⱼ)
//               (fireq::quantize_block_fp8); no INT4 codes, no LUT.
// Per (batch, query head):
//   §3.2.1      Q̃ = Q·s (the inverse calibration N⁻¹, S⁻¹ merged into the query side), so Q̃K̃ᵀ = QKᵀ.
//   Eq. 2       Q̃ to FP8 E4M3 with a BF16 scale β per token: β = bf16(max|q̃|/448), q̂ = FP8(q̃/β).
//   Alg. 1 l. 6–8, 14    S = (Q̂ · LUT(K)ᵀ) · (β·τ), τ = 1/√d, masked (prefill_kv = fp8:
//               S = (Q̂·K̂ᵀ)·((β·β_K)·τ), β_K per column).
//   Alg. 1 l. 8, 13, 15  online softmax: m, P̃ = exp(S − m), ℓ = e^{m_old − m}·ℓ + rowsum P̃.
//   §3.2.2 St. 2–3, l. 11, 16, 19–23   P̃ quantized to FP8 E4M3, Oᵢ = e^{m_old − m}·Oᵢ + P̂ · LUT(V),
//               FP32 accumulation (prefill_kv = fp8: Oᵢ = e^{m_old − m}·Oᵢ + fl32(P̂·V̂ⱼ)·β_V,ⱼ);
//               l. 24 Oᵢ / ℓ, "reduced to BF16 for final storage".
//
// Choices (the paper leaves them open, or we depart from it on purpose):
//   - V is not smoothed: §3.2.1 and Figure 3 smooth the key matrix only (V carries no RoPE and no
//     outlier channels to speak of); V is quantized per token like K (§2.1: "keys and values in attention
//     layers apply per-token quantization").
//   - The per-token V scale varies along the reduction dimension of P̃V. FireQ handles a scale along the
//     reduction dimension with the LUT of §3.1.1 Step 1 (its linear-layer groups of 128 run along the
//     reduction dimension too, and the same kernel computes S = QKᵀ and O = PV, Figure 1): the scale is
//     folded into the operand, V̂[n, c] = FP8(code·σₙ). K is converted the same way. Choice `int4_to_fp8
//     = exact` keeps the LUT entries unrounded instead (K: the codes, which are exact E4M3 values, with
//     σ_K applied to S per column in FP32, (β·σ_K)·τ; V: σ·code in FP32, exact for E4M3 σ) — an ablation
//     that isolates the LUT's rounding (FP8(c·σ) errs by up to 2⁻⁴ relative, a sizeable fraction of an
//     INT4 step).
//   - Q's scale: Eq. 2's BF16 β, one per token (App. A.1: "per-token activation scale factor"), the
//     absmax rule β = bf16(max|q̃|/448) of fireq::quantize_token_fp8 (token_fp8.h: no element saturates,
//     which the `clamped` probe's q count verifies; β = 1 for a zero row or a β that is not normal).
//   - prefill_kv (App. D). Default int4: prefill and decode then read the same cache, so decode reproduces
//     prefill's last row bit for bit and the variant isolates KV4Q8's storage formats. fp8 reproduces the
//     paper's App. D prefill measurement; decode ignores the parameter (it always reads the INT4 cache, so
//     its output is the same under both), and so do int4_to_fp8 and scale_format in an fp8 prefill.
//     The FP8 K̃ and V take Eq. 2's rule, the paper's only rule for an FP8 tensor (App. D names no other):
//     β = bf16(max|x|/448), per token for K̃ and per KV tile for V (below), stored in BF16 (2 bytes). Not
//     an E4M3 scale: after the default RPN + CRS every |k̃| ≤ 1/8 (Thm 3.1 and CRS with α = β = 8), so
//     max|k̃|/448 ≤ 1/3584 lies below E4M3's smallest subnormal 2⁻⁹ and every key would flush to 0
//     (Lemma B.1's underflow, with a scale 64× smaller than INT4's max/7). Nor FP32: BF16 is what Eq. 2
//     stores, and its range suffices.
//     β_K stays per token: it multiplies S per column (as σ_K does under int4_to_fp8 = exact), free in a
//     kernel. V takes ONE β_V,ⱼ per KV tile j of B_c tokens (tokens [j·B_c, min((j + 1)·B_c, N))): the max
//     of |v| over the tile's tokens and channels, with the same rule and fallbacks (β = 1 for an all-zero
//     tile or a β that is not normal); v̂ = FP8(v/β_V,ⱼ), E4M3 RNE saturating, is the operand, unscaled,
//     and O's tile term is fl32(P̂·V̂ⱼ)·β_V,ⱼ — the exact product rounded to FP32, then one FP32 multiply —
//     added to the FP32 accumulator, as a kernel does with a per-tile accumulator. Why not per token: a
//     per-token β_V varies along the reduction dimension of P̃V, where no FP8 tensor core can apply it,
//     and folding it into the operand (β_V,ₙ·v̂ₙ, exact in FP32, our earlier choice) is not an E4M3 value,
//     so no kernel could multiply it. A scale constant along the reduction within a tile is what
//     FlashAttention-3's FP8 path uses for V (per tensor or per block), and App. D's kernel is FA3's; the
//     paper does not say where its kernel applies the V scale. The price: a tile's tokens share the step
//     of its largest |v| (elements far below the tile's max keep fewer significant bits, and those at or
//     below 2⁻¹⁰·β_V,ⱼ flush to 0), and one more FP32 rounding per tile.
//   - P̃ goes to E4M3 without a scale (P̃ ≤ 1 fits; Alg. 1 and §3.2.2 name none): values below 2⁻¹⁰
//     flush to 0 (probe `fireq.p_zero`). ℓ sums the unquantized P̃ (Alg. 1 l. 15 sums P before the FP8
//     conversion), as flash2 does with FP16.
//   - The paper's kernel accumulates S in FP16 and computes the softmax in FP16 (§3.2.2). By default
//     (softmax_precision = fp32) we keep S, m, ℓ and exp in FP32 (ExpF32), so that the variant isolates the
//     INT4/FP8 storage formats of KV4Q8-FP. softmax_precision = fp16 is the paper's: S₂ = fp16(S·log₂e) after
//     the FP32 scale (not an FP16 accumulator: the unscaled E4M3 products overflow it), m₂ and P̃ = 2^{S₂ − m₂}
//     in FP16, s, ℓ and O in FP32 (core/fireq/softmax_fp16.h has the choices). Prefill only: decode keeps FP32
//     (§3.2.2 is the prefill kernel's), so in fp16 decode no longer repeats prefill's last row.
//   - fp8_k_scale (prefill_kv = fp8). token (default): β_K per token, Eq. 2's rule, applied per column of S.
//     tile: one β_K per KV tile of B_c tokens, quantized and applied as β_V's (the max over the tile's tokens
//     and channels). Alg. 1 l. 8 and 12 scale S by τ alone, so the paper's loop has no per-key factor: a K
//     scale constant over a tile folds into τ, as FlashAttention-3's FP8 block scales do — in a kernel one
//     factor per row and tile instead of one multiply and one shared-memory read per score. The price is
//     V's: a tile's keys share the step of its largest |k̃|. Default token: §3 names per-token quantization for
//     keys and values; tile is the kernel's faster form (kernels/PERF.md, "FP8 mode v8").
//   - The FP8 products are computed exactly and rounded once to FP32: every E4M3 value is a multiple of
//     2⁻⁹ below 2⁹, so q̂·k̂ and p̂·v̂ are multiples of 2⁻¹⁸ and a dot product of ≤ 256 + 16 terms is an
//     integer multiple of 2⁻¹⁸ of magnitude < 2⁴⁵ — exact in FP64 in any summation order. The Eigen
//     GEMMs therefore run in double and their results are cast to float: the FP32 accumulator of the
//     tensor core without its reassociation error (wgmma's accumulation order is not reproducible
//     anyway). This makes every score independent of how many rows the tile has, which is what lets
//     decode reproduce prefill's last row bit for bit. (With scale_format = fp32 and int4_to_fp8 = exact,
//     V̂ = σ·code is an FP32 value, and exactness needs a tile's V scales within ~2¹⁸ of each other. With
//     prefill_kv = fp8, P̂·V̂ⱼ multiplies E4M3 values only — β_V,ⱼ is applied after, to the FP32 result — so
//     it is exact as above: multiples of 2⁻¹⁸, as on the INT4 path.)
//   - Tiles are padded to a multiple of 16 columns (the extra columns are masked like causal ones, their
//     P̂ is 0): every row of S then starts at the same alignment, so the vectorized exp and row sums
//     take the same path in a B_r-row tile and in decode's one-row tile.
//   - Smoothing factors are computed from this problem's keys (all kv_len tokens): the offline
//     calibration of RPN, and CRS's factors, are taken from the sequence itself (the best case for
//     both). "rpn" applies RPN to every pair; "crs" applies CRS to the top_k pairs and leaves the rest;
//     "none" quantizes K̃ = K. Outlier pairs are ranked by fireq::select_outlier_pairs. "crs" with
//     top_k < d/2 is not a configuration the paper runs (its CRS-only case, App. E.2, is all pairs): the
//     outlier channels shrink to ≤ 1/β while the others stay raw, so the per-token INT4 step (set by the
//     raw channels) rounds the outliers' codes to 0 — on llm_like data rel. L2 0.99 at top_k 8 against
//     0.31 at top_k = d/2 (measured on configs/lessons/fireq-smoothing.json's data). Kept as specified.
//   - Inputs are used as given in FP32 (the BF16 rounding of the projection outputs, 2⁻⁹ relative, is
//     below the FP8/INT4 steps and is not emulated). O is stored in BF16 (§3.2.2 Stage 3).
//   - HBM traffic: Q read in FP8 with its BF16 β (the paper does not say where Q is converted; we take
//     it as stored in FP8, like the KV cache in INT4), K and V as packed INT4 with one scale per token
//     (1 byte in E4M3, 4 in FP32) — in an fp8 prefill as E4M3 with a BF16 β_K per token and a BF16 β_V
//     per KV tile (App. D) — once per row block that needs them, O written in BF16, L in FP32. The d
//     smoothing factors per head are not counted. The INT4 cache is the one every run leaves (kv_cache.bytes, the capacity model's):
//     an int4 prefill reads it as given; an fp8 prefill does not read it, so the cost model counts it
//     written once by the prefill (the storage declaration's kv_in, as for turbo's Alg. 1) — a write App.
//     D's kernel timing does not include.
#include "core/variants/fireq_cache.h"
#include "core/variants/fireq_quantize.h"
#include "core/variants/shared_probes.h"
#include "core/variants/variants.h"

#include "core/error.h"
#include "core/fireq/softmax_fp16.h"
#include "core/fireq/token_fp8.h"
#include "core/formats/fp8.h"
#include "core/formats/half.h"
#include "core/formats/pack.h"
#include "core/online_softmax.h"
#include "core/parallel.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace attnlab::variants {

namespace {

using formats::Fp8;

using fireq_detail::kBF16;
using fireq_detail::kF32;
using fireq_detail::kF8;
using fireq_detail::kPad;
using fireq_detail::KvHead;
using fireq_detail::Settings;
using fireq_detail::Smoothing;

// Eq. 2 on Q̃ = Q·s of one query head: β per row (BF16) and q̂ = FP8(q̃/β) as doubles.
struct QHead {
  RowMatrix<double> q;        // (q_len, d) E4M3 values
  std::vector<float> beta;    // (q_len)
  int64_t clamped = 0;        // |q̃/β| > 464 (saturated); 0 by construction (see the head comment)
};

QHead prepare_q(const Tensor::ConstMap& q, const std::vector<float>& s, bool smooth) {
  RowMatrix<float> qs = q;
  QHead r;
  fireq::TokenFp8 f = fireq_detail::quantize_query(qs.data(), qs.rows(), qs.cols(), s, smooth);  // Q̃ = Q·s, Eq. 2 (in place)
  r.beta = std::move(f.scale);
  r.clamped = f.saturated;
  r.q = qs.cast<double>();
  return r;
}

// What one query head records for the probes.
struct HeadRecord {
  double kv_rows = 0;               // K (= V) rows loaded over all row blocks
  double kv_tiles = 0;              // KV tiles loaded over all row blocks
  int64_t visible = 0, zeroed = 0;  // visible scores, and those whose P̂ is 0
  std::vector<double> trace_tile, trace_m, trace_l, trace_bytes;
};

void attend(const Problem& p, const QHead& q, const KvHead& kv, const Settings& st, int64_t trace_block,
            Tensor::Map o, float* lse, HeadRecord& rec) {
  const int64_t d = p.head_dim, Br = st.block_r, Bc = st.block_c, Tr = (p.q_len + Br - 1) / Br;
  const float tau = static_cast<float>(p.scale());
  OnlineSoftmax state;
  RowMatrix<double> Sd, Gd, Pd, Kd, Vd;
  RowMatrix<float> S, G;
  Eigen::VectorXf f_q;
  std::vector<float> c_row(static_cast<size_t>(Br)), g_col(static_cast<size_t>(Bc + kPad));  // fp16_softmax's factors
  std::vector<int64_t> vis(static_cast<size_t>(Br));
  for (int64_t i = 0; i < Tr; ++i) {
    const int64_t row0 = i * Br, rows = std::min(Br, p.q_len - row0);
    const auto Qi = q.q.middleRows(row0, rows);
    f_q.resize(rows);
    for (int64_t r = 0; r < rows; ++r) f_q[r] = q.beta[row0 + r] * tau;  // β·τ
    if (st.fp16_softmax)
      for (int64_t r = 0; r < rows; ++r) c_row[r] = fireq::fp16_row_factor(q.beta[row0 + r], tau, st.k_scale_per_column());
    state.reset(rows, d);
    const int64_t tiles = (p.visible_keys(row0 + rows - 1) + Bc - 1) / Bc;  // causal: later tiles skipped
    double bytes = rows * (double(d) * kF8 + kBF16);
    for (int64_t j = 0; j < tiles; ++j) {
      const int64_t col0 = j * Bc, cols = std::min(Bc, p.kv_len - col0);
      const int64_t cols_pad = (cols + kPad - 1) / kPad * kPad;
      bytes += st.kv_tile_bytes(cols, d);
      rec.kv_rows += double(cols), rec.kv_tiles += 1;
      Kd = kv.k.middleRows(col0, cols_pad).cast<double>();
      Vd = kv.v.middleRows(col0, cols_pad).cast<double>();
      Sd.noalias() = Qi * Kd.transpose();  // exact (head comment)
      S = Sd.cast<float>();
      auto visible = [&](int64_t r) { return std::clamp<int64_t>(p.visible_keys(row0 + r) - col0, 0, cols); };
      if (!st.fp16_softmax) {
        if (!st.k_scale_per_column()) {
          S.array().colwise() *= f_q.array();  // S = (Q̂·LUT(K)ᵀ)·(β·τ)
        } else {
          for (int64_t r = 0; r < rows; ++r)  // S = (Q̂·codesᵀ)·((β·σ_K)·τ), or (Q̂·K̂ᵀ)·((β·β_K)·τ)
            S.row(r).array() *= (kv.k_col.segment(col0, cols_pad).array() * q.beta[row0 + r]) * tau;
        }
        state.step(S, visible, ExpF32{});  // S now holds P̃ (masked and padded entries 0)
      } else {  // §3.2.2: S₂ = fp16(S·factors·log₂e), m₂ and P̃ in FP16 (softmax_fp16.h)
        if (st.k_scale_per_column())
          for (int64_t c = 0; c < cols_pad; ++c) g_col[c] = kv.k_col[col0 + c] * tau;  // fl(k_c·τ)
        fireq::scores_to_fp16_log2(S, st.k_scale_per_column() ? g_col.data() : nullptr, c_row.data());
        for (int64_t r = 0; r < rows; ++r) vis[r] = visible(r);
        fireq::softmax_step_fp16(state, S, vis.data());
      }
      formats::round_fp8_inplace(S.data(), S.size(), Fp8::e4m3, formats::Overflow::saturate);  // P̂ = FP8(P̃)
      for (int64_t r = 0; r < rows; ++r) rec.visible += visible(r);
      rec.zeroed -= (S.array() > 0.0f).count();
      Pd = S.cast<double>();
      Gd.noalias() = Pd * Vd;  // exact: P̂ · LUT(V), or P̂ · V̂ⱼ
      G = Gd.cast<float>();
      if (st.fp8_kv) G *= kv.s_v[j];  // fl32(P̂ · V̂ⱼ) · β_V,j: one FP32 multiply (head comment)
      state.G += G;  // FP32 accumulator
      if (i == trace_block) {
        rec.trace_tile.push_back(double(j));
        const float to_natural = st.fp16_softmax ? fireq::kLn2 : 1.0f;  // fp16_softmax keeps m₂ in log₂ units
        for (int64_t r = 0; r < rows; ++r) rec.trace_m.push_back(state.m[r] * to_natural);
        rec.trace_l.insert(rec.trace_l.end(), state.l.data(), state.l.data() + rows);
        rec.trace_bytes.push_back(bytes);
      }
    }
    auto Oi = o.middleRows(row0, rows);
    if (st.fp16_softmax) fireq::maxima_to_natural(state);
    state.finish(Oi, lse + row0);  // l. 24: Oᵢ / ℓᵢ; L = m + log ℓ
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < d; ++c) Oi(r, c) = formats::round_bf16(Oi(r, c));  // O stored in BF16
  }
  rec.zeroed += rec.visible;
}

ReferenceOutput run(const Problem& p, const QKV& in, const ParamValues& params, const ProbeRequest& req) {
  const Settings st(params, p.phase);
  const int64_t d = p.head_dim, kv_heads = p.batch * p.kv_heads, q_heads = p.batch * p.q_heads;
  if (st.smoothing == Smoothing::rpn_crs || st.smoothing == Smoothing::crs)
    if (st.sp.top_k > d / 2) fail_input("fireq.top_k", fmt::format("must not exceed d/2 = {} (got {})", d / 2, st.sp.top_k));

  std::vector<KvHead> kv(static_cast<size_t>(kv_heads));
  parallel_for(kv_heads, [&](int64_t bh) {
    const int64_t b = bh / p.kv_heads, h = bh % p.kv_heads;
    kv[bh] = prepare_kv(in.k.head(b, h).data(), in.v.head(b, h).data(), p.kv_len, d, st);
  });

  ReferenceOutput out;
  out.o = Tensor(p.q_shape());
  Tensor lse({p.batch, p.q_heads, p.q_len, 1});
  std::vector<QHead> qh(static_cast<size_t>(q_heads));
  std::vector<HeadRecord> rec(static_cast<size_t>(q_heads));
  const int64_t Tr = (p.q_len + st.block_r - 1) / st.block_r;
  const int64_t trace_block = traced_row_block(req, Tr);
  parallel_for(q_heads, [&](int64_t bh) {
    const int64_t b = bh / p.q_heads, h = bh % p.q_heads;
    const KvHead& x = kv[b * p.kv_heads + p.kv_head_of(h)];
    qh[bh] = prepare_q(in.q.head(b, h), x.s, st.smoothing != Smoothing::none);
    const int64_t traced = b == req.batch && h == req.head ? trace_block : -1;
    attend(p, qh[bh], x, st, traced, out.o.head(b, h), lse.data() + lse.offset(b, h, 0), rec[bh]);
    qh[bh].q.resize(0, 0);  // keep β and the counts only
  });

  // Probes.
  std::vector<const std::vector<float>*> sq, sk, sv, s, ksmin, ksmax;
  for (const QHead& q : qh) sq.push_back(&q.beta);
  double clamped[3] = {0, 0, 0}, lut[2] = {0, 0}, under[2] = {0, 0}, sat[2] = {0, 0}, sub[2] = {0, 0};
  std::vector<double> pairs;
  for (const KvHead& x : kv) {
    sk.push_back(&x.s_k), sv.push_back(&x.s_v), s.push_back(&x.s);
    ksmin.push_back(&x.ks_min), ksmax.push_back(&x.ks_max);
    clamped[1] += double(x.clamped_k), clamped[2] += double(x.clamped_v);
    lut[0] += double(x.lut_k), lut[1] += double(x.lut_v);
    under[0] += double(x.under_k), under[1] += double(x.under_v), sat[0] += double(x.sat_k), sat[1] += double(x.sat_v);
    sub[0] += double(x.sub_k), sub[1] += double(x.sub_v);
    pairs.insert(pairs.end(), x.outliers.begin(), x.outliers.end());
  }
  for (const QHead& q : qh) clamped[0] += double(q.clamped);
  // Under fp8_kv the K/V probes describe the FP8 operands prefill reads (their β, their saturations).
  const bool f8 = st.fp8_kv;
  out.probes["scales.q"] = per_head(p, p.q_heads, p.q_len, sq, "",
                                    "β per query token: bf16(max|q̃|/448), q̂ = FP8(q̃/β) (Eq. 2)");
  const int64_t v_tiles = (p.kv_len + st.block_c - 1) / st.block_c;
  out.probes["scales.k"] = per_head(p, p.kv_heads, st.k_tile ? v_tiles : p.kv_len, sk, "",
                                    st.k_tile ? "β_K per KV tile (B_c tokens): bf16(max|k̃|/448) over the tile, k̂ = FP8(k̃/β_K) "
                                                "(fp8_k_scale = tile), after smoothing"
                                    : f8 ? "β per key token: bf16(max|k̃|/448), k̂ = FP8(k̃/β) (Eq. 2's rule, App. D), after smoothing"
                                         : "σ per key token: max|k̃|/7 stored in E4M3 (or FP32) (Eq. 1), after smoothing");
  out.probes["scales.v"] = per_head(p, p.kv_heads, f8 ? v_tiles : p.kv_len, sv, "",
                                    f8 ? "β_V per KV tile (B_c tokens): bf16(max|v|/448) over the tile, v̂ = FP8(v/β_V) "
                                         "(Eq. 2's rule, App. D; one scale per tile, head comment)"
                                       : "σ per value token: max|v|/7 stored in E4M3 (or FP32)");
  add_channel_probes(out.probes, p, in);  // K as received (post-RoPE), V (never smoothed)
  out.probes["channels.k_smoothed.min"] = per_head(p, p.kv_heads, d, ksmin, "", "per-channel minimum of K̃ = K/s (after the chosen smoothing)");
  out.probes["channels.k_smoothed.max"] = per_head(p, p.kv_heads, d, ksmax, "", "per-channel maximum of K̃ = K/s (after the chosen smoothing)");
  out.probes["fireq.smoothing"] = per_head(p, p.kv_heads, d, s, "",
                                           "smoothing factor s per channel: RPN α·max pair norm on regular pairs, CRS "
                                           "β·max|k_c| on outlier pairs; K ← K/s, Q ← Q·s");
  const int64_t n_pairs = kv.empty() ? 0 : static_cast<int64_t>(kv[0].outliers.size());
  out.probes["fireq.outlier_pairs"] = {{p.batch, p.kv_heads, n_pairs}, pairs, {}, "pair",
                                       "CRS pairs i (channels i and i + d/2), largest max pair norm first"};
  out.probes["clamped"] = labelled(
      {"q", "k", "v", "k_lut", "v_lut", "underflow_tokens", "saturated_tokens"},
      {clamped[0], clamped[1], clamped[2], lut[0], lut[1], under[0] + under[1], sat[0] + sat[1]}, "values",
      f8 ? "FP8 prefill: q, k, v: |x/β| beyond E4M3's range (0 by construction, token_fp8.h); k_lut, v_lut: 0 (no "
           "LUT); underflow_tokens: non-zero K tokens and V tiles whose BF16 β was not a normal float (β = 1 used); "
           "saturated_tokens: 0 (BF16 keeps FP32's range)"
         : "q: |q̃/β| beyond E4M3's range; k, v: INT4 codes clamped to [−8, 7]; k_lut, v_lut: elements whose LUT "
           "entry FP8(code·σ) saturated or flushed to 0; underflow/saturated_tokens: K and V tokens whose σ fell "
           "below E4M3's 2⁻⁹ (Lemma B.1) or above 448");
  out.probes["fireq.scale_events"] = labelled(
      {"k_underflow", "v_underflow", "k_saturated", "v_saturated", "k_subnormal", "v_subnormal"},
      {under[0], under[1], sat[0], sat[1], sub[0], sub[1]}, "tokens",
      f8 ? "FP8 prefill: underflow: non-zero K tokens (tiles with fp8_k_scale = tile; k_underflow) and V tiles (v_underflow) whose BF16 β was not "
           "a normal float (β = 1 used, the token or tile flushes to 0); saturated, subnormal: 0 (BF16 keeps FP32's "
           "range)"
         : "tokens whose scale σ left the format's range (underflow: below 2⁻⁹ in E4M3, Lemma B.1; saturated: above "
      "448), or is subnormal (E4M3: below 2⁻⁶, so stored with fewer than 4 significant bits; after RPN + CRS "
      "with α = β = 8 every key token has σ ≤ 1/56, and those with max|k̃| < 7/64 land here)");
  int64_t visible = 0, zeroed = 0;
  double kv_rows = 0, kv_tiles = 0;
  for (const HeadRecord& r : rec) visible += r.visible, zeroed += r.zeroed, kv_rows += r.kv_rows, kv_tiles += r.kv_tiles;
  out.probes["fireq.p_zero"] = labelled(
      {"zeroed", "visible", "fraction"}, {double(zeroed), double(visible), visible ? double(zeroed) / double(visible) : 0.0},
      "", "visible scores whose FP8 P̂ is 0 (P̃ ≤ 2⁻¹⁰ flushes, or exp underflowed)");

  // The INT4 cache every run leaves for decode (an fp8 prefill writes it: the storage declaration's kv_in).
  const double per_kv_head_cache =
      2.0 * double(formats::packed_bytes(p.kv_len * d, 4)) + 2.0 * double(p.kv_len) * st.sigma_bytes;
  out.kv_cache_bytes = static_cast<int64_t>(double(kv_heads) * per_kv_head_cache);
  out.probes["kv_cache.bytes"] = labelled(
      {"codes", "scales"},
      {2.0 * double(kv_heads) * double(formats::packed_bytes(p.kv_len * d, 4)),
       2.0 * double(kv_heads) * double(p.kv_len) * st.sigma_bytes},
      "bytes", "packed INT4 codes of K and V, one scale per token of K and of V (1 byte E4M3, 4 bytes FP32)");
  const double rows_q = double(q_heads) * double(p.q_len);
  out.probes["hbm_bytes"] = labelled(
      {"q", "k", "v", "scales", "o", "lse"},
      {rows_q * double(d) * kF8, kv_rows * double(d) * st.code_bytes, kv_rows * double(d) * st.code_bytes,
       rows_q * kBF16 + (st.k_tile ? kv_tiles * kBF16 : kv_rows * st.scale_bytes) +
           (f8 ? kv_tiles * kBF16 : kv_rows * st.scale_bytes),
       rows_q * double(d) * kBF16, rows_q * kF32},
      "bytes",
      fmt::format("Q in FP8, {} K and V once per row block that needs them, scales (β of Q in BF16, {}), O in "
                  "BF16, L in FP32{}",
                  f8 ? "E4M3" : "packed INT4",
                  st.k_tile ? "BF16 β_K and β_V per KV tile"
                  : f8      ? "BF16 β_K per token, BF16 β_V per KV tile"
                            : "σ of K and V per token",
                  f8 ? "; besides, the INT4 cache for decode (kv_cache.bytes) is written once" : ""));

  const HeadRecord& tr = rec[static_cast<size_t>(std::clamp<int64_t>(req.batch * p.q_heads + req.head, 0, q_heads - 1))];
  add_trace_probes(out.probes, p, req,
                   {tr.trace_tile, tr.trace_m, tr.trace_l, tr.trace_bytes, trace_block, st.block_r, st.block_c,
                    "running sum ℓ after each KV tile",
                    fmt::format("bytes loaded by the traced row block so far (Q̂ᵢ and β, then {} Kⱼ, Vⱼ and scales)",
                                f8 ? "FP8" : "INT4")});
  add_lse_probe(out.probes, p, lse, "logsumexp L = m + log ℓ per row (FP32 ℓ of the unquantized P̃)");
  return out;
}

void validate(const Problem& p, const ParamValues& v, const std::string& where) {
  const int64_t top_k = v.integer("top_k");
  if (top_k > p.head_dim / 2)
    fail_input(where + ".top_k",
               fmt::format("must not exceed d/2 = {} outlier pairs (got {})", p.head_dim / 2, top_k));
}

// Storage (KV4Q8-FP, Eq. 1–2): Q in E4M3 with a BF16 β per token; the cache INT4 per token with one scale
// σ per token (E4M3, or FP32 with scale_format), codes packed per head; E4M3 operands in both products (the
// LUT turns INT4 codes into E4M3, P̃ in E4M3); O in BF16. A prefill with prefill_kv = fp8 reads K and V in
// E4M3 with BF16 scales instead (kv_in, App. D) — what the cost model's schedule reads — and, since decode
// reads the INT4 cache, writes that cache once (as kv_in declares; App. D's kernel timing leaves it out).
// kv_in is one TensorStorage for K and V, so it declares β_K's grouping for both: with fp8_k_scale = tile one β
// per KV tile, exact for both; with token a β per token for both, while the reference reads β_V once per KV
// tile: the schedule over-counts V's scales by 2·(1 − 1/B_c) bytes per token, of the 2d + 4 declared per token
// (1.5% at d = 64, 0.8% at d = 128); declaring V's apart would need kv_in split in two.
// Decode and the capacity model (a decode problem) see the INT4 cache alone.
Storage storage(const Problem& p, const ParamValues& v) {
  Storage s;
  s.q = s.k = s.v = s.p = kE4m3;
  s.o = kBf16;
  s.q_in = {kE4m3, kWhole, {{"β", kBf16, {1, kWhole}}}};
  s.cache.channels = p.head_dim;
  if (p.phase == Phase::prefill && v.choice("prefill_kv") == "fp8") {
    const int64_t per = v.choice("fp8_k_scale") == "tile" ? v.integer("block_c") : 1;  // β_K's tokens (β_V's: below)
    s.kv_in = TensorStorage{kE4m3, kWhole, {{"β", kBf16, {per, kWhole}}}};
  }
  const NumberFormat sigma = v.choice("scale_format") == "fp32" ? kFp32 : kE4m3;
  s.cache.classes = {{kOtherHeads, {int_format(4), kWhole, {{"σ_K", sigma, {1, kWhole}}}},
                      {int_format(4), kWhole, {{"σ_V", sigma, {1, kWhole}}}}}};
  return s;
}

}  // namespace

VariantSpec fireq() {
  VariantSpec v;
  v.id = "fireq";
  v.title = "FireQ: RPN + CRS smoothed INT4 K/V (E4M3 token scales), FP8 Q and P̃, INT4×FP8 products";
  v.source = "FireQ §2.1 Eq. 1–2, §3.1.1, §3.2.1 (RPN Thm 3.1, CRS), §3.2.2 Alg. 1";
  v.phases = {Phase::prefill, Phase::decode};
  v.storage = storage;
  v.params = {
      ParamSpec::choice("smoothing", "rpn_crs", {"rpn_crs", "crs", "rpn", "none"},
                        "key smoothing: RPN on regular pairs + CRS on top_k outlier pairs (§3.2.1), one of them, or none "
                        "(crs alone leaves the other pairs raw: the paper's CRS-only case is top_k = d/2)"),
      ParamSpec::integer("top_k", 8, 0, kMaxHeadDim / 2, "outlier pairs handled by CRS (App. E.1: 8); at most d/2"),
      ParamSpec::real("alpha", 8.0, 1e-3, 1e6, "RPN α: post-RoPE pair norms ≤ 1/α (Thm 3.1; App. E.1: 8)"),
      ParamSpec::real("beta", 8.0, 1e-3, 1e6, "CRS β: t_c = β·max|k_c| (App. E.1: 8)"),
      ParamSpec::choice("scale_format", "fp8_e4m3", {"fp8_e4m3", "fp32"},
                        "storage of the INT4 cache's per-token K/V scales σ: E4M3 as FireQ, or FP32 (ablation)"),
      ParamSpec::choice("int4_to_fp8", "lut", {"lut", "exact"},
                        "INT4 → FP8: the LUT of E4M3 entries FP8(code·σ) (§3.1.1 Step 1), or exact (ablation)"),
      ParamSpec::choice("prefill_kv", "int4", {"int4", "fp8"},
                        "K/V prefill reads: the INT4 cache (decode's, so decode repeats prefill's last row), or E4M3 "
                        "with BF16 scales, per token for K and per KV tile for V (App. D's prefill); decode always "
                        "reads the INT4 cache"),
      ParamSpec::choice("fp8_k_scale", "token", {"token", "tile"},
                        "prefill_kv = fp8: K̃'s BF16 β_K per token (Eq. 2's rule), or one per KV tile of block_c tokens "
                        "as β_V (Alg. 1 l. 8, 12 scale S by τ alone: a K scale constant over a tile folds into it)"),
      ParamSpec::choice("softmax_precision", "fp32", {"fp32", "fp16"},
                        "prefill's S, m and P̃: FP32, or FP16 as FireQ §3.2.2 (S rounded to FP16 after its FP32 scale, "
                        "in log₂ units, P̃ = 2^(S − m) in FP16; s, ℓ and O stay FP32); decode always FP32"),
      ParamSpec::choice("pipeline", "two_stage", {"two_stage", "three_stage"},
                        "the GPU prefill kernel's loop order: FlashAttention-3's two stages, or FireQ Alg. 1's three "
                        "(§3.2.2; head_dim 64 only); the reference's numbers do not depend on it"),
      ParamSpec::choice("kv_loads", "tma_producer", {"tma_producer", "cp_async"},
                        "the GPU prefill kernel's K/V loads in the FP8 mode: a producer warpgroup's TMA copies "
                        "(FlashAttention-3 §3.1's warp specialization, FireQ App. F Alg. 2), or every consumer thread's "
                        "cp.async (the INT4 mode always copies with cp.async); the reference's numbers do not depend on "
                        "it"),
      ParamSpec::integer("block_r", 128, 16, 256, "B_r: query rows per block (one CTA each)"),
      // 128: the sm_90a prefill kernel's KV tile (its V scale block), so the defaults run on it; the decode kernel
      // takes any B_c (its 64-key tiles and chains set their own running maxima: kernels/fireq/fireq_decode.cu).
      ParamSpec::integer("block_c", 128, 16, 256, "B_c: keys per KV tile of the inner loop"),
  };
  v.validate = validate;
  v.reference = run;
  v.working_memory = fireq_working_memory;
  return v;
}

}  // namespace attnlab::variants
