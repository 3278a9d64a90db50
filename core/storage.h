// attnlab core: a variant's storage format as data (DESIGN.md: "It also declares its storage format").
//
// Each variant declares, beside its parameters, a function from (Problem, ParamValues) to a Storage: the
// element formats of the attention's operands (Q and K in S = QKᵀ, P and V in O = PV) and of O as
// stored; Q as the kernel reads it from HBM (format and scales); and the KV cache it keeps — per class of
// KV heads (TurboAttention's head priority stores some heads at fewer bits) the codes of K and of V (bits,
// packing) with each scale and zero-point array (element format, and how many tokens × channels share one
// value), the residual tokens kept in full precision (KIVI) and the decode buffer (TurboAttention §3.3).
//
// One generic function turns a cache declaration into bytes (cache_bytes); the references' own counts, the
// cost model's schedule (sim/schedule.cpp) and the capacity model (sim/capacity.cpp) agree with it, which
// the tests hold for every variant.
#pragma once

#include "core/params.h"
#include "core/problem.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace attnlab {

// A number format as stored.
struct NumberFormat {
  enum class Kind { ieee, bfloat, e4m3, integer };
  Kind kind = Kind::ieee;
  int bits = 32;

  std::string name() const;  // fp32, fp16, bf16, e4m3, int8, int4, int2
  double bytes() const { return bits / 8.0; }
  bool operator==(const NumberFormat&) const = default;
};

inline constexpr NumberFormat kFp32{NumberFormat::Kind::ieee, 32};
inline constexpr NumberFormat kFp16{NumberFormat::Kind::ieee, 16};
inline constexpr NumberFormat kBf16{NumberFormat::Kind::bfloat, 16};
inline constexpr NumberFormat kE4m3{NumberFormat::Kind::e4m3, 8};
inline constexpr NumberFormat kInt8{NumberFormat::Kind::integer, 8};
constexpr NumberFormat int_format(int bits) { return {NumberFormat::Kind::integer, bits}; }

// Extents of a Grouping (and of a packing run), besides a count.
inline constexpr int64_t kWhole = 0;      // the whole extent: every token of the head, or every channel
inline constexpr int64_t kPerBlock = -1;  // one cache block (KvCache::block_tokens; a flushed buffer block)

// How many elements of one head share one value: `tokens` consecutive tokens × `channels` consecutive
// channels (a group at the end of a block, or of the channels, may be shorter).
struct Grouping {
  int64_t tokens = 1;
  int64_t channels = kWhole;
};

// One array of scales or zero points.
struct ScaleArray {
  std::string name;  // as the paper writes it: s_K, s_int, z_int, scale, zero, σ, β
  NumberFormat format;
  Grouping per;
};

// One tensor (Q, K or V) as stored: its elements and their scales.
struct TensorStorage {
  NumberFormat codes = kFp16;
  // Codes are packed densely over runs of this many tokens × all channels, each run padded to a whole byte:
  // kWhole = one run per head, kPerBlock = one per cache block (the padding matters only for widths < 8 bits).
  int64_t pack_tokens = kWhole;
  std::vector<ScaleArray> scales;  // scales and zero points
};

// A tensor stored as its elements alone, without scales (FP16, FP32).
inline TensorStorage unscaled(NumberFormat codes) { return {codes, kWhole, {}}; }

// KV heads of each sequence stored alike.
inline constexpr int64_t kOtherHeads = -1;  // the heads no earlier class took
struct HeadClass {
  int64_t heads = kOtherHeads;  // how many of each sequence's KV heads
  TensorStorage k, v;
};

// The most recent tokens kept unquantized (KIVI): at least min_tokens, plus whatever does not fill a whole
// block, so that the quantized tokens are whole blocks: quantized = ⌊(N − min_tokens) / block⌋·block (0 when
// N ≤ min_tokens), the rest in `format`.
struct Residual {
  int64_t min_tokens = 0;
  NumberFormat format = kFp16;
};

// The decode buffer (TurboAttention §3.3): tokens generated during decode are appended in `format` and,
// every `capacity` tokens, flushed as one cache block (in the head class's format) into the cache. `scales`
// are the buffer's own (the universal scales, per head), stored once the first token is appended; the
// flushed blocks carry the cache's per-block arrays.
struct DecodeBuffer {
  int64_t capacity = 0;  // n_b; 0 = no buffer
  NumberFormat format = kInt8;
  std::vector<ScaleArray> scales;
};

// The KV cache of one sequence.
struct KvCache {
  int64_t channels = 0;      // elements per token and KV head of K (and of V): the head dim
  int64_t block_tokens = 0;  // tokens per cache block (the last may be short); 0 = unblocked
  std::vector<HeadClass> classes;
  std::optional<Residual> residual;
  DecodeBuffer buffer;
};

struct Storage {
  // Element formats of the operands the two products consume (Q, K in S = QKᵀ; P, V in O = PV), and of
  // O as the kernel writes it.
  NumberFormat q = kFp16, k = kFp16, v = kFp16, p = kFp16, o = kFp16;
  TensorStorage q_in;                   // Q as the kernel reads it from HBM, with its scales (per query token)
  KvCache cache;                        // the cache the variant keeps: written in prefill, read in decode
  std::optional<TensorStorage> kv_in;   // K and V read from HBM as stored here (codes, per-token scales;
                                        // quantized on chip unless already the operands' format) instead of out
                                        // of the cache; the kernel writes the cache (TurboAttention Alg. 1: FP16;
                                        // FireQ App. D's prefill: E4M3 + β, the operands as stored)
  // K and V as a prefill split across GPUs sends them around the ring, where that is neither kv_in nor the cache
  // (TurboAttention: Alg. 1's INT8 tiles, which each GPU's pre-pass would quantize once from the FP16 it holds).
  // Unset: kv_in where declared (what the prefill reads), else the cache (sim::wire_bytes).
  std::optional<TensorStorage> kv_wire;
  int64_t decode_steps = 0;             // of the problem's kv_len, the last tokens appended through the buffer
};

// Storage of a variant for one problem and its parameter values (VariantSpec::storage).
using StorageFn = std::function<Storage(const Problem&, const ParamValues&)>;

// Bytes of one tensor's part of the cache.
struct TensorBytes {
  double codes = 0;   // codes, residual and buffered values
  double scales = 0;  // scales and zero points that grow with the tokens (per token, per group, per block)
  double fixed = 0;   // per head regardless of the tokens (per-tensor scales, the buffer's scales)
  double total() const { return codes + scales + fixed; }
};

struct CacheBytes {
  TensorBytes k, v;
  double total() const { return k.total() + v.total(); }
};

// The values of an array along the channels: ⌈channels / group⌉, or 1 for kWhole.
int64_t channel_groups(const Grouping& g, int64_t channels);

// One head's `tokens` × `channels` of a tensor stored as t, taken as one block (Q as the kernel reads it).
TensorBytes tensor_bytes(const TensorStorage& t, int64_t tokens, int64_t channels);

// The cache of one sequence with `kv_heads` KV heads holding `tokens` tokens, of which the last
// decode_steps came through the decode buffer (0 without one, and in prefill).
CacheBytes cache_bytes(const KvCache& c, int64_t kv_heads, int64_t tokens, int64_t decode_steps = 0);

// The cache a run of problem p leaves: every sequence's at kv_len tokens with s.decode_steps buffered.
double cache_bytes(const Storage& s, const Problem& p);

// The cache's growth and its fixed part, for one tensor (K or V) of one sequence: bytes per token (codes
// and their scales, at whole blocks and groups) and bytes per sequence (per-tensor scales, the residual's
// extra over quantized tokens, and the decode buffer reserved at full capacity with its scales, which is
// `reserve`). For token counts N of whole blocks and groups (and, with a residual, N − min_tokens a whole
// number of blocks): cache_bytes(c, h, N) + reserve = per_token·N + per_sequence.
struct TensorRate {
  double per_token = 0, per_sequence = 0, reserve = 0;
};
struct CacheRate {
  TensorRate k, v;
};
CacheRate cache_rate(const KvCache& c, int64_t kv_heads);

// The number of KV heads of each sequence that class i holds, with kv_heads heads per sequence.
int64_t class_heads(const KvCache& c, size_t i, int64_t kv_heads);

// Whether K and V read as kv_in are already the operands' format (FireQ App. D's prefill: E4M3 K̂, V̂ and their
// scales), so that nothing is quantized on chip: the model charges no quantization, the description says so.
bool kv_in_holds_operands(const Storage& s);

// In words, one line: the operands, Q in HBM and the cache (`describe(cache)`: "in blocks of 64 tokens: K
// int2 + s_int int8 per block × channel + z_int int8 per block × channel + s_K fp32 per block, V … (2 heads); …").
std::string describe(const Storage& s);
std::string describe(const KvCache& c);

}  // namespace attnlab
