// attnlab core — reference of `turbo`: TurboAttention = FlashQ + SAS (Kang et al.; App. A Alg. 1
// prefill and Alg. 2 decode, §3.1–3.3, §4), in exact emulation.
//
// Per query row block Qᵢ (B_r rows) and KV tile j (turbo_cache.h says where the INT8 tiles come from):
//   Alg. 1 l. 7   s_Qᵢ = max|Qᵢ| / 119, Qᵢ^q1 = ⌈Qᵢ / s_Qᵢ⌋              (generic quantizer, block granularity)
//   Alg. 1 l. 8   Sᵢⱼ = s_Qᵢ·s_Kⱼ·(Qᵢ^q1 Kⱼ^q1ᵀ)·(1/√d)
//   Alg. 1 l. 9   mᵢ = max(mᵢ, rowmax Sᵢⱼ), P̃ = SAS(Sᵢⱼ − mᵢ), ℓᵢ = SAS(m_old − mᵢ)·ℓᵢ + rowsum P̃
//   Alg. 1 l. 10  s_P = max|P̃| / 119, Q(P̃) = ⌈P̃ / s_P⌋
//   Alg. 1 l. 11  Oᵢ = SAS(m_old − mᵢ)·Oᵢ + s_P·s_Vⱼ·(Q(P̃) Vⱼ^q1)
//   l. 20–22      Oᵢ = Oᵢ / ℓᵢ (stored FP16), Lᵢ = mᵢ + log ℓᵢ
// Alg. 2 is the same loop with one query row and the tiles read back from the compressed cache.
// Choices the paper leaves open, fixed here:
//   - Integer products: INT8·INT8 dot products of ≤ 256 terms are exact in FP32 GEMM on integer-valued
//     floats (|partial sums| ≤ 127·127·256 < 2²⁴), so S and Q(P̃)V equal the INT32 accumulation.
//   - Scales: the three factors of l. 8 are multiplied first, (s_Q·s_K)·(1/√d) in FP32, then the INT32
//     scores once by that product; l. 11's s_P·s_V likewise. Alg. 1 omits 1/√d; it belongs to S.
//   - The rescale multiplies Oᵢ (not its inverse as l. 11 prints; sas.h explains why).
//   - ℓ sums the FP32 P̃ (l. 9), not Q(P̃)·s_P: the paper quantizes P̃ only for the product.
//   - s_P is one scale per B_r × B_c tile, as l. 10 writes max over the tile (`p_scale = tile`); the
//     option `row` takes one per row, which a kernel can do at no extra cost (ablation). A tile whose
//     P̃ is all zero gets s_P = 1 (the generic quantizer's rule; Q(P̃) = 0).
//   - The exponential: SAS(t) (core/sas.h, FP32 or emulated FP16) or exact FP32 exp (`exact_exp`,
//     to isolate SAS's effect). The rescale factor uses the same function as P̃, as Alg. 1 does.
//   - `sas_share` splits P̃'s exponentials between the two (issue 35: SAS runs on the FMA pipe, exp on the SFU; a
//     kernel balances the two pipes as FlashAttention-4 does on Blackwell): of every 64 key columns of a tile (the
//     paper's B_c; eight n8 blocks of the MMA's score accumulator) the first 64·share take SAS, the other ones exact
//     FP32 exp (MixedExp below). share is a multiple of 1/8 — whole n8 blocks: every thread of a warp holds two
//     columns of each block, so a block's path is the same for the whole warp and no warp computes both (a finer
//     split would have threads of one warp on different paths, each warp then paying for both). The row's rescale
//     factor stays SAS's (one per row and tile: no pipe's load); share 1 is Alg. 1 (every exponential SAS), share 0
//     the exact_exp run, bit for bit.
//   - The cache Alg. 1 writes inside the i loop is written once (by the first row block): the same
//     blocks would otherwise be written T_r times.
//   - Decode splits each KV head's tiles into kv_splits chains merged in order (core/variants/
//     turbo_chains.h says why SAS makes that part of the function, and the merge rule); 1 is Alg. 2.
//   - Head bits (Eq. 11–12) are chosen per (sequence, KV head) from that sequence's prefill keys, the
//     n_h = two_bit_heads lowest-priority KV heads getting bits_lo, the others bits_hi, for both K and V.
//     The paper ranks "the heads of each layer"; under GQA the cache belongs to the KV heads.
#include "core/variants/shared_probes.h"
#include "core/variants/variants.h"

#include "core/error.h"
#include "core/formats/pack.h"
#include "core/formats/round.h"
#include "core/online_softmax.h"
#include "core/parallel.h"
#include "core/polyfit.h"
#include "core/quant/head_priority.h"
#include "core/variants/turbo_sas_share.h"
#include "core/quant/quantize.h"
#include "core/sas.h"
#include "core/variants/turbo_cache.h"
#include "core/variants/turbo_chains.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <vector>

namespace attnlab::variants {

namespace {

using turbo_detail::CacheStats;
using turbo_detail::Int8Tiles;

constexpr double kQMax8 = 119;  // Alg. 1 l. 7 and l. 10
constexpr double kF16 = 2.0, kF32 = 4.0;

struct MetricName {
  const char* name;
  quant::PriorityMetric metric;
};
constexpr std::array<MetricName, 4> kMetrics = {{{"gap_std", quant::PriorityMetric::gap_std},
                                                 {"entropy", quant::PriorityMetric::entropy},
                                                 {"min_max", quant::PriorityMetric::min_max},
                                                 {"variation", quant::PriorityMetric::variation}}};

// The "refit" polynomial: the 100-point uniform least-squares cubic of e^{−x} on [0, 1] (sas.h: the fit
// whose rounding gives Eq. 15's printed coefficients), at full precision.
std::array<double, 4> refit_poly() {
  static const std::array<double, 4> c = [] {
    const std::vector<double> fit = polyfit([](double x) { return std::exp(-x); }, 3, 0.0, 1.0, 100, Weighting::uniform);
    return std::array<double, 4>{fit[0], fit[1], fit[2], fit[3]};
  }();
  return c;
}

struct Settings {
  int64_t block_r, block_c;
  int bits_hi, bits_lo, two_bit_heads;
  quant::PriorityMetric metric;
  quant::IntScale rule;
  sas::Config sas;
  bool exact_exp, p_per_row;
  int sas_columns;  // of every 64 key columns of a tile, those whose P̃ takes SAS (sas_share · 64, whole n8 blocks)
  int64_t n_b, decode_steps, kv_splits;

  explicit Settings(const ParamValues& v)
      : block_r(v.integer("block_r")),
        block_c(v.integer("block_c")),
        bits_hi(static_cast<int>(v.integer("bits_hi"))),
        bits_lo(static_cast<int>(v.integer("bits_lo"))),
        two_bit_heads(static_cast<int>(v.integer("two_bit_heads"))),
        metric(std::find_if(kMetrics.begin(), kMetrics.end(),
                            [&](const MetricName& m) { return v.choice("priority") == m.name; })->metric),
        rule(v.choice("int_scale") == "up" ? quant::IntScale::up : quant::IntScale::nearest),
        exact_exp(v.flag("exact_exp")),
        p_per_row(v.choice("p_scale") == "row"),
        sas_columns(sas_blocks(v.real("sas_share")) * kSasBlock),
        n_b(v.integer("n_b")),
        decode_steps(v.integer("decode_steps")),
        kv_splits(v.integer("kv_splits")) {
    sas.n_r = static_cast<int>(v.integer("n_r"));
    if (v.choice("poly") == "refit") sas.poly = refit_poly();
    sas.precision = v.choice("sas_precision") == "fp16" ? sas::Precision::fp16 : sas::Precision::fp32;
  }
};

// P̃ with `sas_share` (head comment): column c of a tile takes SAS when c mod 64 < sas_columns, exact FP32 exp
// otherwise; the rescale factor is SAS's. Elementwise as SasExp and ExpF32 compute them: t = s − m in FP32, then
// sas_exp(t) or std::exp(t).
struct MixedExp {
  sas::Config c;
  int sas_columns;  // of every kSasSpan key columns, 8–56 (0 and 64 run ExpF32 and SasExp themselves)
  float operator()(float t) const { return sas::sas_exp(t, c); }
  template <class Row>
  void apply(Row&& seen, float m_new) const {
    for (int64_t k = 0; k < static_cast<int64_t>(seen.size()); ++k) {
      const float t = seen[k] - m_new;
      seen[k] = k % kSasSpan < sas_columns ? sas::sas_exp(t, c) : std::exp(t);
    }
  }
};

// What one query head's attention records for the probes.
struct HeadRecord {
  std::vector<float> s_q;         // (row blocks)
  std::vector<float> s_p;         // (row blocks × tiles), 0 where a tile was skipped
  int64_t visible = 0, zeroed = 0;  // visible scores, and those P̃ = 0 (below n_r, or exp underflow)
  double kv_rows = 0;               // K (= V) rows loaded over all row blocks
  std::vector<double> trace_tile, trace_m, trace_l, trace_bytes;
};

// Alg. 1 l. 7–11 for one query head against its KV head's INT8 tiles; O is (q_len, d).
// turbo_chains.h's merge of one chain's state into the accumulated one, row by row.
template <class Exp>
void merge_chain(OnlineSoftmax& acc, const OnlineSoftmax& part, Exp exp_fn) {
  for (int64_t r = 0; r < acc.G.rows(); ++r) {
    if (std::isinf(part.m[r])) continue;  // the chain saw no key of this row
    if (std::isinf(acc.m[r])) {
      acc.m[r] = part.m[r], acc.l[r] = part.l[r], acc.G.row(r) = part.G.row(r);
      continue;
    }
    const float m_new = std::max(acc.m[r], part.m[r]);
    const float alpha = exp_fn(acc.m[r] - m_new), beta = exp_fn(part.m[r] - m_new);
    acc.l[r] = alpha * acc.l[r] + beta * part.l[r];  // two rounded products, then the sum (no FMA)
    for (int64_t c = 0; c < acc.G.cols(); ++c) acc.G(r, c) = alpha * acc.G(r, c) + beta * part.G(r, c);
    acc.m[r] = m_new;
  }
}

// chain_start (chains + 1): chain c covers tiles [chain_start[c], chain_start[c + 1]) (turbo_chains.h).
template <class Exp>
void attend(const Problem& p, const Tensor::ConstMap& q, const Int8Tiles& kv, const Settings& s, Exp exp_fn,
            const std::vector<int64_t>& chain_start, int64_t trace_block, Tensor::Map o, float* lse,
            HeadRecord& rec) {
  const int64_t d = p.head_dim, Br = s.block_r, Tr = (p.q_len + Br - 1) / Br;
  const float softmax_scale = static_cast<float>(p.scale());
  RowMatrix<float> Qq;
  rec.s_q = [&] {  // l. 7 for every row block at once (the same integers as per block)
    const quant::Quantized qq = quant::quantize(
        q.data(), p.q_len, d,
        quant::Spec{.bits = 8, .granularity = quant::Granularity::block, .block_rows = Br, .q_max = kQMax8});
    Qq.resize(p.q_len, d);
    std::copy(qq.q.begin(), qq.q.end(), Qq.data());
    return qq.scale;
  }();
  rec.s_p.assign(static_cast<size_t>(Tr * kv.tiles()), 0.0f);
  OnlineSoftmax state, merged;
  RowMatrix<float> S, Pq, PV;
  Eigen::VectorXf s_p_rows;
  for (int64_t i = 0; i < Tr; ++i) {
    const int64_t row0 = i * Br, rows = std::min(Br, p.q_len - row0);
    const auto Qi = Qq.middleRows(row0, rows);
    const int64_t last_visible = p.visible_keys(row0 + rows - 1);  // causal: tiles past it are skipped
    double bytes = rows * d * kF16;
    for (size_t chain = 0; chain + 1 < chain_start.size(); ++chain) {
      state.reset(rows, d);
      for (int64_t j = chain_start[chain]; j < chain_start[chain + 1] && kv.start[j] < last_visible; ++j) {
        const int64_t col0 = kv.start[j], cols = kv.start[j + 1] - col0;
        bytes += 2 * cols * d * kF16;
        rec.kv_rows += double(cols);
        const float f_s = (rec.s_q[i] * kv.s_k[j]) * softmax_scale;
        S.noalias() = Qi * kv.k.middleRows(col0, cols).transpose();  // exact INT32 (see the head comment)
        S *= f_s;                                                       // l. 8
        auto visible = [&](int64_t r) { return std::clamp<int64_t>(p.visible_keys(row0 + r) - col0, 0, cols); };
        state.step(S, visible, exp_fn);  // l. 9: S now holds P̃ (masked entries 0)
        for (int64_t r = 0; r < rows; ++r) {
          const int64_t vis = visible(r);
          rec.visible += vis;
          rec.zeroed += vis - (S.row(r).head(vis).array() > 0.0f).count();
        }
        // l. 10: s_P and Q(P̃) = ⌈P̃ / s_P⌋ (FP32 division, ties to even; P̃ ≥ 0 and ≤ max, no clamping).
        const float top = static_cast<float>(kQMax8);
        if (s.p_per_row) {
          s_p_rows.resize(rows);
          for (int64_t r = 0; r < rows; ++r) s_p_rows[r] = quant::scale_for_span(S.row(r).maxCoeff(), top);
          Pq = (S.array().colwise() / s_p_rows.array()).rint().matrix();
          rec.s_p[i * kv.tiles() + j] = s_p_rows.maxCoeff();
        } else {
          const float s_p = quant::scale_for_span(S.maxCoeff(), top);
          Pq = (S.array() / s_p).rint().matrix();
          s_p_rows.setConstant(rows, s_p);
          rec.s_p[i * kv.tiles() + j] = s_p;
        }
        // l. 11: G += s_P·s_V·(Q(P̃)·Vⱼ) — the integer product exactly, then per element one rounded
        // product by fl(s_P·s_V) and one rounded sum (a fused multiply-add would round once: the kernels
        // round twice, and so does this loop).
        PV.noalias() = Pq * kv.v.middleRows(col0, cols);
        for (int64_t r = 0; r < rows; ++r) {
          const float f = s_p_rows[r] * kv.s_v[j];
          for (int64_t c = 0; c < d; ++c) state.G(r, c) = state.G(r, c) + PV(r, c) * f;
        }
        if (i == trace_block) {
          rec.trace_tile.push_back(double(j));
          rec.trace_m.insert(rec.trace_m.end(), state.m.data(), state.m.data() + rows);
          rec.trace_l.insert(rec.trace_l.end(), state.l.data(), state.l.data() + rows);
          rec.trace_bytes.push_back(bytes);
        }
      }
      if (chain == 0) merged = state;
      else merge_chain(merged, state, exp_fn);
    }
    auto Oi = o.middleRows(row0, rows);
    merged.finish(Oi, lse + row0);                       // l. 20–21
    formats::round_fp16_inplace(Oi.data(), Oi.size());  // O stored in FP16
  }
}

// The 2-bit heads of one sequence (Eq. 11–12) from the KV heads' prefill keys, under every metric.
struct Priorities {
  std::vector<std::vector<double>> by_metric;  // [metric][b·H_kv + h]
  std::vector<int> bits;                       // (B·H_kv)
};

Priorities choose_bits(const Problem& p, const QKV& in, const Settings& s) {
  const int64_t prefilled = p.kv_len - (p.phase == Phase::decode ? s.decode_steps : 0);
  const int64_t heads = p.batch * p.kv_heads;
  Priorities pr;
  pr.by_metric.assign(kMetrics.size(), std::vector<double>(static_cast<size_t>(heads)));
  parallel_for(heads, [&](int64_t bh) {
    const float* k = in.k.head(bh / p.kv_heads, bh % p.kv_heads).data();
    for (size_t m = 0; m < kMetrics.size(); ++m)
      pr.by_metric[m][bh] = quant::head_priority(k, prefilled, p.head_dim, kMetrics[m].metric);
  });
  const size_t chosen = static_cast<size_t>(
      std::find_if(kMetrics.begin(), kMetrics.end(), [&](const MetricName& m) { return m.metric == s.metric; }) -
      kMetrics.begin());
  for (int64_t b = 0; b < p.batch; ++b) {
    const auto first = pr.by_metric[chosen].begin() + b * p.kv_heads;
    const std::vector<int> bits =
        quant::assign_bits(std::vector<double>(first, first + p.kv_heads), s.two_bit_heads, s.bits_lo, s.bits_hi);
    pr.bits.insert(pr.bits.end(), bits.begin(), bits.end());
  }
  return pr;
}

ReferenceOutput run(const Problem& p, const QKV& in, const ParamValues& params, const ProbeRequest& req) {
  const Settings s(params);
  const bool decode = p.phase == Phase::decode;
  const int64_t d = p.head_dim, kv_heads = p.batch * p.kv_heads, q_heads = p.batch * p.q_heads;
  const Priorities pr = choose_bits(p, in, s);

  // The INT8 tiles of every KV head, and the cache each writes (prefill) or holds (decode).
  std::vector<Int8Tiles> tiles(static_cast<size_t>(kv_heads));
  std::vector<CacheStats> cache(static_cast<size_t>(kv_heads));
  parallel_for(kv_heads, [&](int64_t bh) {
    const int64_t b = bh / p.kv_heads, h = bh % p.kv_heads;
    const float* k = in.k.head(b, h).data();
    const float* v = in.v.head(b, h).data();
    if (decode) {
      const turbo_detail::DecodeSettings ds{s.block_c, kQMax8, pr.bits[bh], s.rule, s.n_b, s.decode_steps};
      tiles[bh] = turbo_detail::decode_tiles(k, v, p.kv_len, d, ds, cache[bh]);
    } else {
      tiles[bh] = turbo_detail::prefill_tiles(k, v, p.kv_len, d, s.block_c, kQMax8);
      cache[bh] = turbo_detail::cache_of(tiles[bh], pr.bits[bh], s.rule);
    }
  });

  ReferenceOutput out;
  out.o = Tensor(p.q_shape());
  Tensor lse({p.batch, p.q_heads, p.q_len, 1});
  std::vector<HeadRecord> rec(static_cast<size_t>(q_heads));
  const int64_t Tr = (p.q_len + s.block_r - 1) / s.block_r;
  const int64_t trace_block = traced_row_block(req, Tr);
  // Decode's chains (turbo_chains.h); prefill is one chain. Every head has the same tile count.
  const int64_t T = tiles[0].tiles();
  const bool narrow = std::all_of(pr.bits.begin(), pr.bits.end(), [](int b) { return b == 2; });  // every pair 2-bit
  const int64_t C = decode ? turbo_chains::chains(s.kv_splits, kv_heads, T, d, p.group(), narrow) : 1;
  std::vector<int64_t> chain_start;
  for (int64_t c = 0; c <= C; ++c) chain_start.push_back(turbo_chains::first_tile(c, C, T));
  parallel_for(q_heads, [&](int64_t bh) {
    const int64_t b = bh / p.q_heads, h = bh % p.q_heads;
    const Int8Tiles& kv = tiles[b * p.kv_heads + p.kv_head_of(h)];
    const int64_t traced = b == req.batch && h == req.head ? trace_block : -1;
    float* l = lse.data() + lse.offset(b, h, 0);
    if (s.exact_exp || s.sas_columns == 0)
      attend(p, in.q.head(b, h), kv, s, ExpF32{}, chain_start, traced, out.o.head(b, h), l, rec[bh]);
    else if (s.sas_columns == kSasSpan)
      attend(p, in.q.head(b, h), kv, s, sas::SasExp{s.sas}, chain_start, traced, out.o.head(b, h), l, rec[bh]);
    else
      attend(p, in.q.head(b, h), kv, s, MixedExp{s.sas, s.sas_columns}, chain_start, traced, out.o.head(b, h), l,
             rec[bh]);
  });

  // Probes: scales per block, channel ranges, priorities and bits, SAS sparsity, the cache, HBM bytes.
  std::vector<std::vector<float>> s_q, s_p, s_k, s_v, bits(1);
  for (const auto& r : rec) s_q.push_back(r.s_q), s_p.push_back(r.s_p);
  for (const auto& t : tiles) s_k.push_back(t.s_k), s_v.push_back(t.s_v);
  out.probes["scales.q"] = per_head(p, p.q_heads, s_q, "s_Q = max|Qᵢ|/119 per query row block (Alg. 1 l. 7)");
  out.probes["scales.k"] = per_head(p, p.kv_heads, s_k, "s_K per KV tile: max|Kⱼ|/119 (the universal scale for decode-buffer tiles)");
  out.probes["scales.v"] = per_head(p, p.kv_heads, s_v, "s_V per KV tile: max|Vⱼ|/119 (the universal scale for decode-buffer tiles)");
  ProbeArray sp = per_head(p, p.q_heads, s_p, s.p_per_row ? "largest per-row s_P of each (row block, KV tile); 0 = skipped"
                                                           : "s_P = max P̃/119 of each (row block, KV tile) (Alg. 1 l. 10); 0 = skipped");
  sp.shape = {p.batch, p.q_heads, Tr, tiles[0].tiles()};
  out.probes["scales.p"] = std::move(sp);
  add_channel_probes(out.probes, p, in);
  for (size_t m = 0; m < kMetrics.size(); ++m) {
    const std::vector<double>& v = pr.by_metric[m];
    out.probes[fmt::format("priority.{}", kMetrics[m].name)] = {
        {p.batch, p.kv_heads}, v, {}, "",
        m == 0 ? "Eq. 11: gap × std of channel gaps, per KV head (keys); lowest n_h drop to bits_lo"
               : "§5.6 ablation metric per KV head (keys)"};
  }
  out.probes["kv_bits"] = {{p.batch, p.kv_heads}, {pr.bits.begin(), pr.bits.end()}, {}, "bits",
                           "cache bit width per KV head (Eq. 12)"};
  int64_t visible = 0, zeroed = 0;
  double kv_rows = 0;
  for (const auto& r : rec) visible += r.visible, zeroed += r.zeroed, kv_rows += r.kv_rows;
  out.probes["sas.zeroed_fraction"] = labelled(
      {"zeroed", "visible", "fraction"}, {double(zeroed), double(visible), visible ? double(zeroed) / visible : 0.0},
      "", "visible scores whose P̃ is exactly 0 (SAS: below n_r; exact exp: underflow)");
  if (!s.exact_exp) {  // SAS against exp over [n_r, 0] (the curve the GUI's SAS panel draws)
    const sas::ErrorTable e = sas::error_table(s.sas, 121);
    const int64_t n = static_cast<int64_t>(e.t.size());
    out.probes["sas.curve.t"] = {{n}, e.t, {}, "logit", "t = s − m over [n_r, 0]"};
    out.probes["sas.curve.exp"] = {{n}, e.exact, {}, "", "e^t"};
    out.probes["sas.curve.sas"] = {{n}, e.approx, {}, "", "SAS(t): LUT × POLY, 0 below n_r (Eq. 13–15)"};
    out.probes["sas.error"] = labelled({"max_abs", "max_rel"}, {e.max_abs, e.max_rel}, "",
                                       "largest |SAS − exp| and |SAS − exp|/exp over [n_r, 0]");
  }
  CacheStats total;
  for (const auto& c : cache) {
    total.code_bytes += c.code_bytes, total.scale_zero_bytes += c.scale_zero_bytes;
    total.block_scale_bytes += c.block_scale_bytes, total.buffer_bytes += c.buffer_bytes;
    total.step2_clamped += c.step2_clamped, total.saturated += c.saturated;
    total.buffer_clamped += c.buffer_clamped, total.flushes += c.flushes, total.buffer_tokens += c.buffer_tokens;
  }
  out.probes["kv_cache.bytes"] = labelled(
      {"codes", "scales_zeros", "block_scales", "buffer"},
      {double(total.code_bytes), double(total.scale_zero_bytes), double(total.block_scale_bytes), double(total.buffer_bytes)},
      "bytes", "compressed KV cache: packed codes, integer scales and zero points, FP32 block scales, INT8 buffer");
  out.probes["clamped"] = labelled(
      {"cache_step2", "cache_saturated", "buffer"},
      {double(total.step2_clamped), double(total.saturated), double(total.buffer_clamped)}, "values",
      "step-2 quotients clamped to [0, 2^b − 1]; dequantized values saturated to ±127; buffer outliers clamped");
  if (decode)
    out.probes["decode_buffer"] = labelled({"flushes_per_head", "pending_tokens_per_head"},
                                           {double(total.flushes) / kv_heads, double(total.buffer_tokens) / kv_heads},
                                           "", "decode-buffer flushes and pending tokens after decode_steps appends");
  // HBM traffic. Prefill (Alg. 1): Q, K, V read in FP16 (quantized on chip), K and V once per row block
  // that needs them, O written in FP16 and L in FP32, the cache written once. Decode (Alg. 2): q read,
  // the cache and the buffer read once per (batch, KV head) — the decode kernel holds the query heads of a
  // KV head in one MMA, so every tile it loads serves the whole group (GQA) — O and L written. Either way
  // the cache's bytes move once: read in decode, written in prefill.
  const double qo = double(q_heads) * p.q_len * d * kF16;
  const double kv_read = decode ? 0.0 : kv_rows * d * kF16;
  const double cache_bytes = double(total.total());
  out.probes["hbm_bytes"] = labelled(
      {"q", "k", "v", "o", "lse", "kv_cache"},
      {qo, kv_read, kv_read, qo, double(q_heads) * p.q_len * kF32, cache_bytes}, "bytes",
      decode ? "Alg. 2: q in, the compressed cache and INT8 buffer read once per (batch, KV head), its query "
               "heads sharing every tile; O and L out"
             : "Alg. 1: FP16 Q/K/V in (K, V once per row block), O and L out, compressed cache written once");
  const HeadRecord& tr = rec[static_cast<size_t>(std::clamp<int64_t>(req.batch * p.q_heads + req.head, 0, q_heads - 1))];
  add_trace_probes(out.probes, p, req,
                   {tr.trace_tile, tr.trace_m, tr.trace_l, tr.trace_bytes, trace_block, s.block_r, s.block_c,
                    "running sum ℓ after each KV tile (SAS-rescaled)",
                    "bytes loaded by the traced row block so far"});
  add_lse_probe(out.probes, p, lse, "logsumexp L = m + log ℓ per row (Alg. 1 l. 21)");
  out.kv_cache_bytes = total.total();
  return out;
}

void validate(const Problem& p, const ParamValues& v, const std::string& where) {
  const int64_t hi = v.integer("bits_hi"), lo = v.integer("bits_lo");
  if (hi != 4 && hi != 8) fail_input(where + ".bits_hi", fmt::format("must be 4 or 8 (got {})", hi));
  if (lo != 2 && lo != 4) fail_input(where + ".bits_lo", fmt::format("must be 2 or 4 (got {})", lo));
  if (lo > hi) fail_input(where + ".bits_lo", fmt::format("must not exceed bits_hi ({} > {})", lo, hi));
  if (v.integer("two_bit_heads") > p.kv_heads)
    fail_input(where + ".two_bit_heads",
               fmt::format("must not exceed the KV heads ({} > {})", v.integer("two_bit_heads"), p.kv_heads));
  const int64_t steps = v.integer("decode_steps");
  if (p.phase == Phase::prefill && steps != 0)
    fail_input(where + ".decode_steps", fmt::format("applies to phase decode only (got {} with prefill)", steps));
  if (p.phase == Phase::prefill && v.integer("kv_splits") != 0)
    fail_input(where + ".kv_splits", fmt::format("applies to phase decode only (got {} with prefill)", v.integer("kv_splits")));
  const double blocks = v.real("sas_share") * (kSasSpan / kSasBlock);
  if (std::abs(blocks - std::round(blocks)) > 1e-9)
    fail_input(where + ".sas_share", fmt::format("must be a multiple of 1/8 (of every 64 key columns, how many 8-key "
                                                 "blocks take SAS; got {})", v.real("sas_share")));
  if (v.flag("exact_exp") && v.real("sas_share") != 1.0)
    fail_input(where + ".sas_share", "exact_exp already sends every exponential to exp: leave sas_share at 1");
  if (p.phase == Phase::decode && steps >= p.kv_len)
    fail_input(where + ".decode_steps",
               fmt::format("must be below kv_len, leaving at least one prefill token (got {} with kv_len {})", steps,
                           p.kv_len));
}

// Storage (Alg. 1–2, §3.1–3.3): Q, K, V read in FP16 and quantized to INT8 on chip, INT8 in both products
// (P̃ too), O in FP16. The cache, in blocks of B_c tokens: the n_h = two_bit_heads lowest-priority KV heads
// of each sequence at bits_lo, the others at bits_hi, codes packed per block; per block s_int and z_int
// (INT8, per channel) and the FP32 block scale s_K (s_V) — a head kept at 8 bits stores the INT8 block and
// its scale only. Decode appends its tokens to the INT8 buffer of n_b tokens with one universal FP32 scale
// per head and tensor, flushed as an n_b-token block.
Storage storage(const Problem& p, const ParamValues& v) {
  Storage s;
  s.q = s.k = s.v = s.p = kInt8;
  s.o = kFp16;
  s.q_in = unscaled(kFp16);
  if (p.phase == Phase::prefill) {
    s.kv_in = unscaled(kFp16);
    // Across GPUs the ring sends the INT8 tiles Alg. 1's attention reads (l. 7's K^q1, V^q1: Eq. 9 per block of
    // B_c tokens, one FP32 scale each; kernels/turbo/turbo_ring.cpp), not the FP16 K and V.
    s.kv_wire = TensorStorage{kInt8, kWhole, {{"s", kFp32, {v.integer("block_c"), kWhole}}}};
  }
  s.decode_steps = p.phase == Phase::decode ? v.integer("decode_steps") : 0;
  s.cache.channels = p.head_dim;
  s.cache.block_tokens = v.integer("block_c");
  auto tensor = [](int bits, const char* block_scale) {
    TensorStorage t{int_format(bits), kPerBlock, {}};
    if (bits < 8) t.scales = {{"s_int", kInt8, {kPerBlock, 1}}, {"z_int", kInt8, {kPerBlock, 1}}};
    t.scales.push_back({block_scale, kFp32, {kPerBlock, kWhole}});
    return t;
  };
  const int hi = static_cast<int>(v.integer("bits_hi")), lo = static_cast<int>(v.integer("bits_lo"));
  if (const int64_t n_h = v.integer("two_bit_heads"); n_h > 0)
    s.cache.classes.push_back({n_h, tensor(lo, "s_K"), tensor(lo, "s_V")});
  s.cache.classes.push_back({kOtherHeads, tensor(hi, "s_K"), tensor(hi, "s_V")});
  s.cache.buffer = {v.integer("n_b"), kInt8, {{"s_universal", kFp32, {kWhole, kWhole}}}};
  return s;
}

}  // namespace

namespace turbo_detail {
std::vector<int> kv_head_bits(const Problem& p, const QKV& in, const ParamValues& params) {
  return choose_bits(p, in, Settings(params)).bits;
}
quant::PriorityMetric priority_metric(const ParamValues& params) { return Settings(params).metric; }
std::array<double, 4> refit_polynomial() { return refit_poly(); }
}  // namespace turbo_detail

VariantSpec turbo() {
  VariantSpec v;
  v.id = "turbo";
  v.title = "TurboAttention: INT8 FlashQ blocks, SAS softmax, progressive INT4/INT2 KV cache";
  v.source = "TurboAttention App. A Alg. 1 (prefill), Alg. 2 (decode), §3.1–3.3, §4 (SAS)";
  v.phases = {Phase::prefill, Phase::decode};
  v.storage = storage;
  v.params = {
      ParamSpec::integer("block_r", 64, 1, 256, "B_r: query rows per block (the paper fixes 64)"),
      ParamSpec::integer("block_c", 64, 16, 256, "B_c: keys per KV tile and per cache block (the paper fixes 64)"),
      ParamSpec::integer("bits_hi", 4, 4, 8, "cache bits of the high-priority KV heads: 4, or 8 to keep INT8"),
      ParamSpec::integer("bits_lo", 2, 2, 4, "cache bits of the n_h lowest-priority KV heads: 2 or 4"),
      ParamSpec::integer("two_bit_heads", 0, 0, 1024, "n_h: KV heads per sequence dropped to bits_lo (Eq. 12)"),
      ParamSpec::choice("priority", "gap_std", {"gap_std", "entropy", "min_max", "variation"},
                        "head priority metric: Eq. 11 or a §5.6 ablation baseline"),
      ParamSpec::choice("int_scale", "nearest", {"nearest", "up"},
                        "step-2 integer scale rounding: Alg. 1 (nearest) or ceiling (covers the range)"),
      ParamSpec::integer("n_r", -6, -sas::kMaxRange, 0, "SAS threshold: scores below max + n_r get P̃ = 0 (Eq. 14)"),
      ParamSpec::choice("poly", "paper", {"paper", "refit"}, "SAS polynomial: Eq. 15's printed or our 100-point refit"),
      ParamSpec::choice("sas_precision", "fp32", {"fp32", "fp16"}, "SAS arithmetic: FP32, or emulated FP16 HFMA"),
      ParamSpec::boolean("exact_exp", false, "use exact FP32 exp instead of SAS (isolates SAS's effect)"),
      ParamSpec::real("sas_share", 1.0, 0.0, 1.0,
                      "share of P̃'s exponentials computed by SAS (FMA pipe), the rest exact exp (SFU): of every 64 "
                      "key columns of a tile the first 64·share; a multiple of 1/8, whole 8-key blocks (1 = Alg. 1)"),
      ParamSpec::choice("p_scale", "tile", {"tile", "row"}, "s_P per B_r×B_c tile (Alg. 1 l. 10) or per row"),
      ParamSpec::integer("n_b", 64, 1, 4096, "decode-buffer capacity: INT8 tokens before a flush (§3.3)"),
      ParamSpec::integer("decode_steps", 0, 0, 1 << 20,
                         "decode: the last tokens of the KV appended one by one through the buffer"),
      ParamSpec::integer("kv_splits", 0, 0, 4096,
                         "decode: chains each KV head's tiles are split into and merged (1 = Alg. 2's one "
                         "loop; 0 = auto from the shape, as the kernel runs)"),
      ParamSpec::choice("kv_loads", "tma_producer", {"tma_producer", "cp_async"},
                        "the prefill kernel's K/V loads: a producer warpgroup's TMA copies (FlashAttention-3 §3.1's "
                        "warp specialization), or every thread's cp.async; the numbers do not depend on it"),
  };
  v.validate = validate;
  v.reference = run;
  v.working_memory = turbo_working_memory;
  return v;
}

}  // namespace attnlab::variants
