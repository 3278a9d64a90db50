// Sweeps: the --vary syntax, the grid order, the config's "sweep" axes, the extra set_value paths
// (problem.len, data.generator), variant labels, and errors that name the axis and value before anything runs.
#include "core/config.h"
#include "core/error.h"
#include "core/results.h"
#include "core/runner.h"
#include "core/sweep.h"
#include "tests/catch.h"
#include "tests/support/input_error.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>

namespace attnlab {
namespace ATTNLAB_FILE_LOCAL {

using nlohmann::json;

json base() {
  return json::parse(R"({
    "problem": {"batch": 1, "q_heads": 4, "kv_heads": 2, "q_len": 64, "kv_len": 64, "head_dim": 64,
                "phase": "prefill"},
    "data": {"generator": "normal", "seed": 3},
    "variants": [{"id": "flash2", "label": "flash2 small tiles", "params": {"block_r": 32}},
                 {"id": "turbo"}],
    "sweep": [{"vary": "problem.len", "values": [64, 128]}, {"vary": "turbo.n_r", "values": [-6, -3]}]
  })");
}

TEST_CASE("parse_axis reads numbers and booleans as JSON and the rest as text", "[sweep]") {
  const SweepAxis a = parse_axis("two_bit_heads=0,2,4");
  CHECK(a.path == "two_bit_heads");
  CHECK(a.values == std::vector<json>{0, 2, 4});
  const SweepAxis b = parse_axis("p_scale=tile,row");
  CHECK(b.values == std::vector<json>{"tile", "row"});
  CHECK(parse_axis("exact_exp=true,false").values == std::vector<json>{true, false});
  CHECK(parse_axis("n_r=-6,-2.5").values == std::vector<json>{-6, -2.5});
  for (const char* bad : {"x", "=1,2", "x=", "x=1,,2"})
    CHECK(test::starts(test::input_error([&] { parse_axis(bad); }), "--vary"));
}

TEST_CASE("expand_sweep: the last axis varies fastest and every point is a checked experiment", "[sweep]") {
  const Experiment e = parse_experiment(base());
  REQUIRE(e.sweep.size() == 2);
  const std::vector<SweepPoint> pts = expand_sweep(e, e.sweep);
  REQUIRE(pts.size() == 4);
  CHECK(pts[0].values == std::vector<std::string>{"64", "-6"});
  CHECK(pts[1].values == std::vector<std::string>{"64", "-3"});
  CHECK(pts[2].values == std::vector<std::string>{"128", "-6"});
  CHECK(pts[3].experiment.problem.q_len == 128);
  CHECK(pts[3].experiment.problem.kv_len == 128);
  CHECK(pts[3].experiment.variants[1].params.integer("n_r") == -3);
  CHECK(pts[3].experiment.variants[0].params.integer("block_r") == 32);  // untouched
  CHECK(pts[3].experiment.variants[0].label == "flash2 small tiles");
}

TEST_CASE("expand_sweep names the axis and value of a point that breaks a rule", "[sweep][bad-input]") {
  const Experiment e = parse_experiment(base());
  const std::string heads = test::input_error([&] { expand_sweep(e, {parse_axis("two_bit_heads=0,3")}); });
  CHECK(test::starts(heads, "--vary[0] two_bit_heads=3: variants[1].params.two_bit_heads"));
  const std::string choice = test::input_error([&] { expand_sweep(e, {parse_axis("p_scale=tile,diagonal")}); });
  CHECK(test::starts(choice, "--vary[0].p_scale"));
  CHECK(test::starts(test::input_error([&] { expand_sweep(e, {}); }), "--vary"));
  const SweepAxis a = parse_axis("data.seed=1,2");
  CHECK(test::starts(test::input_error([&] { expand_sweep(e, {a, a, a}); }), "--vary"));
}

TEST_CASE("set_value: problem.len keeps decode's single query; data.generator resets its parameters", "[sweep]") {
  json j = base();
  j["problem"]["phase"] = "decode";
  j["problem"].erase("q_len");
  j.erase("sweep");
  j["variants"] = json::array({json{{"id", "flash2"}}});
  Experiment e = parse_experiment(j);
  set_value(e, "problem.len", 300, "--vary");
  CHECK(e.problem.q_len == 1);
  CHECK(e.problem.kv_len == 300);
  set_value(e, "data.generator", "uniform", "--vary");
  CHECK(e.data.generator == "uniform");
  CHECK(test::starts(test::input_error([&] { set_value(e, "data.generator", "gaussian", "--vary"); }), "--vary"));
}

TEST_CASE("the config's sweep and labels are checked, and labels reach the results", "[sweep][config]") {
  json j = base();
  j["sweep"] = json::array({json{{"vary", "n_r"}}});
  CHECK(test::starts(test::input_error([&] { parse_experiment(j); }), "sweep[0].values"));
  j["sweep"] = json::array({json{{"vary", "n_r"}, {"values", {-1}}}, json{{"vary", "n_r"}, {"values", {-2}}},
                            json{{"vary", "n_r"}, {"values", {-3}}}});
  CHECK(test::starts(test::input_error([&] { parse_experiment(j); }), "sweep"));
  j = base();
  j["variants"][0]["label"] = "";
  CHECK(test::starts(test::input_error([&] { parse_experiment(j); }), "variants[0].label"));
  const Experiment e = parse_experiment(base());
  const json round = to_json(e);
  CHECK(round["variants"][0]["label"] == "flash2 small tiles");
  CHECK(round["sweep"][1]["vary"] == "turbo.n_r");
  CHECK(parse_experiment(round).sweep.size() == 2);
  Experiment small = parse_experiment(base());
  set_value(small, "problem.len", 16, "test");
  const Results r = Runner().run(small);
  CHECK(r.variants[0].label == "flash2 small tiles");
  CHECK(r.variants[1].label == "turbo");  // no label: the id
  CHECK(results_from_json(to_json(r)).variants[0].label == "flash2 small tiles");
}

TEST_CASE("every shipped config and preset loads, and its sweep expands", "[sweep][config]") {
  int configs = 0, sweeps = 0;
  for (const auto& f : std::filesystem::recursive_directory_iterator(std::string(ATTNLAB_SOURCE_DIR) + "/configs")) {
    if (f.path().extension() != ".json") continue;
    INFO(f.path().string());
    const Experiment e = load_experiment(f.path().string());
    CHECK(!e.title.empty());
    ++configs;
    if (!e.sweep.empty()) {
      CHECK(!expand_sweep(e, e.sweep, f.path().string()).empty());
      ++sweeps;
    }
  }
  CHECK(configs >= 6);
  CHECK(sweeps >= 3);
}

}  // namespace
}  // namespace attnlab
