// The cost model and turbo's sas_share (core/variants/turbo.cpp; issue 35, item 3): the share of P̃'s exponentials
// computed by SAS on the FMA pipe, the rest by exp on the SFU. Per tile the model moves 6 FP32 operations, one
// conversion and one integer operation per score from SAS's side to one SFU exponential per score on the other, in
// proportion: share 1 is the SAS kernel's schedule, share 0 exact_exp's, and every unit's work is linear in between —
// the sweep the issue asks to measure once the kernel computes it.
#include "sim/schedule.h"
#include "tests/catch.h"
#include "tests/support/model_cases.h"

#include <map>

namespace attnlab::sim {
namespace ATTNLAB_FILE_LOCAL {

std::map<Unit, double> tile_ops(double share, bool exact_exp = false) {
  Problem p;
  p.batch = 1, p.q_heads = 8, p.kv_heads = 8, p.q_len = 4096, p.kv_len = 4096, p.head_dim = 128;
  const VariantRequest v = test::request("turbo", {{"sas_share", share}, {"exact_exp", exact_exp}});
  return make_schedule(p, v, test::h100()).per_tile.ops;
}

double of(const std::map<Unit, double>& ops, Unit u) {
  const auto it = ops.find(u);
  return it == ops.end() ? 0.0 : it->second;
}

TEST_CASE("model: sas_share moves P̃'s exponentials from the FMA pipe to the SFU, linearly", "[sim][turbo]") {
  const auto all_sas = tile_ops(1), none = tile_ops(0), exact = tile_ops(1, true), half = tile_ops(0.5);
  for (const Unit u : {Unit::fp32_fma, Unit::sfu, Unit::int32, Unit::cvt, Unit::issue}) {
    INFO(to_string(u));
    CHECK(of(none, u) == Approx(of(exact, u)));                          // share 0: exact_exp's schedule
    CHECK(of(half, u) == Approx((of(all_sas, u) + of(none, u)) / 2));    // linear in between
  }
  CHECK(of(all_sas, Unit::sfu) == 0);
  CHECK(of(none, Unit::sfu) > 0);
  CHECK(of(all_sas, Unit::fp32_fma) > of(none, Unit::fp32_fma));
}

}  // namespace
}  // namespace attnlab::sim
