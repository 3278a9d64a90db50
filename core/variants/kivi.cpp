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
//      P̃), O accumulated in FP32 and stored in FP16, L = m + log ℓ — by calling flash2's reference on
//      (Q, K̂, V̂), so with nothing quantized (R ≥ N) the output equals flash2's bit for bit (tested). Only
//      the HBM accounting is KIVI's own: the kernel reads the compressed cache, not FP16 K and V.
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
//     group, FP16 residual) once per query row block and (batch, KV head) — the query heads of a KV head
//     are the columns of one MMA, so every tile it loads serves the whole group (GQA), as in `turbo` —
//     dequantizing on chip; it never reads an FP16 K or V from HBM (the k and v entries are 0). Causal
//     row blocks read only the tiles they need.
#include "core/variants/shared_probes.h"
#include "core/variants/variants.h"

#include "core/error.h"
#include "core/formats/pack.h"
#include "core/parallel.h"
#include "core/quant/kivi.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <vector>

namespace attnlab::variants {

namespace {

constexpr double kF16 = 2.0, kF32 = 4.0;  // bytes per element

struct KvHead {
  quant::KiviCache cache;
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
ReferenceOutput run(const Problem& p, const QKV& in, const ParamValues& params, const ProbeRequest& req) {
  const int64_t Br = params.integer("block_r"), Bc = params.integer("block_c");
  const int bits = static_cast<int>(params.integer("bits"));
  const int64_t group = params.integer("group"), residual = params.integer("residual");
  const int64_t d = p.head_dim, kv_heads = p.batch * p.kv_heads;

  // 1–2: compress every KV head's cache and read it back (TurboAttention §5.3's description of KIVI).
  std::vector<KvHead> kv(static_cast<size_t>(kv_heads));
  QKV cached{in.q, Tensor(p.kv_shape()), Tensor(p.kv_shape())};
  parallel_for(kv_heads, [&](int64_t bh) {
    const int64_t b = bh / p.kv_heads, h = bh % p.kv_heads;
    kv[bh].cache = quant::kivi_quantize(in.k.head(b, h).data(), in.v.head(b, h).data(), p.kv_len, d, bits, group,
                                        residual);
    quant::kivi_dequantize(kv[bh].cache, cached.k.head(b, h).data(), cached.v.head(b, h).data());
  });

  // 3: flash2's loop on Q and the dequantized cache — exactly the flash2 reference on these inputs (its FP16
  // rounding of K and V leaves the cache's FP16 values unchanged). Only the bytes differ: the kernel reads
  // the compressed cache, not FP16 K and V, so the HBM probes are recounted below.
  const VariantSpec f2 = flash2();
  ParamValues f2_params = ParamValues::defaults(f2.params);
  f2_params.set(f2.params, "block_r", Br, "kivi");
  f2_params.set(f2.params, "block_c", Bc, "kivi");
  ReferenceOutput out = f2.reference(p, cached, f2_params, req);
  out.kv_cache_bytes = 0;

  // Cache bytes each row block reads (its causal prefix of tiles) once per KV head, for all the query heads
  // of that KV head together; and the traced block's running count.
  double cache_total = 0;
  for (int64_t row0 = 0; row0 < p.q_len; row0 += Br) {
    const int64_t rows = std::min(Br, p.q_len - row0);
    const int64_t tokens = std::min((p.visible_keys(row0 + rows - 1) + Bc - 1) / Bc * Bc, p.kv_len);
    for (const KvHead& x : kv) cache_total += cache_bytes(x.cache, tokens).total();
  }
  ProbeArray& trace_bytes = out.probes.at("trace.hbm_bytes");
  const std::vector<double>& traced_tiles = out.probes.at("trace.kv_tile").values;
  const double traced_rows = out.probes.at("trace.block").values[4];
  const KvHead& traced_head = kv[size_t(std::clamp<int64_t>(req.batch, 0, p.batch - 1) * p.kv_heads +
                                        p.kv_head_of(std::clamp<int64_t>(req.head, 0, p.q_heads - 1)))];
  for (size_t j = 0; j < traced_tiles.size(); ++j)
    trace_bytes.values[j] = traced_rows * double(d) * kF16 +
                            cache_bytes(traced_head.cache, std::min((int64_t(traced_tiles[j]) + 1) * Bc, p.kv_len)).total();
  trace_bytes.help = "bytes loaded by the traced row block's CTA so far (Qᵢ, then the cache through tile j)";

  // Probes: the groups' scales, the channel ranges KIVI's per-channel keys answer to, the cache.
  const quant::KiviCache& c0 = kv[0].cache;
  const int64_t k_groups = c0.keys.groups(), v_groups = c0.values.groups();  // the same for every head
  std::vector<const std::vector<float>*> sk, sv;
  CacheBytes total;
  double clamped_k = 0, clamped_v = 0;
  for (const KvHead& x : kv) {
    sk.push_back(&x.cache.keys.scale), sv.push_back(&x.cache.values.scale);
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
  add_channel_probes(out.probes, p, in);
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
  const double heads = double(p.batch * p.q_heads);
  const double q_bytes = heads * p.q_len * d * kF16;
  out.probes["hbm_bytes"] = labelled({"q", "k", "v", "o", "lse", "kv_cache"},
                                     {q_bytes, 0.0, 0.0, q_bytes, heads * p.q_len * kF32, cache_total}, "bytes",
                                     "HBM traffic: the kernel reads the compressed cache (codes, FP16 scales and "
                                     "zeros, FP16 residual) once per query row block and KV head (its query heads "
                                     "share every tile), never FP16 K or V");
  return out;
}

void validate(const Problem&, const ParamValues& v, const std::string& where) {
  const int64_t bits = v.integer("bits");
  if (bits != 2 && bits != 4 && bits != 8) fail_input(where + ".bits", fmt::format("must be 2, 4 or 8 (got {})", bits));
}

// Storage (core/quant/kivi.h): Q in FP16, the cache dequantized to FP16 for both products (P̃ in FP16), O
// in FP16. The cache: b-bit codes packed per head; K with an FP16 scale and zero point per channel per g
// tokens, V per token per g channels; the quantized tokens are whole groups of g, the rest (at least R)
// kept in FP16.
Storage storage(const Problem& p, const ParamValues& v) {
  const int64_t g = v.integer("group");
  Storage s;
  s.q = s.k = s.v = s.p = s.o = kFp16;
  s.q_in = unscaled(kFp16);
  s.cache.channels = p.head_dim;
  s.cache.block_tokens = g;
  const NumberFormat codes = int_format(static_cast<int>(v.integer("bits")));
  s.cache.classes = {{kOtherHeads, {codes, kWhole, {{"scale", kFp16, {g, 1}}, {"zero", kFp16, {g, 1}}}},
                      {codes, kWhole, {{"scale", kFp16, {1, g}}, {"zero", kFp16, {1, g}}}}}};
  s.cache.residual = Residual{v.integer("residual"), kFp16};
  return s;
}

}  // namespace

VariantSpec kivi() {
  VariantSpec v;
  v.id = "kivi";
  v.title = "KIVI: 2/4-bit KV cache (keys per channel, values per token, FP16 residual), FP16 FlashAttention";
  v.source = "TurboAttention §5.3 and §2.4 (KIVI baseline, Liu et al. 2024); attention as flash2";
  v.phases = {Phase::decode, Phase::prefill};
  v.storage = storage;
  v.params = {
      ParamSpec::integer("bits", 2, 2, 8, "cache bit width: 2, 4 or 8 (8 isolates the scheme from the width)"),
      ParamSpec::integer("group", 32, 1, 4096, "g: tokens per key group (per channel), channels per value group"),
      ParamSpec::integer("residual", 128, 0, 1 << 20, "R: the most recent tokens (at least) kept in FP16"),
      ParamSpec::integer("block_r", 128, 16, 256, "B_r: query rows per block (one CTA each)"),
      ParamSpec::integer("block_c", 64, 16, 256, "B_c: keys per KV tile of the inner loop"),
  };
  v.validate = validate;
  v.reference = run;
  v.working_memory = kivi_working_memory;
  return v;
}

}  // namespace attnlab::variants
