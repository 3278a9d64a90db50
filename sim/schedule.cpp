// attnlab sim: the schedules (schedule.h). The variant's storage declaration (core/storage.h) says what its
// tiles are made of, byte for byte; one Format row per variant says what its kernel does with them on chip
// (conversions, SAS); one function turns both, the tile shape and the problem into the loop nest's Work.
//
// Counting conventions (the units' peaks in gpu_spec.h count the same way):
//   tensor units: flops, 2 per multiply-add; in decode the M dimension of an MMA is padded to 16 rows
//                 (mma.sync's smallest M) — the waste a one-row query pays;
//   fp32_fma:     FP32 instructions (FMA, multiply, add, max each one);
//   sfu:          ex2 instructions; int32: integer instructions; cvt: conversion instructions.
// Per score element the online softmax of FlashAttention-2 costs 1 FMA (s·scale − m·scale), 1 max, 1 add
// into ℓ and 1 ex2; per tile it rescales O (B_r·d multiplies) and ℓ. SAS (TurboAttention §4) replaces
// the ex2 by floor (cvt), a subtraction, the cubic by Horner (3 FMA), the LUT read (int32: a shared-
// memory load's address arithmetic) and the product LUT × POLY.
#include "sim/schedule.h"

#include "core/error.h"
#include "core/kernel_traits.h"
#include "core/persistent_order.h"
#include "core/producer_loads.h"
#include "core/registry.h"
#include "core/storage.h"
#include "core/variants/turbo_chains.h"
#include "core/variants/kernel_param.h"
#include "sim/cost_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>

namespace attnlab::sim {

Work& Work::operator+=(const Work& w) {
  for (const auto& [k, v] : w.bytes) bytes[k] += v;
  for (const auto& [k, v] : w.ops) ops[k] += v;
  return *this;
}

Work Work::scaled(double f) const {
  Work w = *this;
  for (auto& [k, v] : w.bytes) v *= f;
  for (auto& [k, v] : w.ops) v *= f;
  return w;
}

double Work::total_bytes() const {
  double t = 0;
  for (const auto& [k, v] : bytes) t += v;
  return t;
}

double Schedule::ctas() const {
  double n = 0;
  for (const auto& c : classes) n += c.count;
  return n;
}

double Schedule::kv_read_bytes() const {
  double keys = 0;
  for (const auto& c : classes) keys += c.count * c.keys;
  return per_key.total_bytes() * keys;
}

Work Schedule::total() const {
  Work t = extra;
  for (const auto& c : classes) {
    t += per_row.scaled(c.count * c.rows);
    t += per_key.scaled(c.count * c.keys);
    t += per_tile.scaled(c.count * double(c.tiles));
    t += per_cta.scaled(c.count);
  }
  return t;
}

namespace {

// Byte entries of a Work that are written, and what share of each (schedule.h written_bytes).
constexpr std::pair<const char*, double> kWritten[] = {
    {"o", 1}, {"lse", 1}, {"kv_cache", 1}, {"int8_tiles", 1}, {"q_int8", 1}, {"partials", 0.5}, {"s", 0.5}, {"p", 0.5}};

}  // namespace

double written_bytes(const Work& w) {
  double n = 0;
  for (const auto& [name, share] : kWritten)
    if (const auto it = w.bytes.find(name); it != w.bytes.end()) n += share * it->second;
  return n;
}

namespace {

// What a variant's kernel does with its tiles beyond what its storage declaration (core/storage.h) says:
// the declaration gives every byte (Q and its scales, K, V or the cache's codes, scales and zero points, O)
// and the operand formats, which pick each product's tensor cores.
struct Format {
  const char* id;
  bool unfused;               // standard attention: three passes through HBM (notes §2.1)
  bool sas;                   // exponential by SAS on the FMA units instead of ex2 on the SFU
  double cvt_per_score;       // conversions per score element (S out of INT32, P into the MMA type)
  double fma_per_score;       // FP32 work per score beyond the online softmax (dequantize S, quantize P)
  double cvt_per_kv;          // conversions per K/V element on chip (quantize or unpack to the MMA type)
  double int32_per_kv;        // integer work per K/V element on chip (unpack codes, zero point, scale)
  double fma_per_q;           // FP32 work per Q element before the loop beyond O / ℓ (quantize or scale Q)
  bool wgmma_integer_p;       // the wgmma kernel converts INT32 S and INT8 P by exact FP32/integer arithmetic
  bool cvt_kv_on_chip_only;   // cvt_per_kv only where K/V are quantized on chip (kv_in); read out of the cache
                              // they need none (turbo's decode folds the codes into INT8 MMAs)
  const char* note;
};

// clang-format off
constexpr Format kFormats[] = {
  {"naive",      true,  false, 0,   0, 0,   0,   0, false, false,
   "FP32 SGEMMs on the FMA units (no tensor cores); S and P written and read once each"},
  {"flash2",     false, false, 0.5, 0, 0,   0,   0, false, false,
   "FP16 Q/K/V/O; P̃ converted to FP16 (packed, ½ cvt per score)"},
  {"int_flash",  false, false, 2.0, 2, 0,   0,   0, true,  false,
   "INT8 Q/K/V with FP32 token scales (V: one per tensor, read once per CTA); S out of INT32 (cvt) times "
   "s_Q·s_K (FMA); P = ⌊127·p⌉ (FMA + cvt)"},
  {"flash3_fp8", false, false, 0.5, 1, 0,   0,   2, false, false,
   "FP8 Q/K/V with one FP32 scale per block; S times s_Q·s_K"},
  {"turbo",      false, true,  2.0, 2, 1.0, 0.5, 2, false, true,
   "Alg. 1: FP16 Q/K/V in HBM, quantized to INT8 on chip per tile (max, divide, cvt); INT8 MMAs; SAS on "
   "the FMA units; P̃ quantized to INT8. Alg. 2: the cache dequantized in INT32"},
  {"kivi",       false, false, 0.5, 0, 0,   2.0, 0, false, false,
   "KIVI cache: packed codes + FP16 scale and zero per group, dequantized to FP16 on chip (2 int ops)"},
  // fireq's INT4 → FP8 is §3.1.1's lookup table by byte permutes (kernels/fireq/fireq_decode.cu, lut_convert): 11
  // PRMT/LOP3/shift per 8 codes, and for V (k = tokens along a register) 8 PRMTs more per 16 bytes to
  // transpose 4×4 — 1.375 and 1.875 integer operations per element, 1.625 on average; no conversion pipe.
  {"fireq",      false, false, 0.5, 1, 0,   1.625, 0, false, false,
   "FP8 Q; INT4 K/V (½ byte) with one E4M3 scale per token; INT4 → FP8 on chip through the token's 16-entry "
   "table (byte permutes); token scales applied per score (FMA)"},
};
// clang-format on

const Format* format_of(const std::string& id) {
  for (const auto& f : kFormats)
    if (id == f.id) return &f;
  return nullptr;
}

// The tensor cores a product of operands a and b runs on: INT8 when both are integers, FP8 when both are
// FP8, FP16 otherwise (a wider operand takes the narrower one up).
Unit product_unit(const NumberFormat& a, const NumberFormat& b) {
  using K = NumberFormat::Kind;
  if (a.kind == K::integer && b.kind == K::integer) return Unit::tensor_int8;
  if (a.kind == K::e4m3 && b.kind == K::e4m3) return Unit::tensor_fp8;
  return Unit::tensor_fp16;
}

double issue_slots(const std::map<Unit, double>& ops) {
  double slots = 0;
  for (const auto& [u, n] : ops) {
    if (u == Unit::tensor_fp16 || u == Unit::tensor_fp8) slots += n / 4096.0 * 32;
    else if (u == Unit::tensor_int8) slots += n / 8192.0 * 32;
    else if (u != Unit::issue) slots += n;
  }
  return slots;
}

bool declares(const VariantRequest& v, const char* name) {
  return v.params.values().count(name) > 0;
}

int64_t param_or(const VariantRequest& v, const char* name, int64_t fallback) {
  return declares(v, name) ? v.params.integer(name) : fallback;
}

// The kernel generation that would run: core/kernel_traits.h's kernel_generation, the rule the kernel
// backend uses too (decode splits the keys). Where no kernel computes the variant's function (int_flash
// at another block_c), the model keeps the mma.sync row's tiling: it still predicts that schedule.
int kernel_generation(const Problem& p, const VariantRequest& v, const GpuSpec& gpu) {
  const int g = attnlab::kernel_generation(v.id, static_cast<int>(p.head_dim), gpu.arch == "sm_90" ? 90 : 80,
                                           long(p.q_len), p.phase == Phase::decode,
                                           variants::pinned_generation(v.params),
                                           static_cast<int>(param_or(v, "block_c", 0)));
  return g == 0 ? 80 : g;
}

// The unfused standard attention of notes §2.1: S = QKᵀ and P = softmax(S) go through HBM in the
// declaration's formats (FP32).
Schedule naive_schedule(const Problem& p, const Storage& st, const Format& f) {
  Schedule s;
  s.variant = f.id;
  s.tiles_from = "unfused (three passes)";
  const double heads = double(p.batch * p.q_heads), d = double(p.head_dim);
  const double scores = heads * double(p.attended_pairs());
  const double full = heads * double(p.q_len) * double(p.kv_len);
  const double k = st.cache.classes.front().k.codes.bytes(), v = st.cache.classes.front().v.codes.bytes();
  s.extra.bytes = {{"q", heads * p.q_len * d * st.q_in.codes.bytes()}, {"k", heads * p.kv_len * d * k},
                   {"v", heads * p.kv_len * d * v},                    {"o", heads * p.q_len * d * st.o.bytes()},
                   {"s", 2 * full * st.p.bytes()},                     {"p", 2 * full * st.p.bytes()}};
  s.extra.ops = {{Unit::fp32_fma, 2 * full * d + 4 * scores}, {Unit::sfu, scores}};
  s.cache_bytes = cache_bytes(st, p);
  s.explain.push_back(f.note);
  return s;
}

// One head class of a cache as a cache of its own (every KV head in that class's format).
KvCache only_class(const KvCache& c, size_t i) {
  KvCache one = c;
  one.classes = {c.classes[i]};
  one.classes[0].heads = kOtherHeads;
  return one;
}

// What one key of class i puts in a warp's ring: its codes and their scales (the declaration's growth per
// token, cache_rate: residual and buffer tokens are read outside the ring).
double ring_bytes_per_key(const KvCache& c, size_t i) {
  const CacheRate r = cache_rate(only_class(c, i), 1);
  return r.k.per_token + r.v.per_token;
}

// A warp-chain kernel's shared memory per CTA: each warp's ring of `stages` blocks of ring_per_key bytes per
// key, and the group's query rows — as many as the kernel is compiled for, the group rounded up to a power of two
// (turbo decode's GE: three query heads per KV head keep four rows, kernels/turbo/turbo_decode.cu kQRows).
double warp_rings_smem(const Schedule& s, const Problem& p, double ring_per_key) {
  const double query_rows = double(std::bit_ceil(uint64_t(p.group())));
  return s.warps * (double(s.stages) * s.block_c * ring_per_key + query_rows * double(p.head_dim));
}

// Whether every class of the cache that holds heads is 2-bit (turbo's two_bit_heads = the KV heads): the decode
// kernel's chains and CTAs per SM follow (core/variants/turbo_chains.h, KernelTraits::narrow_three_ctas_group).
bool narrow_cache(const Storage& st, int64_t kv_heads) {
  bool any = false;
  for (size_t i = 0; i < st.cache.classes.size(); ++i) {
    if (class_heads(st.cache, i, kv_heads) <= 0) continue;
    if (st.cache.classes[i].k.codes.bits != 2) return false;
    any = true;
  }
  return any;
}

// The widest class's ring bytes per key among the classes holding heads: what a launch over every width
// sizes its rings for.
double widest_ring_per_key(const KvCache& c, int64_t kv_heads) {
  double widest = 0;
  for (size_t i = 0; i < c.classes.size(); ++i)
    if (class_heads(c, i, kv_heads) > 0) widest = std::max(widest, ring_bytes_per_key(c, i));
  return widest;
}

// The warp-chain decode kernels (core/kernel_traits.h warp_chains: turbo, kivi): a warp runs one chain over
// its run of cache blocks, streaming them through its own ring of `stages` blocks, so a CTA is `warps`
// chains side by side and its shared memory is their rings and query rows. What one chain's tile costs the
// issue slots is the kernel's measured instruction count (kDecodeIssue), where the table has it: the
// latency term (cost_model.h) needs the count the kernel really issues, and these loops' index arithmetic,
// predication and shuffles are most of it. A cache whose head classes differ in width is one launch whose
// ring fits the widest blocks — or, where the narrower blocks' smaller rings fit more CTAs on an SM, one
// launch per width (kernels/turbo/turbo_decode.cu, launch_chains), each its own grid in `then`.
void warp_chain_decode(Schedule& s, const Problem& p, const Storage& st, const GpuSpec& gpu, double rows_per_cta,
                       double tiles_each) {
  const double pairs = double(p.batch * p.kv_heads), W = s.warps;
  const double kv_len = double(p.kv_len);
  struct Width {
    double heads = 0, ring_per_key = 0, keys_bytes[3] = {0, 0, 0};  // k codes, v codes, scales per key
    double cache = 0;                                                // the class's cache, every sequence
    const DecodeIssue* issue = nullptr;
  };
  std::vector<Width> widths;
  for (size_t i = 0; i < st.cache.classes.size(); ++i) {
    Width w;
    w.heads = double(class_heads(st.cache, i, p.kv_heads));
    if (w.heads <= 0) continue;
    const CacheBytes c = cache_bytes(only_class(st.cache, i), 1, p.kv_len, st.decode_steps);
    w.keys_bytes[0] = c.k.codes / kv_len, w.keys_bytes[1] = c.v.codes / kv_len;
    w.keys_bytes[2] = (c.k.scales + c.v.scales) / kv_len;
    w.ring_per_key = ring_bytes_per_key(st.cache, i);
    w.cache = double(p.batch) * w.heads * c.total();
    w.issue = find_decode_issue(s.variant, int(p.head_dim), int(p.group()), st.cache.classes[i].k.codes.bits);
    widths.push_back(w);
  }
  const double formula_issue = s.per_tile.ops[Unit::issue];
  auto issue_of = [&](const Width& w) { return w.issue ? 32 * w.issue->warp_instructions_per_tile : formula_issue; };
  auto smem_of = [&](double ring_per_key) { return warp_rings_smem(s, p, ring_per_key); };
  // The grid: pairs × splits chains, `warps` to a CTA; each CTA-tile is one tile of each of its chains.
  s.classes = {{pairs * s.splits / W, static_cast<int64_t>(tiles_each), W * rows_per_cta / s.splits,
                W * kv_len / s.splits}};
  s.per_tile = s.per_tile.scaled(W);
  s.per_cta = s.per_cta.scaled(W);  // each chain prepares its queries
  double issue = 0;
  StallParts stall;
  bool stalls_measured = true;
  for (const Width& w : widths) {
    issue += w.heads * issue_of(w);
    stalls_measured = stalls_measured && w.issue && w.issue->stall.total() > 0;
    if (stalls_measured) stall += w.issue->stall.scaled(w.heads / double(p.kv_heads));
  }
  s.per_tile.ops[Unit::issue] = W * issue / double(p.kv_heads);
  // The latency term's stall where every width's is measured (their heads' mean in one launch), else L̄.
  s.stall = stalls_measured ? stall : StallParts{};
  s.smem_bytes = smem_of(widest_ring_per_key(st.cache, p.kv_heads));
  for (const Width& w : widths)
    s.explain.push_back(fmt::format("{} KV head(s) of {} B per key: {:.0f} warp instructions per chain and tile ({})",
                                    w.heads, w.ring_per_key,
                                    issue_of(w) / 32,
                                    w.issue ? fmt::format("measured, group {}", w.issue->group)
                                            : std::string("counted from the format row")));
  if (widths.size() < 2 || s.smem_bytes > gpu.smem_per_cta_bytes) return;  // (predict refuses the latter)
  // The widest first, as the kernel launches them (its 4-bit pairs lead pair_order).
  std::stable_sort(widths.begin(), widths.end(), [](const Width& a, const Width& b) { return a.ring_per_key > b.ring_per_key; });
  // One launch per width where a narrower ring fits more CTAs per SM than the widest one.
  const int shared = ctas_per_sm(s, gpu);
  bool gains = false;
  for (const Width& w : widths) {
    Schedule probe = s;
    probe.smem_bytes = smem_of(w.ring_per_key);
    gains = gains || ctas_per_sm(probe, gpu) > shared;
  }
  if (!gains) {
    s.explain.push_back(fmt::format("one launch over every width: {} CTA(s) per SM for each", shared));
    return;
  }
  const Schedule whole = s;
  std::vector<Schedule> launches;
  for (const Width& w : widths) {
    Schedule l = whole;
    const double share = w.heads / double(p.kv_heads);
    l.classes[0].count *= share;
    l.per_key.bytes = {{"k", w.keys_bytes[0]}, {"v", w.keys_bytes[1]}};
    if (w.keys_bytes[2] > 0) l.per_key.bytes["scales"] = w.keys_bytes[2];
    l.per_tile.ops[Unit::issue] = W * issue_of(w);
    l.stall = w.issue ? w.issue->stall : StallParts{};
    l.smem_bytes = smem_of(w.ring_per_key);
    l.kv_heads_total = whole.kv_heads_total * share;
    l.kv_unique_bytes = w.cache;
    l.cache_bytes = launches.empty() ? whole.cache_bytes : 0;  // the run's cache, named once
    l.then.clear();
    if (!launches.empty()) l.extra = Work{}, l.per_cta = whole.per_cta, l.explain.clear();
    l.explain.push_back(fmt::format("launch {} of {}: the {} KV head(s) of {} B per key", launches.size() + 1,
                                    widths.size(), w.heads, w.ring_per_key));
    launches.push_back(std::move(l));
  }
  s = std::move(launches.front());
  s.then.assign(std::make_move_iterator(launches.begin() + 1), std::make_move_iterator(launches.end()));
}

// A decode kernel with a CTA per query head (kernels/flash2/flash2.cu at q_len 1): its issue slots and stall are the
// measured ones (kDecodeIssue: the count does not change with the group — every CTA computes a whole
// B_r-row block), where the table has the kernel; otherwise the format row's count and the spec's L̄.
void per_query_head_decode(Schedule& s, const Problem& p, const Storage& st) {
  const int bits = st.cache.classes.front().k.codes.bits;
  const DecodeIssue* issue = find_decode_issue(s.variant, int(p.head_dim), int(p.group()), bits);
  s.explain.push_back(fmt::format("a CTA per query head: {} rows computed for 1 (the prefill kernel at q_len 1); "
                                  "the group's CTAs read their KV head's tiles side by side (L2 serves the re-reads)",
                                  s.block_r));
  if (!issue) return;
  s.per_tile.ops[Unit::issue] = 32 * issue->warp_instructions_per_tile * s.warps;
  s.stall = issue->stall;
  s.explain.push_back(fmt::format("{:.0f} warp instructions per warp and tile (measured)", issue->warp_instructions_per_tile));
}

// FireQ §3.2.2's FP16 softmax (fireq's softmax_precision = fp16, a prefill's; kernels/fireq/softmax_fp16.cuh): the
// exponentials run on half2, one ex2.approx.f16x2 for two scores — which the H100 splits into two
// MUFU.EX2.F16 (kernels/bench/pipe_rates.cu, 2026-11-27: 8.1 instructions = 16.1 exponentials a clock per SM,
// the FP32 MUFU.EX2's 16.1), so the SFU still takes one issue per score. Per score against the FP32 softmax's
// FMNMX, FFMA and FADD: an FMUL (the scale, before the FP16 rounding), HMNMX2, HSUB2 and the half2 row sum's
// HADD2 (½ each) — ½ FP32-pipe instruction fewer; and the half2 pack of the scores, one conversion more per pair.
bool half2_softmax(const VariantRequest& v, Phase phase) {
  return phase == Phase::prefill && declares(v, "softmax_precision") && v.params.choice("softmax_precision") == "fp16";
}

// The exponential a variant's prefill kernel evaluates, as kPrefillIssue names it.
const char* exponential_of(const VariantRequest& v) {
  if (!declares(v, "exact_exp") || v.params.flag("exact_exp")) return "exp2";  // no SAS (int_flash), or switched off
  if (declares(v, "sas_precision") && v.params.choice("sas_precision") == "fp16") return "sas_fp16";
  return "sas_fp32";
}

// The K/V loads as kPrefillIssue names them.
const char* loads_of(const Schedule& s) { return s.producer_loads ? "tma_producer" : "cp_async"; }

// One launch of a pre-pass: `count` CTAs of `threads`, each doing `per_cta` (bytes, issue slots), run after
// (its time added to) the attention's.
Schedule prepass_launch(const std::string& variant, double count, int threads, int regs, const Work& per_cta,
                        std::string what) {
  Schedule l;
  l.variant = variant;
  l.tiles_from = "kernel traits";
  l.warps = threads / 32, l.threads = threads, l.stages = 2, l.regs_per_thread = regs;
  l.classes.push_back({count, 0, 0, 0});
  l.per_cta = per_cta;
  l.explain.push_back(std::move(what));
  return l;
}

// The turbo prefill kernel's pre-passes (core/kernel_traits.h int8_prepass, kernels/turbo/turbo_cache_write.cu): one
// CTA of d threads per (64-token block, KV head) reads the block's K and V once in kv_in, writes Alg. 1's INT8
// tiles (K, Vᵀ) and the compressed cache; one CTA per (64-row block, query head) reads Q once and writes its
// INT8 block and s_Q (Alg. 1's query block: a warpgroup's rows). The attention — `s` — then reads INT8 tiles
// and INT8 Q. Instructions and registers: kPrefillIssue's, measured.
void int8_prepass(Schedule& s, const Problem& p, const Storage& st, const PrefillIssue& issue, double q_block_rows) {
  const double d = double(p.head_dim), pad = std::ceil(double(p.kv_len) / s.block_c) * s.block_c;
  const double blocks = s.kv_heads_total * pad / s.block_c;
  const double q_rows = double(p.batch * p.q_heads * p.q_len),
               q_blocks = double(p.batch * p.q_heads) * std::ceil(double(p.q_len) / q_block_rows);
  Work kv;  // per pre-pass CTA
  kv.bytes["kv_in"] = s.kv_heads_total * 2 * tensor_bytes(*st.kv_in, p.kv_len, p.head_dim).total() / blocks;
  kv.bytes["int8_tiles"] = s.kv_heads_total * pad * 2 * d / blocks;
  kv.bytes["kv_cache"] = s.cache_bytes / blocks;
  kv.ops[Unit::issue] = issue.prepass_warp_instructions_per_block * 32;
  Work q;  // per Q-block CTA
  q.bytes["q_in"] = q_rows * d * st.q_in.codes.bytes() / q_blocks;
  q.bytes["q_int8"] = (q_rows * d + q_blocks * 4) / q_blocks;
  q.ops[Unit::issue] = issue.q_warp_instructions_per_block * 32;
  s.then.push_back(prepass_launch(s.variant, blocks, int(d), issue.prepass_regs, kv,
                                  "pre-pass: K and V read once, INT8 tiles and the compressed cache written"));
  s.then.push_back(prepass_launch(s.variant, q_blocks, int(d), issue.q_regs, q, "Q's INT8 blocks (Alg. 1 l. 7), once"));
  s.per_key.bytes = {{"k", d}, {"v", d}};  // the INT8 tiles
  s.kv_unique_bytes = s.kv_heads_total * pad * 2 * d;
  s.extra.bytes.erase("kv_cache");
  s.explain.push_back("pre-passes: K/V quantized once into INT8 tiles in HBM (and the cache written), Q into INT8 "
                      "blocks; the attention reads them");
}

}  // namespace

Schedule make_schedule(const Problem& p, const VariantRequest& v, const GpuSpec& gpu, Kernels kernels) {
  const Format* f = format_of(v.id);
  const VariantSpec* spec = find_variant(v.id);
  if (!f || !spec || !spec->storage) fail_input("model", fmt::format("no schedule for variant '{}'", v.id));
  const Storage st = spec->storage(p, v.params);
  if (f->unfused) return naive_schedule(p, st, *f);
  Schedule s;
  s.variant = v.id;
  s.explain.push_back(f->note);
  s.explain.push_back("storage: " + describe(st));
  const KernelTraits* traits =
      find_kernel_traits(v.id, static_cast<int>(p.head_dim), kernel_generation(p, v, gpu), p.phase == Phase::decode);
  if (const KernelTraits* t = traits) {
    s.tiles_from = "kernel traits";
    s.block_r = t->block_r, s.block_c = t->block_c, s.warps = t->warps, s.stages = t->stages;
    s.regs_per_thread = t->regs_per_thread;
    s.splits = t->decode_splits_max;
    s.warpgroup_mma = t->arch == 90;
    s.warp_chains = t->warp_chains && p.phase == Phase::decode;
    s.pow2_ctas = t->pow2_ctas && !(narrow_cache(st, p.kv_heads) && p.group() <= t->narrow_three_ctas_group);
    s.balanced_chains = t->balanced_chains;
    s.producer_loads = producer_loads(v, t->arch);
    if (s.producer_loads)
      s.explain.push_back("K/V tiles copied by a producer warpgroup's TMA loads (FlashAttention-3 §3.1); the two "
                          "consumer warpgroups issue no copies");
    s.persistent_ctas = s.producer_loads && p.phase == Phase::prefill && persistent_row_blocks(v);
    s.persistent_heads = int(p.batch * p.q_heads);
    s.persistent_dynamic = s.persistent_ctas && persistent_dynamic(v);
    s.persistent_band_heads =  // head by head: a band of one head, the grid's order
        persistent_head_by_head(v) ? 1
                                 : persistent_band_heads(s.persistent_heads, int(p.q_heads / std::max<int64_t>(1, p.kv_heads)),
                                                         int(p.kv_len), int(p.head_dim), gpu.l2_bytes);
    if (s.persistent_ctas)
      s.explain.push_back("persistent CTAs (FlashAttention-3's scheduler): one per SM loops over the row blocks in a "
                          "fixed order (or from a counter: persistent_dynamic); each block still fills and drains the "
                          "pipeline (measured: kernels/PERF.md, wgmma v4)");
    if (const int wide = prefill_block_c(*t, v, p.causal, p.kv_len); p.phase == Phase::prefill && wide != t->block_c) {
      // The ring holds as many FP16 K/V tiles as fit beside Q, at most the row's (the kernel's own rule).
      s.block_c = wide;
      s.stages = flash2_ring_slots(*t, int(p.head_dim), wide);
      s.explain.push_back(fmt::format("not causal: FlashAttention-3's {}-key tile, {} in the ring", wide, s.stages));
    } else if (p.phase == Phase::prefill && wide_tile_may_run(*t, v, p.causal)) {  // its last tile's padding costs more
      const int64_t w = t->block_c_not_causal, keys = (p.kv_len + w - 1) / w * w;
      s.explain.push_back(fmt::format("not causal, but {} keys in {}-key tiles compute {} ({} of padding, more than "
                                      "the wider tile saves): {}-key tiles",
                                      p.kv_len, w, keys, keys - p.kv_len, t->block_c));
    }
  } else {
    s.tiles_from = "variant parameters";
    s.block_r = static_cast<int>(param_or(v, "block_r", 128));
    s.block_c = static_cast<int>(param_or(v, "block_c", 64));
    s.splits = 128;
  }
  s.threads = 32 * s.warps;
  const double d = double(p.head_dim), Br = s.block_r, Bc = s.block_c;
  const bool decode = p.phase == Phase::decode;
  s.kv_heads_total = double(p.batch * p.kv_heads);
  s.cache_bytes = cache_bytes(st, p);

  // Per key read: K and V and their scales, as the declaration stores them. Read out of the cache, each
  // key's share of the cache's bytes (the cache holds kv_len keys per KV head; its per-tensor scales are
  // read once per CTA); read as kv_in (FP16, or E4M3 with a scale per token; quantized on chip), d elements
  // each, and the cache is written.
  double kv_element = 0;  // bytes per K element in the on-chip tiles
  if (st.kv_in) {
    const TensorBytes in = tensor_bytes(*st.kv_in, p.kv_len, p.head_dim);  // one head's K (= V) and its scales
    kv_element = st.kv_in->codes.bytes();
    s.per_key.bytes = {{"k", d * kv_element}, {"v", d * kv_element}};
    if (in.scales > 0) s.per_key.bytes["scales"] = 2 * in.scales / double(p.kv_len);  // per-token scales of K and V
    s.kv_unique_bytes = s.kv_heads_total * 2 * (in.codes + in.scales);
    s.extra.bytes["kv_cache"] = s.cache_bytes;
    s.explain.push_back("the compressed cache is written once, by the first row block");
  } else {
    const CacheBytes c = cache_bytes(st.cache, p.kv_heads, p.kv_len, st.decode_steps);
    const double keys = double(p.kv_heads * p.kv_len);
    kv_element = st.cache.classes.front().k.codes.bytes();
    s.per_key.bytes = {{"k", c.k.codes / keys}, {"v", c.v.codes / keys}};
    if (c.k.scales + c.v.scales > 0) s.per_key.bytes["scales"] = (c.k.scales + c.v.scales) / keys;
    if (c.k.fixed + c.v.fixed > 0) s.per_cta.bytes["scales"] = (c.k.fixed + c.v.fixed) / double(p.kv_heads);
    s.kv_unique_bytes = s.cache_bytes;
  }
  // Decode on a kernel that does not pack the group (kernels/flash2/flash2.cu runs its prefill kernel at q_len 1):
  // one CTA per (batch, query head, split), whose MMAs and softmax compute a whole B_r-row block, padding
  // rows included. Otherwise decode packs the group's query heads, M padded to mma.sync's 16.
  const bool per_query_head = decode && traits && !s.warp_chains && kernels == Kernels::ours;
  const double rows_per_cta = per_query_head ? 1.0 : decode ? double(p.group()) : Br;  // real rows
  const double mma_rows = per_query_head || !decode ? Br : std::max(16.0, rows_per_cta);
  const double computed_rows = per_query_head ? Br : rows_per_cta;  // the rows its softmax and O run on
  const double scores = computed_rows * Bc;
  // Shared memory: the query block and `stages` K/V tiles, in the formats the kernel holds them.
  const auto q_and_kv_tiles = [&](double q_rows) {
    return q_rows * d * st.q_in.codes.bytes() + double(s.stages) * Bc * d * kv_element * 2;
  };
  // Per KV tile: both products on the tensor cores their operands pick, the online softmax, extras.
  const Unit qk = product_unit(st.q, st.k), pv = product_unit(st.p, st.v);
  s.per_tile.ops[qk] += 2 * mma_rows * Bc * d;
  s.per_tile.ops[pv] += 2 * mma_rows * Bc * d;
  if (qk != pv)
    s.explain.push_back(fmt::format("S = QKᵀ on the {} units, O = P̃V on the {} units", to_string(qk), to_string(pv)));
  // The prefill kernel's measured count and stall, where Nsight Compute measured them (core/kernel_traits.h
  // kPrefillIssue: turbo's kernels, int_flash's producer kernel); `prepass` where a pre-pass quantizes K/V (and Q) once.
  const PrefillIssue* measured =
      traits && !decode ? find_prefill_issue(v.id, int(p.head_dim), exponential_of(v), loads_of(s)) : nullptr;
  const PrefillIssue* prepass = measured && traits->int8_prepass && st.kv_in ? measured : nullptr;
  // turbo's exact_exp switch puts the exponential back on the SFU; its sas_share sends that share of P̃'s exponentials
  // to SAS (the FMA pipe: 6 FP32 ops, one conversion, one integer op each) and the rest to the SFU (one MUFU.EX2).
  const bool sas = f->sas && !(declares(v, "exact_exp") && v.params.flag("exact_exp"));
  const double share = sas && declares(v, "sas_share") ? v.params.real("sas_share") : 1.0;
  if (sas) {
    s.per_tile.ops[Unit::fp32_fma] = scores * (3 + 6 * share + f->fma_per_score) + computed_rows * d;  // softmax, SAS, O rescale
    s.per_tile.ops[Unit::cvt] = scores * (share + f->cvt_per_score);
    s.per_tile.ops[Unit::int32] = scores * share;
    if (share < 1) {
      s.per_tile.ops[Unit::sfu] = scores * (1 - share);
      s.explain.push_back(fmt::format("sas_share {:.4g}: {:.0f}% of P̃'s exponentials by SAS on the FMA pipe, the rest on "
                                      "the SFU", share, 100 * share));
    }
  } else {
    const bool half2 = half2_softmax(v, p.phase);
    s.per_tile.ops[Unit::fp32_fma] = scores * (3 + f->fma_per_score - (half2 ? 0.5 : 0.0)) + computed_rows * d;
    s.per_tile.ops[Unit::sfu] = scores;  // FP32 or half2: one MUFU.EX2 per score (above)
    s.per_tile.ops[Unit::cvt] = scores * (f->cvt_per_score + (half2 ? 0.5 : 0.0));
    if (half2)
      s.explain.push_back("FP16 softmax (§3.2.2): ex2.approx.f16x2 for two scores (two SFU issues on sm_90), one half2 "
                          "pack per pair");
  }
  if (f->wgmma_integer_p && st.p == kInt8 && s.warpgroup_mma) {
    // The wgmma kernel moves every conversion off the conversion pipe (kernels/common/mma.cuh: exact int↔float
    // through 1.5·2²³): per score, S = bits + IADD then FADD, two FMULs for the scales, the softmax's three
    // FP32 ops, one FFMA that rounds 127·p; IADD for ℓ's integer row sum and ¾ PRMT to pack the codes; per
    // P·V output element and tile, IADD + 2 FADD to add the INT32 product into O.
    s.per_tile.ops[Unit::fp32_fma] = scores * (3 + 4) + rows_per_cta * d * (1 + 2);
    s.per_tile.ops[Unit::int32] = scores * 2.75 + rows_per_cta * d;
    s.per_tile.ops[Unit::cvt] = 0;
    s.explain.push_back("INT8 P on wgmma: conversions as exact FP32/integer arithmetic (no conversion pipe)");
  }
  // K/V read in kv_in and quantized per tile — unless kv_in already holds the operand format (fireq's App. D
  // prefill reads E4M3 K̂ and V̂: nothing to quantize).
  const bool kv_on_chip = st.kv_in && !prepass && !kv_in_holds_operands(st);
  if (kv_on_chip || (!st.kv_in && !f->cvt_kv_on_chip_only)) s.per_tile.ops[Unit::cvt] += 2 * Bc * d * f->cvt_per_kv;
  // The cache's codes unpacked on chip: only where K/V come out of the cache (not kv_in).
  if (f->int32_per_kv > 0 && !st.kv_in) s.per_tile.ops[Unit::int32] += 2 * Bc * d * f->int32_per_kv;
  if (kv_on_chip) s.per_tile.ops[Unit::fp32_fma] += 2 * Bc * d * 2;  // quantized on chip per tile: max|·| and divide
  // Issue slots: every thread-instruction takes one, whichever pipe runs it; an MMA is one warp
  // instruction (32 slots) per m16n8k16 (FP16, FP8: 4096 flops) or m16n8k32 (INT8: 8192 flops) — for a
  // wgmma kernel an upper bound (one wgmma does the work of 16 to 64 of those).
  s.per_tile.ops[Unit::issue] = issue_slots(s.per_tile.ops);
  // The kernel turns S, P's codes and O's INT32 term by exact FP32/integer arithmetic (kernels/common/mma.cuh); its
  // one conversion is SAS's ⌊x⌋ (FRND, turbo_sas.cuh).
  if (prepass) s.per_tile.ops[Unit::cvt] = sas ? scores * share : 0;
  if (measured) {  // issue slots and the latency term's stall: the measurement's
    double per_tile = measured->warp_instructions_per_tile;
    // A share of the exponentials on the SFU: the measured SAS and exp2 loops' counts in proportion (an estimate —
    // no kernel computes the mix yet).
    if (sas && share < 1)
      if (const PrefillIssue* exp2 = find_prefill_issue(v.id, int(p.head_dim), "exp2", loads_of(s)))
        per_tile = share * per_tile + (1 - share) * exp2->warp_instructions_per_tile;
    s.per_tile.ops[Unit::issue] = per_tile * s.warps * 32;
    s.stall = measured->stall;
    s.explain.push_back(fmt::format("issue: {:.0f} warp instructions per warp and tile, a warp's stall {:.2f} cycles per "
                                    "instruction (Nsight Compute, {} {} kernel: core/kernel_traits.h kPrefillIssue)",
                                    per_tile, measured->stall.total(), measured->exponential, measured->loads));
  }

  // Per query row: Q (and its scales) in, O and the logsumexp out. Per CTA: Q's preparation, O / ℓ.
  // Q's scales: one head's q_len rows as the declaration stores them, shared out over the rows.
  const TensorBytes q = tensor_bytes(st.q_in, p.q_len, p.head_dim);
  s.per_row.bytes = {{"q", q.codes / double(p.q_len)}, {"o", d * st.o.bytes()}, {"lse", 4}};
  if (q.scales > 0) s.per_row.bytes["scales"] = q.scales / double(p.q_len);
  if (q.fixed > 0) s.per_cta.bytes["scales"] += q.fixed;
  s.per_cta.ops[Unit::fp32_fma] = rows_per_cta * d * (f->fma_per_q + 1);
  if (prepass) {  // the attention reads INT8 Q and one s_Q per query block (a warpgroup's rows)
    s.per_row.bytes["q"] = d;
    s.per_row.bytes["scales"] = 4.0 / traits->warpgroup_rows();
  }

  if (!decode) {
    // One CTA per (batch, query head, row block); causal CTAs stop at the last tile their rows see.
    std::map<std::pair<int64_t, int64_t>, double> by_shape;  // (tiles, rows) → CTAs
    for (int64_t row0 = 0; row0 < p.q_len; row0 += s.block_r) {
      const int64_t rows = std::min<int64_t>(s.block_r, p.q_len - row0);
      by_shape[{(p.visible_keys(row0 + rows - 1) + s.block_c - 1) / s.block_c, rows}] += double(p.batch * p.q_heads);
    }
    for (const auto& [shape, count] : by_shape) {
      const double keys = double(std::min<int64_t>(shape.first * s.block_c, p.kv_len));
      s.classes.push_back({count, shape.first, double(shape.second), keys});
    }
    s.ctas_per_head = std::ceil(double(p.q_len) / Br) * double(p.group());
    s.smem_bytes = q_and_kv_tiles(Br);
    if (prepass) {
      int8_prepass(s, p, st, *prepass, traits->warpgroup_rows());
      s.smem_bytes = Br * d + double(s.stages) * Bc * d * 2;  // INT8 Q, K and Vᵀ tiles
    }
  } else {
    // Flash-decoding: split each (batch, KV head)'s keys over `splits` CTAs, then combine. Each CTA
    // handles the group's query rows together; its keys are the sequence's share (the last may be short).
    const double tiles_total = std::ceil(double(p.kv_len) / Bc);
    const double pairs = double(p.batch * (per_query_head ? p.q_heads : p.kv_heads));  // what one CTA serves
    // FlashAttention-2's split rule (core/kernel_traits.h), against one CTA per SM.
    // A variant that declares kv_splits makes the split part of its function (turbo: the SAS merge order,
    // core/variants/turbo_chains.h): the same rule on every GPU.
    // A warp-chain kernel splits against the CTAs the GPU holds, which its rings' shared memory (and registers)
    // decide: kivi and fireq by balanced_warp_chains (kernels/kivi/kivi_decode.cu kivi_decode_chains,
    // kernels/fireq/fireq_decode.cu fireq_decode_chains: the traits column balanced_chains); a warp-chain row without
    // it by decode_splits over the warps.
    long slots = gpu.sm_count, ctas = 1;
    if (s.warp_chains) {
      Schedule probe = s;
      probe.smem_bytes = warp_rings_smem(s, p, widest_ring_per_key(st.cache, p.kv_heads));
      // (A CTA the GPU cannot hold is refused by the prediction, with its message — not here.)
      if (probe.smem_bytes <= gpu.smem_per_cta_bytes) {
        ctas = ctas_per_sm(probe, gpu);
        slots = long(gpu.sm_count) * ctas * s.warps;
      }
    }
    s.splits = declares(v, "kv_splits")
                   ? int(turbo_chains::chains(param_or(v, "kv_splits", 0), int64_t(pairs), int64_t(tiles_total),
                                            p.head_dim, p.group(), narrow_cache(st, p.kv_heads)))
               : s.warp_chains && s.balanced_chains
                   ? balanced_warp_chains(static_cast<long>(pairs), static_cast<long>(tiles_total), gpu.sm_count, ctas,
                                          s.warps, s.splits)
                   : decode_splits(static_cast<long>(pairs), slots, static_cast<long>(tiles_total), s.splits);
    const int64_t tiles_each = static_cast<int64_t>(std::ceil(tiles_total / s.splits));
    s.classes.push_back({pairs * s.splits, tiles_each, rows_per_cta / s.splits, double(p.kv_len) / s.splits});
    s.ctas_per_head = s.splits * (per_query_head ? double(p.group()) : 1.0);
    s.readers_in_step = per_query_head;
    s.smem_bytes = q_and_kv_tiles(mma_rows);
    // Combine: every split writes its partial O (FP32) and (m, ℓ); one pass reads them back — unless the
    // prefill kernel at q_len 1 did not split (it then writes O itself: kernels/flash2/flash2.cu).
    const double partial = pairs * s.splits * rows_per_cta * (d + 2) * 4;
    if (s.splits > 1 || !per_query_head) {
      s.extra.bytes["partials"] = 2 * partial;
      s.extra.ops[Unit::fp32_fma] = pairs * s.splits * rows_per_cta * (d + 4);
    }
    s.explain.push_back(fmt::format("split-KV decode: {} {} per (batch, {} head), {} query rows each, M padded to {}",
                                    s.splits, s.warp_chains ? "warp chains" : "CTAs", per_query_head ? "query" : "KV",
                                    rows_per_cta, mma_rows));
    if (s.warp_chains) warp_chain_decode(s, p, st, gpu, rows_per_cta, double(tiles_each));
    if (per_query_head) per_query_head_decode(s, p, st);
  }
  return s;
}

}  // namespace attnlab::sim
