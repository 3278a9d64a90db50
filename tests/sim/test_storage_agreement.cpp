// One cache, three counts: for every variant the reference's own kv_cache_bytes, the cost model's schedule
// (the cache it reads, or writes) and the capacity model (a model with the problem's KV heads and head dim,
// one layer, one sequence) agree — all three read the variant's storage declaration (core/storage.h), the
// reference only as the check. And the capacity model's per-token rate is the declaration's growth.
#include "core/registry.h"
#include "core/storage.h"
#include "sim/capacity.h"
#include "sim/schedule.h"
#include "tests/catch.h"
#include "tests/support/storage_cases.h"
#include "tests/support/variant_cases.h"

#include <fmt/format.h>

namespace attnlab::sim {
namespace ATTNLAB_FILE_LOCAL {

double bytes_of(const Work& w, const std::string& t) { return w.bytes.count(t) ? w.bytes.at(t) : 0.0; }

// A schedule and its later launches (one per cache width, where the kernel runs them so).
std::vector<const Schedule*> launches(const Schedule& s) {
  std::vector<const Schedule*> all = {&s};
  for (const Schedule& next : s.then) all.push_back(&next);
  return all;
}

LlmConfig model_like(const Problem& p) {
  LlmConfig m;
  m.id = m.name = "test", m.attention = "gqa", m.source = "test";
  m.layers = 1, m.hidden_size = p.q_heads * p.head_dim, m.q_heads = p.q_heads, m.kv_heads = p.kv_heads;
  m.head_dim = p.head_dim, m.parameters = 1e9;
  return m;
}

TEST_CASE("reference, schedule and capacity count the same KV cache for every variant", "[sim][storage]") {
  const GpuSpec gpu = load_gpu_spec("h100-sxm5");
  for (const test::StorageCase& c : test::storage_cases()) {
    const VariantSpec& v = *find_variant(c.variant);
    for (Phase phase : {Phase::prefill, Phase::decode}) {
      if (!v.supports(phase) || (c.decode_only && phase == Phase::prefill)) continue;
      for (const Problem& p : test::storage_shapes(phase)) {
        const VariantRequest req{v.id, ParamValues::parse(v.params, c.params, v.id), ""};
        INFO(fmt::format("{} {} {} B={} H_kv={} d={} N={}", v.id, c.params.dump(), to_string(phase), p.batch,
                         p.kv_heads, p.head_dim, p.kv_len));
        const double ref = double(test::run_checked(v, p, test::generated(p, "normal", 5), req.params).kv_cache_bytes);
        const Storage st = v.storage(p, req.params);
        const Schedule s = make_schedule(p, req, gpu);
        CHECK(s.cache_bytes == ref);
        if (s.classes.empty()) {  // unfused (naive): no tiles; its passes read K and V per query head
        } else if (st.kv_in) {  // the kernel writes the cache (TurboAttention Alg. 1): the attention's launch, or
                                // its pre-pass's (the sm_90a kernel's, which runs at any q_len)
          double written = 0;
          for (const Schedule* l : launches(s)) written += bytes_of(l->total(), "kv_cache");
          CHECK(written == Approx(ref).epsilon(1e-12));
          // … and reads K and V once per KV head as kv_in declares them (codes and per-token scales: turbo's FP16,
          // fireq's prefill_kv = fp8 E4M3 + β) — by the pre-pass where there is one, else by the attention.
          const attnlab::TensorBytes in = tensor_bytes(*st.kv_in, p.kv_len, p.head_dim);
          const double declared = double(p.batch * p.kv_heads) * 2 * in.total();
          double read_in = 0;
          for (const Schedule* l : launches(s)) read_in += bytes_of(l->total(), "kv_in");
          if (read_in == 0) read_in = s.kv_unique_bytes;
          CHECK(read_in == Approx(declared).epsilon(1e-12));
        } else {  // the kernel reads it: each key its share, the per-tensor scales once per CTA
          double unique = 0, read = 0;
          Work w;
          for (const Schedule* l : launches(s)) {  // each key of the launch's KV heads once
            unique += l->kv_unique_bytes, w += l->total();
            read += l->per_key.total_bytes() * l->kv_heads_total * double(p.kv_len);
          }
          CHECK(unique == Approx(ref).epsilon(1e-12));
          const CacheBytes b = cache_bytes(st.cache, p.kv_heads, p.kv_len, st.decode_steps);
          CHECK(read + double(p.batch) * (b.k.fixed + b.v.fixed) == Approx(ref).epsilon(1e-12));
          if (phase == Phase::decode) {  // every key read once per (batch, KV head) — once per query head where a
            // CTA serves one (a kernel without the grouped decode; L2 serves the group's re-reads); fixed scales by
            // each split
            const double readers = s.readers_in_step ? double(p.group()) : 1.0;
            const double q_scales = bytes_of(s.per_row, "scales") * double(p.batch * p.q_heads);
            const double fixed_reads = readers * double(p.batch * s.splits) * (b.k.fixed + b.v.fixed);
            CHECK(bytes_of(w, "k") + bytes_of(w, "v") + bytes_of(w, "scales") - q_scales ==
                  Approx(readers * (ref - double(p.batch) * (b.k.fixed + b.v.fixed)) + fixed_reads).epsilon(1e-12));
          }
        }
        if (st.decode_steps == 0) {  // capacity: one sequence, one layer, its decode buffer reserved on top
          const CacheFormat f = cache_format(model_like(p), req);
          CHECK(f.seq_bytes(p.kv_len) - f.reserve == ref / double(p.batch));
        }
      }
    }
  }
}

TEST_CASE("capacity: bytes per token and per sequence are the declaration's growth and fixed part",
          "[sim][storage][capacity]") {
  // At N tokens of whole blocks and groups (N − R whole groups with KIVI's residual), the cache is exactly
  // bytes_per_token·N + bytes_per_seq; 1920 is a multiple of every block and group size in the cases.
  for (const test::StorageCase& c : test::storage_cases()) {
    if (c.decode_only) continue;
    const VariantSpec& v = *find_variant(c.variant);
    const VariantRequest req{v.id, ParamValues::parse(v.params, c.params, v.id), ""};
    for (const Problem& p : test::storage_shapes(Phase::decode)) {
      const CacheFormat f = cache_format(model_like(p), req);
      const int64_t n = 1920 * 2 + (f.cache.residual ? f.cache.residual->min_tokens : 0);
      INFO(fmt::format("{} {} H_kv={} d={} N={}", v.id, c.params.dump(), p.kv_heads, p.head_dim, n));
      // the rate divides a block's scale bytes by its tokens (4/48 is no binary fraction): equal to rounding
      CHECK(f.seq_bytes(n) == Approx(f.bytes_per_token * double(n) + f.bytes_per_seq).epsilon(1e-14));
    }
  }
}

TEST_CASE("capacity: MLA's latent is stored as the variant stores K, at the KV heads' average width",
          "[sim][storage][capacity]") {
  const LlmConfig m = load_llm("deepseek-v2-lite");  // 16 KV heads, latent 512 + 64
  const VariantSpec& t = *find_variant("turbo");
  VariantRequest mix{"turbo", ParamValues::defaults(t.params), ""};
  mix.params.set(t.params, "two_bit_heads", 8, "test");
  const CacheFormat f = cache_format(m, mix);
  // 3 bits on average; s_int, z_int per channel and s_K per block of 64; the buffer: 64 INT8 latents and a scale.
  CHECK(f.bytes_per_token == 576 * 3 / 8.0 + (2 * 576 + 4) / 64.0);
  CHECK(f.bytes_per_seq == 64 * 576 + 4);
  CHECK(f.seq_bytes(640) == 640 * f.bytes_per_token + f.bytes_per_seq);
}

}  // namespace
}  // namespace attnlab::sim
