// attnlab core — reference of `flash2`: the FlashAttention-2 forward pass (notes §2.2 and App. D,
// "FlashForward2"), emulating the FP16 kernel's roundings:
//   - Q, K, V are stored in FP16 (rounded once, as the kernel's inputs are);
//   - S = QᵢKⱼᵀ·scale, the running max/sum and exp are FP32;
//   - P̃ is rounded to FP16 before P̃Vⱼ (the tensor-core product takes FP16 operands), while ℓ sums
//     the FP32 P̃ (FA2 does the same);
//   - O is accumulated in FP32 and stored in FP16; the logsumexp L = m + log ℓ in FP32.
// Outer loop over row blocks Qᵢ (B_r rows), inner loop over KV tiles (B_c keys); under causal masking
// the tiles entirely above the diagonal are skipped (FA2's causal saving).
#include "core/variants/kernel_param.h"
#include "core/variants/shared_probes.h"
#include "core/variants/variants.h"

#include "core/error.h"
#include "core/formats/round.h"
#include "core/online_softmax.h"
#include "core/parallel.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

namespace attnlab::variants {

namespace {

constexpr double kF16 = 2.0, kF32 = 4.0;  // bytes per element

// One copy of a head's matrix, rounded to FP16 as it sits in HBM.
RowMatrix<float> stored_fp16(const Tensor::ConstMap& x) {
  RowMatrix<float> r = x;
  formats::round_fp16_inplace(r.data(), r.size());
  return r;
}

struct Trace {  // the online-softmax trace of the requested row block
  std::vector<double> kv_tile, m, l, bytes;
};

ReferenceOutput run(const Problem& p, const QKV& in, const ParamValues& params, const ProbeRequest& req) {
  const int64_t Br = params.integer("block_r"), Bc = params.integer("block_c");
  const int64_t Tr = (p.q_len + Br - 1) / Br;  // T_r row blocks; the KV tiles per block depend on causality
  const float scale = static_cast<float>(p.scale());
  const double d = double(p.head_dim);

  ReferenceOutput out;
  out.o = Tensor(p.q_shape());
  Tensor lse({p.batch, p.q_heads, p.q_len, 1});
  std::vector<double> kv_rows_read(p.batch * p.q_heads, 0.0);  // K (= V) rows loaded, per head
  std::vector<double> kv_tiles_read(p.batch * p.q_heads, 0.0);
  Trace trace;
  const int64_t trace_block = traced_row_block(req, Tr);

  parallel_for(p.batch * p.q_heads, [&](int64_t bh) {
    const int64_t b = bh / p.q_heads, h = bh % p.q_heads, kvh = p.kv_head_of(h);
    const RowMatrix<float> Q = stored_fp16(in.q.head(b, h));
    const RowMatrix<float> K = stored_fp16(in.k.head(b, kvh));
    const RowMatrix<float> V = stored_fp16(in.v.head(b, kvh));
    const bool traced = b == req.batch && h == req.head;
    OnlineSoftmax state;
    RowMatrix<float> S;
    for (int64_t i = 0; i < Tr; ++i) {  // one CTA per (batch, head, row block) on the GPU
      const int64_t row0 = i * Br, rows = std::min(Br, p.q_len - row0);
      const auto Qi = Q.middleRows(row0, rows);  // load Qᵢ
      state.reset(rows, p.head_dim);
      // Causal: the last row of the block sees the most keys; tiles past it are skipped entirely.
      const int64_t tiles = (p.visible_keys(row0 + rows - 1) + Bc - 1) / Bc;
      double bytes = rows * d * kF16;
      for (int64_t j = 0; j < tiles; ++j) {
        const int64_t col0 = j * Bc, cols = std::min(Bc, p.kv_len - col0);
        const auto Kj = K.middleRows(col0, cols);  // load Kⱼ, Vⱼ
        const auto Vj = V.middleRows(col0, cols);
        bytes += 2 * cols * d * kF16;
        kv_rows_read[bh] += double(cols);
        S.noalias() = (Qi * Kj.transpose()) * scale;  // Sᵢⱼ = QᵢKⱼᵀ/√d
        auto visible = [&](int64_t r) { return std::clamp<int64_t>(p.visible_keys(row0 + r) - col0, 0, cols); };
        state.step(S, visible, ExpF32{});
        formats::round_fp16_inplace(S.data(), S.size());  // P̃ enters the FP16 product
        state.G.noalias() += S * Vj;                      // Gᵢ += P̃ᵢⱼVⱼ
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

  // HBM traffic of this schedule (notes §2.2: Q and O once, K and V once per row block that needs them).
  double kv_rows = 0, kv_tiles = 0;
  for (size_t bh = 0; bh < kv_rows_read.size(); ++bh) kv_rows += kv_rows_read[bh], kv_tiles += kv_tiles_read[bh];
  const double heads = double(p.batch * p.q_heads);
  const double q_bytes = heads * p.q_len * d * kF16;
  const double kv_bytes = kv_rows * d * kF16;
  out.probes["hbm_bytes"] = labelled({"q", "k", "v", "o", "lse"},
                                     {q_bytes, kv_bytes, kv_bytes, q_bytes, heads * p.q_len * kF32}, "bytes",
                                     "HBM traffic per tensor of the FlashAttention-2 schedule: K and V are "
                                     "re-read once per query row block");
  out.probes["kv_tiles_loaded"] = labelled({"tiles"}, {kv_tiles}, "tiles",
                                           "KV tiles loaded over all row blocks and heads (causal skips tiles)");
  add_trace_probes(out.probes, p, req,
                   {trace.kv_tile, trace.m, trace.l, trace.bytes, trace_block, Br, Bc,
                    "running sum ℓ after each KV tile",
                    "bytes loaded by the traced row block's CTA so far (Qᵢ, then Kⱼ and Vⱼ)"});
  add_lse_probe(out.probes, p, lse, "logsumexp L = m + log ℓ per row, what FA2 keeps for the backward pass");
  out.kv_cache_bytes = static_cast<int64_t>(2 * p.kv_shape().count() * kF16);  // K and V
  return out;
}

// Storage: FP16 Q, K, V in HBM and in both products (P̃ rounded to FP16), O in FP16; the cache is K and V
// in FP16.
Storage storage(const Problem& p, const ParamValues&) {
  Storage s;
  s.q = s.k = s.v = s.p = s.o = kFp16;
  s.q_in = unscaled(kFp16);
  s.cache.channels = p.head_dim;
  s.cache.classes = {{kOtherHeads, unscaled(kFp16), unscaled(kFp16)}};
  return s;
}

}  // namespace

VariantSpec flash2() {
  VariantSpec v;
  v.id = "flash2";
  v.title = "FlashAttention-2, FP16 storage, FP32 accumulate and exp";
  v.source = "Efficient Attention notes §2.2 and App. D (FlashForward2)";
  v.phases = {Phase::prefill, Phase::decode};
  v.storage = storage;
  v.params = {
      ParamSpec::integer("block_r", 128, 16, 256, "B_r: query rows per block (one CTA each)"),
      ParamSpec::integer("block_c", 64, 16, 256, "B_c: keys per KV tile of the inner loop"),
      kernel_generation_param(),
      ParamSpec::choice("kv_loads", "tma_producer", {"tma_producer", "cp_async"},
                        "the wgmma kernel's K/V loads: a producer warpgroup's TMA copies (FlashAttention-3 §3.1's warp "
                        "specialization), or every thread's cp.async; the reference's numbers do not depend on it"),
      ParamSpec::choice("kv_tile", "auto", {"auto", "128"},
                        "the wgmma kernel's keys per K/V tile: auto takes FlashAttention-3's 176 (two in the ring) where "
                        "the problem is not causal at d 128 with the producer's loads and its last tile's padding "
                        "costs less than the wider tile saves (core/producer_loads.h: not at N 4096), else 128 "
                        "(three); 128 pins 128. Only the kernel's order of accumulation depends on it"),
      ParamSpec::choice("row_blocks", "grid", {"grid", "persistent", "persistent_head_major", "persistent_dynamic"},
                        "the wgmma kernel's query row blocks with the producer's loads: one CTA each (grid), or one CTA "
                        "per SM looping over them, its producer loading the next block's Q and K/V while the consumers "
                        "finish the last (FlashAttention-3's persistent scheduler) — handed out in bands of heads whose "
                        "K/V fit half the L2, every head's first block, then every head's second … (persistent), or "
                        "head by head as the grid's (persistent_head_major); CTA c takes blocks c, c + CTAs, … of that "
                        "order, or (persistent_dynamic, FlashAttention-3's dynamic scheduler) the next one of the grid's "
                        "order not taken as it finishes one; the numbers do not depend on it"),
  };
  v.reference = run;
  v.working_memory = flash2_working_memory;
  return v;
}

}  // namespace attnlab::variants
