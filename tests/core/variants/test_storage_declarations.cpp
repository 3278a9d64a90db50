// Every variant's storage declaration (VariantSpec::storage, core/storage.h) counts exactly the cache its
// reference keeps (ReferenceOutput::kv_cache_bytes, the reference's own count: turbo_cache.cpp's
// CacheStats, quant::kivi_cache_bytes, fireq's and flash3_fp8's formulas …) — prefill and decode, under
// the settings that change the storage, on token counts that fill no block or group.
#include "core/registry.h"
#include "core/storage.h"
#include "tests/catch.h"
#include "tests/support/storage_cases.h"
#include "tests/support/variant_cases.h"

#include <fmt/format.h>

namespace attnlab {
namespace ATTNLAB_FILE_LOCAL {

TEST_CASE("every registered variant declares its storage and has storage cases", "[storage]") {
  for (const VariantSpec& v : variant_registry()) {
    INFO(v.id);
    CHECK(v.storage != nullptr);
    bool covered = false;
    for (const test::StorageCase& c : test::storage_cases()) covered = covered || c.variant == v.id;
    CHECK(covered);
  }
}

TEST_CASE("the references keep exactly the cache their storage declarations count", "[storage]") {
  int runs = 0;
  for (const test::StorageCase& c : test::storage_cases()) {
    const VariantSpec& v = *find_variant(c.variant);
    for (Phase phase : {Phase::prefill, Phase::decode}) {
      if (!v.supports(phase) || (c.decode_only && phase == Phase::prefill)) continue;
      for (const Problem& p : test::storage_shapes(phase)) {
        const ParamValues pv = ParamValues::parse(v.params, c.params, v.id);
        INFO(fmt::format("{} {} {} B={} H_kv={} d={} N={}", v.id, c.params.dump(), to_string(phase), p.batch,
                         p.kv_heads, p.head_dim, p.kv_len));
        const ReferenceOutput out = test::run_checked(v, p, test::generated(p, "llm_like", 11), pv);
        const Storage st = v.storage(p, pv);
        CHECK(double(out.kv_cache_bytes) == cache_bytes(st, p));
        ++runs;
      }
    }
  }
  CHECK(runs >= 60);
}

}  // namespace
}  // namespace attnlab
