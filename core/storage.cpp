// attnlab core: storage declarations and the one function that counts a cache's bytes (storage.h).
#include "core/storage.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace attnlab {

std::string NumberFormat::name() const {
  switch (kind) {
    case Kind::ieee: return fmt::format("fp{}", bits);
    case Kind::bfloat: return fmt::format("bf{}", bits);
    case Kind::e4m3: return "e4m3";
    case Kind::integer: return fmt::format("int{}", bits);
  }
  return "?";
}

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Values of one array in one block of `block` tokens (per token, per n tokens, or one per block).
int64_t token_groups(const Grouping& g, int64_t block) {
  if (g.tokens == kPerBlock) return 1;
  if (g.tokens < 1) throw std::logic_error("storage: a per-block grouping needs whole tokens or kPerBlock");
  return ceil_div(block, g.tokens);
}

// The tokens of one head's cache as it is stored: the quantized blocks (those written at once, then the
// flushed buffer blocks), the unquantized residual tokens and the tokens pending in the buffer.
struct Layout {
  std::vector<int64_t> blocks;  // token count of each block
  int64_t quantized = 0, residual = 0, pending = 0;
  bool buffered = false;  // a token went through the buffer: its own scales are stored
};

Layout layout(const KvCache& c, int64_t tokens, int64_t decode_steps) {
  Layout l;
  const int64_t steps = c.buffer.capacity > 0 ? std::clamp<int64_t>(decode_steps, 0, tokens) : 0;
  const int64_t written = tokens - steps;
  l.quantized = written;
  if (c.residual) {
    const int64_t min = c.residual->min_tokens, block = std::max<int64_t>(c.block_tokens, 1);
    l.quantized = written > min ? (written - min) / block * block : 0;
    l.residual = written - l.quantized;
  }
  if (c.block_tokens > 0)
    for (int64_t t = 0; t < l.quantized; t += c.block_tokens) l.blocks.push_back(std::min(c.block_tokens, l.quantized - t));
  else if (l.quantized > 0)
    l.blocks.push_back(l.quantized);
  if (steps > 0) {
    for (int64_t f = 0; f < steps / c.buffer.capacity; ++f) l.blocks.push_back(c.buffer.capacity);
    l.quantized += steps / c.buffer.capacity * c.buffer.capacity;
    l.pending = steps % c.buffer.capacity;
    l.buffered = true;
  }
  return l;
}

// Bytes of n codes of `bits` packed densely (formats/pack.h's layout for 2 and 4 bits), padded to a byte.
int64_t packed_bytes(int64_t n, int bits) { return (n * bits + 7) / 8; }

// Packed bytes of `tokens` tokens' codes, in runs of `run` tokens each padded to a whole byte.
double packed(int64_t tokens, int64_t run, int64_t channels, int bits) {
  if (tokens == 0) return 0;
  const int64_t full = tokens / run, rest = tokens % run;
  return double(full * packed_bytes(run * channels, bits) + packed_bytes(rest * channels, bits));
}

// The codes and scales of the blocks `l` holds (`quantized` tokens in all), channels d each.
TensorBytes stored_bytes(const TensorStorage& t, int64_t d, const Layout& l) {
  TensorBytes b;
  if (t.pack_tokens == kPerBlock) {
    for (int64_t n : l.blocks) b.codes += packed(n, n, d, t.codes.bits);
  } else {
    const int64_t run = t.pack_tokens == kWhole ? std::max<int64_t>(l.quantized, 1) : t.pack_tokens;
    b.codes += packed(l.quantized, run, d, t.codes.bits);
  }
  for (const ScaleArray& a : t.scales) {
    const double each = a.format.bytes() * double(channel_groups(a.per, d));
    if (a.per.tokens == kWhole) {
      if (l.quantized > 0) b.fixed += each;
      continue;
    }
    for (int64_t n : l.blocks) b.scales += each * double(token_groups(a.per, n));
  }
  return b;
}

// One tensor of one head of cache c: its blocks, the residual tokens, the buffer's tokens and scales.
TensorBytes tensor_bytes(const KvCache& c, const TensorStorage& t, const Layout& l) {
  const int64_t d = c.channels;
  TensorBytes b = stored_bytes(t, d, l);
  if (c.residual) b.codes += double(l.residual * d) * c.residual->format.bytes();
  b.codes += double(l.pending * d) * c.buffer.format.bytes();
  if (l.buffered)
    for (const ScaleArray& a : c.buffer.scales) {
      const double each = a.format.bytes() * double(channel_groups(a.per, d));
      b.fixed += a.per.tokens == kWhole ? each : each * double(l.pending > 0 ? token_groups(a.per, l.pending) : 0);
    }
  return b;
}

TensorBytes& operator+=(TensorBytes& a, const TensorBytes& b) {
  a.codes += b.codes, a.scales += b.scales, a.fixed += b.fixed;
  return a;
}

TensorBytes times(TensorBytes b, double n) {
  b.codes *= n, b.scales *= n, b.fixed *= n;
  return b;
}

}  // namespace

int64_t channel_groups(const Grouping& g, int64_t channels) {
  return g.channels == kWhole ? 1 : ceil_div(channels, g.channels);
}

TensorBytes tensor_bytes(const TensorStorage& t, int64_t tokens, int64_t channels) {
  Layout l;
  l.quantized = tokens;
  if (tokens > 0) l.blocks.push_back(tokens);
  return stored_bytes(t, channels, l);
}

int64_t class_heads(const KvCache& c, size_t i, int64_t kv_heads) {
  int64_t left = kv_heads;
  for (size_t j = 0; j < c.classes.size(); ++j) {
    const int64_t h = c.classes[j].heads == kOtherHeads ? left : std::min(c.classes[j].heads, left);
    if (j == i) return h;
    left -= h;
  }
  return 0;
}

CacheBytes cache_bytes(const KvCache& c, int64_t kv_heads, int64_t tokens, int64_t decode_steps) {
  const Layout l = layout(c, tokens, decode_steps);
  CacheBytes out;
  for (size_t i = 0; i < c.classes.size(); ++i) {
    const double h = double(class_heads(c, i, kv_heads));
    out.k += times(tensor_bytes(c, c.classes[i].k, l), h);
    out.v += times(tensor_bytes(c, c.classes[i].v, l), h);
  }
  return out;
}

double cache_bytes(const Storage& s, const Problem& p) {
  return double(p.batch) * cache_bytes(s.cache, p.kv_heads, p.kv_len, s.decode_steps).total();
}

namespace {

TensorRate tensor_rate(const KvCache& c, const TensorStorage& t) {
  const int64_t d = c.channels;
  TensorRate r;
  r.per_token = double(d) * t.codes.bytes();
  for (const ScaleArray& a : t.scales) {
    const double each = a.format.bytes() * double(channel_groups(a.per, d));
    if (a.per.tokens == kWhole) r.per_sequence += each;
    else r.per_token += each / double(a.per.tokens == kPerBlock ? c.block_tokens : a.per.tokens);
  }
  if (c.residual) r.per_sequence += double(c.residual->min_tokens) * (double(d) * c.residual->format.bytes() - r.per_token);
  if (c.buffer.capacity > 0) {
    r.reserve = double(c.buffer.capacity * d) * c.buffer.format.bytes();
    for (const ScaleArray& a : c.buffer.scales) r.reserve += a.format.bytes() * double(channel_groups(a.per, d));
    r.per_sequence += r.reserve;
  }
  return r;
}

TensorRate& operator+=(TensorRate& a, const TensorRate& b) {
  a.per_token += b.per_token, a.per_sequence += b.per_sequence, a.reserve += b.reserve;
  return a;
}

}  // namespace

CacheRate cache_rate(const KvCache& c, int64_t kv_heads) {
  CacheRate out;
  for (size_t i = 0; i < c.classes.size(); ++i) {
    const double h = double(class_heads(c, i, kv_heads));
    TensorRate k = tensor_rate(c, c.classes[i].k), v = tensor_rate(c, c.classes[i].v);
    k.per_token *= h, k.per_sequence *= h, k.reserve *= h;
    v.per_token *= h, v.per_sequence *= h, v.reserve *= h;
    out.k += k, out.v += v;
  }
  return out;
}

namespace {

std::string per(const Grouping& g) {
  const std::string tokens = g.tokens == kWhole      ? "head"
                             : g.tokens == kPerBlock ? "block"
                             : g.tokens == 1         ? "token"
                                                     : fmt::format("{} tokens", g.tokens);
  const std::string channels = g.channels == kWhole ? ""
                               : g.channels == 1    ? " × channel"
                                                    : fmt::format(" × {} channels", g.channels);
  return tokens + channels;
}

std::string describe(const TensorStorage& t) {
  std::string out = t.codes.name();
  for (const ScaleArray& a : t.scales) out += fmt::format(" + {} {} per {}", a.name, a.format.name(), per(a.per));
  return out;
}

}  // namespace

std::string describe(const KvCache& c) {
  std::string out = c.block_tokens > 0 ? fmt::format("in blocks of {} tokens:", c.block_tokens) : "";
  for (size_t i = 0; i < c.classes.size(); ++i) {
    const HeadClass& h = c.classes[i];
    const std::string heads =
        h.heads == kOtherHeads ? (i == 0 ? "" : " (the other heads)") : fmt::format(" ({} heads)", h.heads);
    out += fmt::format("{}K {}, V {}{}", out.empty() ? "" : i == 0 ? " " : "; ", describe(h.k), describe(h.v), heads);
  }
  if (c.residual) out += fmt::format("; residual ≥ {} tokens in {}", c.residual->min_tokens, c.residual->format.name());
  if (c.buffer.capacity > 0) {
    out += fmt::format("; decode buffer of {} tokens in {}", c.buffer.capacity, c.buffer.format.name());
    for (const ScaleArray& a : c.buffer.scales) out += fmt::format(" + {} {} per {}", a.name, a.format.name(), per(a.per));
  }
  return out;
}

bool kv_in_holds_operands(const Storage& s) { return s.kv_in && s.kv_in->codes == s.k && s.kv_in->codes == s.v; }

std::string describe(const Storage& s) {
  std::string out = fmt::format("operands Q {}, K {}, P {}, V {}; O {}; Q in HBM {}", s.q.name(), s.k.name(), s.p.name(),
                                s.v.name(), s.o.name(), describe(s.q_in));
  if (s.kv_in)
    out += fmt::format("; K, V read in {}{}", describe(*s.kv_in),
                       kv_in_holds_operands(s) ? " (the operands as stored)" : " and quantized on chip");
  if (s.kv_wire) out += fmt::format("; across GPUs K, V sent in {}", describe(*s.kv_wire));
  return out + "; cache " + describe(s.cache);
}

}  // namespace attnlab
