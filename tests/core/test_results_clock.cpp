// A kernel's SM clock in results.json (core/results.cpp): written where it was read, read back equal, absent in files
// from before it, and a malformed one refused with one line naming the variant and the field.
#include "core/error.h"
#include "core/results.h"
#include "tests/catch.h"

#include <nlohmann/json.hpp>

#include <string>

namespace attnlab {
namespace ATTNLAB_FILE_LOCAL {

using nlohmann::json;

Results timed_run() {
  Results r;
  r.problem = json::object();
  VariantResult v;
  v.id = v.label = "flash2";
  v.kernel = KernelResult{};
  v.kernel->median_ms = 3.85, v.kernel->p10_ms = 3.33, v.kernel->p90_ms = 3.87;
  v.kernel->sm_clock = KernelResult::Clock{1590, 1755, 1980, 30};
  r.variants = {v};
  return r;
}

TEST_CASE("results.json: a kernel's SM clock round-trips", "[results]") {
  const json j = to_json(timed_run());
  REQUIRE(j["variants"][0]["kernel"].contains("sm_clock"));
  CHECK(j["variants"][0]["kernel"]["sm_clock"]["median_mhz"] == 1755);
  const Results back = results_from_json(j);
  REQUIRE(back.variants[0].kernel->sm_clock.has_value());
  const KernelResult::Clock& c = *back.variants[0].kernel->sm_clock;
  CHECK(c.min_mhz == 1590);
  CHECK(c.median_mhz == 1755);
  CHECK(c.max_mhz == 1980);
  CHECK(c.runs == 30);
  CHECK(to_json(back) == j);
  json before = j;  // a file from before the clock was read: none
  before["variants"][0]["kernel"].erase("sm_clock");
  CHECK_FALSE(results_from_json(before).variants[0].kernel->sm_clock.has_value());
}

TEST_CASE("results.json: a malformed SM clock is refused with the variant and the field", "[results][bad-input]") {
  const json good = to_json(timed_run());
  const auto error_for = [&](const std::string& key, const json& value) {
    json j = good;
    json& clock = j["variants"][0]["kernel"]["sm_clock"];
    if (key.empty()) clock = value;  // the whole object replaced
    else if (value.is_discarded()) clock.erase(key);
    else clock[key] = value;
    try {
      results_from_json(j);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const std::string where = "variant flash2: kernel.sm_clock: ";
  CHECK(error_for("min_mhz", "fast").find(where + "min_mhz must be a number") != std::string::npos);
  CHECK(error_for("max_mhz", json::value_t::discarded).find(where + "max_mhz must be a number") != std::string::npos);
  CHECK(error_for("runs", 0).find(where + "runs must be a number in [1,") != std::string::npos);
  CHECK(error_for("runs", 2.5).find(where + "runs must be a whole number") != std::string::npos);
  CHECK(error_for("median_mhz", 2000).find(where + "min_mhz ≤ median_mhz ≤ max_mhz") != std::string::npos);
  CHECK(error_for("", 1755).find(where + "not an object") != std::string::npos);
}

}  // namespace ATTNLAB_FILE_LOCAL
}  // namespace attnlab
