// attnlab core — reference of `kivi`: attention over a KIVI-compressed KV cache (Liu et al., KIVI), the
// baseline of TurboAttention §5.3 ("compresses the key cache per-channel and the value cache per-token
// using fine-grained grouping", the most recent tokens "in full precision"), which §2.4 and §5.5 describe
// as decompressing the cache to FP16 before running FlashAttention.
//
// Pipeline, per (batch, KV head):
//   1. quant::kivi_quantize (core/quant/kivi.h states the scheme): K and V rounded to FP16, the leading
//      ⌊(N − R)/g⌋·g tokens quantized asymmetrically to `bits` (keys per channel in groups of g tokens,
//      values per token in groups of g channels, FP16 scale and zero point per group), the rest (the
//      residual window, R ≤ tokens < R + g) kept in FP16.
//   2. quant::kivi_dequantize: the FP16 K̂, V̂ the attention reads (x̂ = fp16(q·s + z); residual as is).
//   3. Exactly the arithmetic of `flash2` (variants/flash2.cpp) on Q and K̂, V̂: Q stored in FP16,
//      S = QᵢK̂ⱼᵀ·scale, running max/sum and exp in FP32, P̃ rounded to FP16 before P̃V̂ⱼ (ℓ sums the FP32
//      P̃), O accumulated in FP32 and stored in FP16, L = m + log ℓ. The loop below is a copy of
//      flash2's, expression for expression, so that with nothing quantized (R ≥ N) the output equals
//      flash2's bit for bit (tested).
// Choices:
//   - Phases: KIVI compresses the cache that decode reads; its own first prefill attends to the FP16
//     K and V (that is `flash2`). Decode is this variant's phase. The same code serves any number of
//     query rows attending to an already-compressed cache (a chunked prefill or a multi-token verify
//     step), so `prefill` is accepted with that meaning: the whole K/V of the problem is the cache.
//   - bits ∈ {2, 4, 8}, an integer parameter checked by the ValidateFn (the quantizer's widths). 2 is
//     KIVI's headline width, 4 the setting TurboAttention compares against; 8 separates the scheme's
//     structure from the width (tested: flash2 plus an 8-bit-sized error).
//   - The whole problem's K/V is one cache written at once: the split point between the quantized
//     tokens and the FP16 residual is kivi.h's, ⌊(N − R)/g⌋·g.
//   - HBM traffic: the decode kernel reads the compressed cache (packed codes, FP16 scale and zero per
//     group, FP16 residual) once per query row block and per query head (GQA heads each read their KV
//     head's cache, like `turbo`), dequantizing on chip; it never reads an FP16 K or V from HBM (the
//     k and v entries are 0). Causal row blocks read only the tiles they need.
#include "core/variants/trace.h"
#include "core/variants/variants.h"

#include "core/error.h"
#include "core/formats/pack.h"
#include "core/formats/round.h"
#include "core/online_softmax.h"
#include "core/parallel.h"
#include "core/quant/kivi.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

namespace attnlab::variants {

namespace {

constexpr double kF16 = 2.0, kF32 = 4.0;  // bytes per element

// One copy of a head's matrix, rounded to FP16 as it sits in HBM (as flash2).
RowMatrix<float> stored_fp16(const Tensor::ConstMap& x) {
  RowMatrix<float> r = x;
  formats::round_fp16_inplace(r.data(), r.size());
  return r;
}

// One KV head: the compressed cache and what the attention reads from it.
struct KvHead {
  quant::KiviCache cache;
  RowMatrix<float> k, v;                   // (N, d) dequantized FP16 values (kivi_dequantize)
  std::vector<float> k_min, k_max, v_min, v_max;  // (d) per-channel range before quantization
};

// The parts of one head's cache, in bytes, when a kernel reads its first `tokens` tokens (the tiles a
// row block needs): packed codes of the quantized tokens read, the FP16 scale and zero point of every
// group they touch, and the FP16 residual tokens read. With tokens = N this is quant::kivi_cache_bytes.
struct CacheBytes {
  double codes = 0, scales_zeros = 0, residual = 0;
  double total() const { return codes + scales_zeros + residual; }
};

CacheBytes cache_bytes(const quant::KiviCache& c, int64_t tokens) {
  const int64_t q = std::min(tokens, c.quantized_tokens), r = std::max<int64_t>(0, tokens - c.quantized_tokens);
  const int64_t d = c.channels;
  const int64_t k_groups = (q + c.group - 1) / c.group * d;  // group_tokens: g tokens × 1 channel
  const int64_t v_groups = q * ((d + c.group - 1) / c.group);  // group_channels: 1 token × g channels
  CacheBytes b;
  b.codes = 2.0 * double(formats::packed_bytes(q * d, c.bits));
  b.scales_zeros = 2.0 * kF16 * double(k_groups + v_groups);
  b.residual = 2.0 * kF16 * double(r * d);
  return b;
}

// Per-channel min and max over tokens of one head (tokens, d), for the probes.
void channel_range(const Tensor::ConstMap& x, std::vector<float>& lo, std::vector<float>& hi) {
  const Eigen::RowVectorXf mn = x.colwise().minCoeff(), mx = x.colwise().maxCoeff();
  lo.assign(mn.data(), mn.data() + mn.size());
  hi.assign(mx.data(), mx.data() + mx.size());
}

struct Trace {  // the online-softmax trace of the requested row block
  std::vector<double> kv_tile, m, l, bytes;
};

ProbeArray per_head(const Problem& p, int64_t heads, int64_t n, const std::vector<const std::vector<float>*>& rows,
                    std::string unit, std::string help) {
  ProbeArray a{{p.batch, heads, n}, {}, {}, std::move(unit), std::move(help)};
  a.values.reserve(static_cast<size_t>(p.batch * heads * n));
  for (const auto* r : rows) a.values.insert(a.values.end(), r->begin(), r->end());
  return a;
}

ReferenceOutput run(const Problem& p, const QKV& in, const ParamValues& params, const ProbeRequest& req) {
  const int64_t Br = params.integer("block_r"), Bc = params.integer("block_c");
  const int bits = static_cast<int>(params.integer("bits"));
  const int64_t group = params.integer("group"), residual = params.integer("residual");
  const int64_t Tr = (p.q_len + Br - 1) / Br;
  const float scale = static_cast<float>(p.scale());
  const int64_t d = p.head_dim, kv_heads = p.batch * p.kv_heads;

  // 1–2: compress every KV head's cache and read it back (TurboAttention §5.3's description of KIVI).
  std::vector<KvHead> kv(static_cast<size_t>(kv_heads));
  parallel_for(kv_heads, [&](int64_t bh) {
    const int64_t b = bh / p.kv_heads, h = bh % p.kv_heads;
    const float* k = in.k.head(b, h).data();
    const float* v = in.v.head(b, h).data();
    KvHead& x = kv[bh];
    x.cache = quant::kivi_quantize(k, v, p.kv_len, d, bits, group, residual);
    x.k.resize(p.kv_len, d);
    x.v.resize(p.kv_len, d);
    quant::kivi_dequantize(x.cache, x.k.data(), x.v.data());
    channel_range(in.k.head(b, h), x.k_min, x.k_max);
    channel_range(in.v.head(b, h), x.v_min, x.v_max);
  });

  // 3: flash2's loop on Q (FP16) and the dequantized cache.
  ReferenceOutput out;
  out.o = Tensor(p.q_shape());
  Tensor lse({p.batch, p.q_heads, p.q_len, 1});
  std::vector<double> cache_read(static_cast<size_t>(p.batch * p.q_heads), 0.0);  // cache bytes read per head
  std::vector<double> kv_tiles_read(static_cast<size_t>(p.batch * p.q_heads), 0.0);
  Trace trace;
  const int64_t trace_block = std::clamp<int64_t>(req.row_block, 0, Tr - 1);

  parallel_for(p.batch * p.q_heads, [&](int64_t bh) {
    const int64_t b = bh / p.q_heads, h = bh % p.q_heads, kvh = p.kv_head_of(h);
    const RowMatrix<float> Q = stored_fp16(in.q.head(b, h));
    const KvHead& x = kv[b * p.kv_heads + kvh];
    const RowMatrix<float>& K = x.k;
    const RowMatrix<float>& V = x.v;
    const bool traced = b == req.batch && h == req.head;
    OnlineSoftmax state;
    RowMatrix<float> S;
    for (int64_t i = 0; i < Tr; ++i) {  // one CTA per (batch, head, row block)
      const int64_t row0 = i * Br, rows = std::min(Br, p.q_len - row0);
      const auto Qi = Q.middleRows(row0, rows);
      state.reset(rows, p.head_dim);
      const int64_t tiles = (p.visible_keys(row0 + rows - 1) + Bc - 1) / Bc;  // causal: later tiles skipped
      const int64_t tokens_read = std::min(tiles * Bc, p.kv_len);
      cache_read[bh] += cache_bytes(x.cache, tokens_read).total();
      double bytes = rows * double(d) * kF16;
      for (int64_t j = 0; j < tiles; ++j) {
        const int64_t col0 = j * Bc, cols = std::min(Bc, p.kv_len - col0);
        const auto Kj = K.middleRows(col0, cols);  // dequantized on chip from the cache
        const auto Vj = V.middleRows(col0, cols);
        bytes = rows * double(d) * kF16 + cache_bytes(x.cache, col0 + cols).total();
        S.noalias() = (Qi * Kj.transpose()) * scale;  // Sᵢⱼ = QᵢK̂ⱼᵀ/√d
        auto visible = [&](int64_t r) { return std::clamp<int64_t>(p.visible_keys(row0 + r) - col0, 0, cols); };
        state.step(S, visible, ExpF32{});
        formats::round_fp16_inplace(S.data(), S.size());  // P̃ enters the FP16 product
        state.G.noalias() += S * Vj;                      // Gᵢ += P̃ᵢⱼV̂ⱼ
        if (traced && i == trace_block) {
          trace.kv_tile.push_back(double(j));
          trace.m.insert(trace.m.end(), state.m.data(), state.m.data() + rows);
          trace.l.insert(trace.l.end(), state.l.data(), state.l.data() + rows);
          trace.bytes.push_back(bytes);
        }
      }
      kv_tiles_read[bh] += double(tiles);
      auto Oi = out.o.head(b, h).middleRows(row0, rows);
      state.finish(Oi, lse.data() + lse.offset(b, h, row0));
      formats::round_fp16_inplace(Oi.data(), Oi.size());  // O stored in FP16
    }
  });

  // Probes: the groups' scales, the channel ranges KIVI's per-channel keys answer to, the cache.
  const quant::KiviCache& c0 = kv[0].cache;
  const int64_t k_groups = c0.keys.groups(), v_groups = c0.values.groups();  // the same for every head
  std::vector<const std::vector<float>*> sk, sv, kmin, kmax, vmin, vmax;
  CacheBytes total;
  double clamped_k = 0, clamped_v = 0;
  for (const KvHead& x : kv) {
    sk.push_back(&x.cache.keys.scale), sv.push_back(&x.cache.values.scale);
    kmin.push_back(&x.k_min), kmax.push_back(&x.k_max), vmin.push_back(&x.v_min), vmax.push_back(&x.v_max);
    const CacheBytes cb = cache_bytes(x.cache, p.kv_len);
    total.codes += cb.codes, total.scales_zeros += cb.scales_zeros, total.residual += cb.residual;
    clamped_k += double(x.cache.keys.stats.clamped), clamped_v += double(x.cache.values.stats.clamped);
    out.kv_cache_bytes += quant::kivi_cache_bytes(x.cache);
  }
  out.probes["scales.k"] = per_head(p, p.kv_heads, k_groups, sk, "",
                                    "key group scales s (FP16), per channel in groups of g tokens; group index "
                                    "(t / g)·d + c (quantize.h group_tokens)");
  out.probes["scales.v"] = per_head(p, p.kv_heads, v_groups, sv, "",
                                    "value group scales s (FP16), per token in groups of g channels; group index "
                                    "t·⌈d/g⌉ + c / g (quantize.h group_channels)");
  out.probes["channels.k.min"] = per_head(p, p.kv_heads, d, kmin, "", "per-channel minimum of K over tokens, before quantization");
  out.probes["channels.k.max"] = per_head(p, p.kv_heads, d, kmax, "", "per-channel maximum of K over tokens, before quantization");
  out.probes["channels.v.min"] = per_head(p, p.kv_heads, d, vmin, "", "per-channel minimum of V over tokens, before quantization");
  out.probes["channels.v.max"] = per_head(p, p.kv_heads, d, vmax, "", "per-channel maximum of V over tokens, before quantization");
  out.probes["kv_cache.bytes"] = labelled({"codes", "scales_zeros", "residual"},
                                          {total.codes, total.scales_zeros, total.residual}, "bytes",
                                          "KIVI cache: packed b-bit codes of K and V, FP16 scale and zero point per "
                                          "group, FP16 residual tokens of K and V");
  out.probes["kivi.split"] = labelled({"quantized_tokens", "residual_tokens"},
                                      {double(c0.quantized_tokens), double(c0.residual_tokens())}, "tokens",
                                      "per KV head: leading tokens held quantized, ⌊(N − R)/g⌋·g, and the FP16 rest");
  out.probes["clamped"] = labelled({"k", "v"}, {clamped_k, clamped_v}, "values",
                                   "codes clamped to [0, 2^b − 1] (only after the FP16 rounding of s and z)");

  // HBM traffic of the decode kernel: q in (FP16), the compressed cache per row block, O and L out.
  double cache_total = 0, tiles_total = 0;
  for (size_t i = 0; i < cache_read.size(); ++i) cache_total += cache_read[i], tiles_total += kv_tiles_read[i];
  const double heads = double(p.batch * p.q_heads);
  const double q_bytes = heads * p.q_len * d * kF16;
  out.probes["hbm_bytes"] = labelled({"q", "k", "v", "o", "lse", "kv_cache"},
                                     {q_bytes, 0.0, 0.0, q_bytes, heads * p.q_len * kF32, cache_total}, "bytes",
                                     "HBM traffic: the kernel reads the compressed cache (codes, FP16 scales and "
                                     "zeros, FP16 residual) once per query row block and head, never FP16 K or V");
  out.probes["kv_tiles_loaded"] = labelled({"tiles"}, {tiles_total}, "tiles",
                                           "KV tiles loaded over all row blocks and heads (causal skips tiles)");
  add_trace_probes(out.probes, p, req,
                   {trace.kv_tile, trace.m, trace.l, trace.bytes, trace_block, Br, Bc,
                    "running sum ℓ after each KV tile",
                    "bytes loaded by the traced row block's CTA so far (Qᵢ, then the cache "
                                   "through tile j)"});
  add_lse_probe(out.probes, p, lse, "logsumexp L = m + log ℓ per row");
  return out;
}

void validate(const Problem&, const ParamValues& v, const std::string& where) {
  const int64_t bits = v.integer("bits");
  if (bits != 2 && bits != 4 && bits != 8) fail_input(where + ".bits", fmt::format("must be 2, 4 or 8 (got {})", bits));
}

}  // namespace

VariantSpec kivi() {
  VariantSpec v;
  v.id = "kivi";
  v.title = "KIVI: 2/4-bit KV cache (keys per channel, values per token, FP16 residual), FP16 FlashAttention";
  v.source = "TurboAttention §5.3 and §2.4 (KIVI baseline, Liu et al. 2024); attention as flash2";
  v.phases = {Phase::decode, Phase::prefill};
  v.params = {
      ParamSpec::integer("bits", 2, 2, 8, "cache bit width: 2, 4 or 8 (8 isolates the scheme from the width)"),
      ParamSpec::integer("group", 32, 1, 4096, "g: tokens per key group (per channel), channels per value group"),
      ParamSpec::integer("residual", 128, 0, 1 << 20, "R: the most recent tokens (at least) kept in FP16"),
      ParamSpec::integer("block_r", 128, 16, 256, "B_r: query rows per block (one CTA each)"),
      ParamSpec::integer("block_c", 64, 16, 256, "B_c: keys per KV tile of the inner loop"),
  };
  v.validate = validate;
  v.reference = run;
  return v;
}

}  // namespace attnlab::variants
