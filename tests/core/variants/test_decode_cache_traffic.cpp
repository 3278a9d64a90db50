// The decode references count what their decode kernels read from HBM: the compressed cache once per
// (batch, KV head). The query heads of a KV head share every tile the kernel loads (turbo_decode.cu and
// kivi_decode.cu hold the group in one MMA), so under GQA the cache is not read once per query head: the
// `kv_cache` entry of the hbm_bytes probe equals the storage declaration's cache (core/storage.h
// cache_bytes), whatever the number of query heads per KV head.
#include "core/registry.h"
#include "core/storage.h"
#include "tests/catch.h"
#include "tests/support/storage_cases.h"
#include "tests/support/variant_cases.h"

#include <fmt/format.h>

#include <algorithm>

namespace attnlab {
namespace ATTNLAB_FILE_LOCAL {

double kv_cache_read(const ReferenceOutput& out) {
  const ProbeArray& hbm = out.probes.at("hbm_bytes");
  const auto at = std::find(hbm.labels.begin(), hbm.labels.end(), "kv_cache");
  REQUIRE(at != hbm.labels.end());
  return hbm.values.at(size_t(at - hbm.labels.begin()));
}

TEST_CASE("decode: turbo and kivi read each KV head's cache once, as the storage declaration counts it",
          "[variants][storage][turbo][kivi]") {
  int runs = 0;
  for (const test::StorageCase& c : test::storage_cases()) {
    if (c.variant != "turbo" && c.variant != "kivi") continue;
    const VariantSpec& v = *find_variant(c.variant);
    // 4 query heads over 2, 1 and 4 KV heads (GQA 2:1, 4:1, MHA); token counts fill no block or group.
    for (const Problem& p : test::storage_shapes(Phase::decode)) {
      const ParamValues pv = ParamValues::parse(v.params, c.params, v.id);
      INFO(fmt::format("{} {} B={} H={}/{} d={} N={}", v.id, c.params.dump(), p.batch, p.q_heads, p.kv_heads,
                       p.head_dim, p.kv_len));
      const ReferenceOutput out = test::run_checked(v, p, test::generated(p, "llm_like", 17), pv);
      const double declared = cache_bytes(v.storage(p, pv), p);
      REQUIRE(declared > 0);
      CHECK(kv_cache_read(out) == declared);
      ++runs;
    }
  }
  CHECK(runs >= 18);  // 6 turbo and 3 kivi storage cases × 3 shapes
}

TEST_CASE("decode: under GQA 4:1 the cache read is a quarter of one read per query head", "[variants][turbo][kivi]") {
  // Llama-3-8B's heads (32 query over 8 KV, d = 128) over 200 cached tokens, against the same K and V with one
  // query head per KV head: the same cache, so the same bytes read — where one read per query head would
  // count 4× as much under GQA.
  Problem gqa;
  gqa.batch = 2, gqa.q_heads = 32, gqa.kv_heads = 8, gqa.head_dim = 128, gqa.kv_len = 200, gqa.q_len = 1;
  gqa.phase = Phase::decode;
  REQUIRE(gqa.group() == 4);
  Problem mha = gqa;
  mha.q_heads = 8;
  const QKV kv = test::generated(mha, "llm_like", 23);
  const QKV in{test::generated(gqa, "llm_like", 29).q, kv.k, kv.v};
  for (const auto& [id, settings] : {std::pair<const char*, nlohmann::json>{"turbo", {{"two_bit_heads", 3}, {"decode_steps", 40}}},
                                     {"kivi", {{"bits", 2}, {"group", 64}, {"residual", 64}}}}) {
    INFO(id);
    const VariantSpec& v = *find_variant(id);
    const ParamValues pv = ParamValues::parse(v.params, settings, v.id);
    const ReferenceOutput grouped = test::run_checked(v, gqa, in, pv);
    const ReferenceOutput single = test::run_checked(v, mha, kv, pv);
    const double declared = cache_bytes(v.storage(gqa, pv), gqa);
    CHECK(double(grouped.kv_cache_bytes) == declared);
    CHECK(kv_cache_read(grouped) == declared);
    CHECK(kv_cache_read(grouped) == kv_cache_read(single));
  }
}

}  // namespace
}  // namespace attnlab
