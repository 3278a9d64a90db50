// `attnlab run --backend model` at the sizes the model exists for (sim/model_backend.h: needs_data is false): a
// problem whose data would not fit this machine's memory limit is predicted, with no data made and none checked.
#include "core/results.h"
#include "core/runner.h"
#include "sim/model_backend.h"
#include "tests/catch.h"
#include "tests/support/scoped_env.h"

#include <nlohmann/json.hpp>

#include <memory>

namespace attnlab::sim {
namespace ATTNLAB_FILE_LOCAL {

TEST_CASE("the model backend needs no data: a problem beyond the memory limit is predicted", "[sim][model][runner]") {
  test::ScopedEnv limit("ATTNLAB_MAX_MEMORY_GB", "1");  // far below the reference's gigabytes for this problem
  const Experiment e = parse_experiment(
      {{"problem", {{"batch", 16}, {"q_heads", 32}, {"kv_heads", 32}, {"q_len", 1}, {"kv_len", 32768},
                    {"head_dim", 128}, {"phase", "decode"}}},
       {"variants", {"flash2", "turbo"}},
       {"backends", {"model"}},
       {"gpu_model", "h100-sxm5"}});
  CHECK(reference_memory_bytes(e) > 8.0 * (1ull << 30));
  Runner runner;
  runner.add_backend(std::make_unique<ModelBackend>());
  const Results r = runner.run(e);
  REQUIRE(r.variants.size() == 2);
  for (const VariantResult& v : r.variants) {
    INFO(v.id);
    REQUIRE(v.model);
    CHECK(v.model->time_ms > 0);
    CHECK(!v.reference);
  }
  CHECK(r.data_probes.empty());
  CHECK(r.environment.data_note == kNoDataNote);
}

}  // namespace ATTNLAB_FILE_LOCAL
}  // namespace attnlab::sim
