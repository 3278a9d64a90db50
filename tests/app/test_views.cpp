// Table views built from Results: the bench view shows each kernel timing beside the model's prediction.
#include "app/views/bench.h"
#include "core/config.h"
#include "core/probes.h"
#include "tests/catch.h"

#include <nlohmann/json.hpp>

#include <cmath>

namespace attnlab::views {
namespace {

TEST_CASE("bench_table: one row per kernel timing, model over measured", "[views]") {
  Problem p;
  p.batch = 4, p.q_heads = 16, p.kv_heads = 16, p.q_len = 4096, p.kv_len = 4096, p.head_dim = 128, p.causal = true;
  Results r;
  r.problem = to_json(p);
  VariantResult with;
  with.id = with.label = "flash2";
  with.kernel = KernelResult{};
  with.kernel->median_ms = 2.0, with.kernel->tops = 137.5;
  with.model = ModelResult{};
  with.model->time_ms = 1.5;
  VariantResult without;
  without.id = without.label = "turbo";  // reference only: no row
  r.variants = {with, without};
  const Table t = bench_table({r, r});
  REQUIRE(t.rows.size() == 2);
  const auto& row = t.rows[0];
  CHECK(row[0].text == "flash2");
  CHECK(row[1].text == "B4 H16/16 N4096/4096 d128 causal");
  CHECK(row[2].value == 2.0);
  CHECK(row[8].value == 0.75);
  CHECK(std::isnan(row[9].value));  // no serving loop ran: an empty cell
  CHECK(row[9].text.empty());
  with.model.reset();
  CHECK(std::isnan(bench_table({Results{r.config, r.problem, r.environment, {with}}}).rows[0][8].value));
  // A kernel that ran the serving loop: step / attend from its decode.steps probe.
  with.kernel->probes["decode.steps"] = labelled({"steps", "step_ms", "attend_ms", "step_over_attend"},
                                                 {256, 2.2, 2.0, 1.1}, "", "");
  const Table s = bench_table({Results{r.config, r.problem, r.environment, {with}}});
  CHECK(s.rows[0][9].value == 1.1);
  CHECK(s.rows[0][9].text == "1.100");
}

}  // namespace
}  // namespace attnlab::views
