// libFuzzer target: a model configuration (sim/models/<id>.json) through load_llm (sim/capacity.h),
// then what `attnlab capacity --model` computes from it: the cache format of every registered variant
// at its defaults (and turbo with half the KV heads at 2 bits), and the capacity on an H100 at 1 and
// 131072 tokens of context. An accepted model must give finite, positive cache sizes and a finite
// throughput wherever a batch fits.
#include "core/registry.h"
#include "sim/capacity.h"
#include "tests/fuzz/fuzz_support.h"
#include "tests/fuzz/model_checks.h"

#include <cmath>
#include <cstdlib>

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // load_llm(id) reads $ATTNLAB_MODELS/<id>.json.
  ::setenv("ATTNLAB_MODELS", attnlab::fuzz::scratch_dir().c_str(), 1);
  (void)attnlab::fuzz::reference_gpu();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace attnlab;
  fuzz::write_scratch("fuzz.json", data, size);
  fuzz::refusals_allowed([&] {
    const sim::LlmConfig m = sim::load_llm("fuzz");
    std::vector<VariantRequest> variants;
    for (const VariantSpec& spec : variant_registry()) variants.push_back({spec.id, ParamValues::defaults(spec.params), ""});
    if (const VariantSpec* t = find_variant("turbo")) {  // as app/cli/commands.cpp capacity_command does
      VariantRequest mixed{"turbo", ParamValues::defaults(t->params), "turbo 2/4-bit mix"};
      mixed.params.set(t->params, "two_bit_heads", m.kv_heads / 2, "capacity");
      variants.push_back(mixed);
    }
    for (const VariantRequest& v : variants) {
      const sim::CacheFormat f = sim::cache_format(m, v);
      fuzz::check(std::isfinite(f.bytes_per_token) && f.bytes_per_token > 0, "cache bytes per token of " + v.id);
      fuzz::check(std::isfinite(f.bytes_per_seq) && f.bytes_per_seq >= 0, "cache bytes per sequence of " + v.id);
      for (const int64_t context : {int64_t{1}, int64_t{131072}}) {
        const sim::Capacity c = sim::capacity(m, f, fuzz::reference_gpu(), context);
        fuzz::check(std::isfinite(c.weights_bytes) && std::isfinite(c.free_bytes), "weights or free bytes of " + v.id);
        fuzz::check(std::isfinite(c.seq_bytes) && c.seq_bytes > 0, "bytes of one sequence for " + v.id);
        fuzz::check(c.max_batch >= 0, "max batch of " + v.id);
        if (c.max_batch > 0)
          fuzz::check(std::isfinite(c.step_ms) && c.step_ms > 0 && std::isfinite(c.tokens_per_s) && c.tokens_per_s > 0,
                      "decode step or throughput of " + v.id);
      }
    }
  });
  return 0;
}
