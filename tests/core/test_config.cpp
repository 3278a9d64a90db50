// Experiment configs: defaults are filled in, and every bad-input class of the skeleton issue is an
// InputError whose one-line message names the field and the rule.
#include "core/config.h"
#include "core/error.h"
#include "tests/catch.h"

#include <nlohmann/json.hpp>

#include <functional>
#include <string>

namespace attnlab {
namespace ATTNLAB_FILE_LOCAL {

using nlohmann::json;

json base() {
  return json::parse(R"({
    "problem": {"batch": 1, "q_heads": 8, "kv_heads": 2, "q_len": 64, "kv_len": 64, "head_dim": 64,
                "causal": true, "phase": "prefill"},
    "data": {"generator": "normal", "seed": 3},
    "variants": [{"id": "naive"}, {"id": "flash2", "params": {"block_r": 64}}],
    "backends": ["reference"]
  })");
}

// The error message for a config, or "" when it parses.
std::string error_of(const json& j) {
  try {
    parse_experiment(j);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST_CASE("a valid config parses with every default filled in", "[config]") {
  const Experiment e = parse_experiment(base());
  CHECK(e.problem.kv_heads == 2);
  CHECK(e.variants.size() == 2);
  CHECK(e.variants[1].params.integer("block_r") == 64);
  CHECK(e.variants[1].params.integer("block_c") == 64);  // default
  const json echoed = to_json(e);
  CHECK(echoed["variants"][1]["params"]["block_c"] == 64);
  CHECK(echoed["problem"]["softmax_scale"].get<double>() == Approx(0.125));
  // The echo parses back to the same experiment.
  CHECK(to_json(parse_experiment(echoed)) == echoed);
}

TEST_CASE("decode defaults q_len to 1 and prefill to kv_len", "[config]") {
  json j = base();
  j["problem"].erase("q_len");
  CHECK(parse_experiment(j).problem.q_len == 64);
  j["problem"]["phase"] = "decode";
  CHECK(parse_experiment(j).problem.q_len == 1);
}

struct BadCase {
  const char* what;
  std::string field;  // the message must name it
  std::string rule;   // and contain this
  std::function<void(json&)> edit;
};

TEST_CASE("bad configs are rejected with a one-line error naming field and rule", "[config][bad-input]") {
  const std::vector<BadCase> cases = {
      {"unknown variant", "variants[0].id", "unknown variant 'nope'", [](json& j) { j["variants"][0]["id"] = "nope"; }},
      {"unknown parameter", "variants[1].params.block_q", "unknown parameter",
       [](json& j) { j["variants"][1]["params"]["block_q"] = 3; }},
      {"out of range", "variants[1].params.block_r", "outside [16, 256]",
       [](json& j) { j["variants"][1]["params"]["block_r"] = 4; }},
      {"wrong type", "variants[1].params.block_r", "expected integer, got string",
       [](json& j) { j["variants"][1]["params"]["block_r"] = "64"; }},
      {"non-integral", "variants[1].params.block_c", "expected integer, got number",
       [](json& j) { j["variants"][1]["params"]["block_c"] = 64.5; }},
      {"kv_heads not dividing", "problem.kv_heads", "does not divide q_heads", [](json& j) { j["problem"]["kv_heads"] = 3; }},
      {"zero size", "problem.q_len", "must be positive", [](json& j) { j["problem"]["q_len"] = 0; }},
      {"negative size", "problem.batch", "must be positive", [](json& j) { j["problem"]["batch"] = -2; }},
      {"head_dim unsupported", "problem.head_dim", "unsupported", [](json& j) { j["problem"]["head_dim"] = 72; }},
      {"head_dim too large", "problem.head_dim", "unsupported", [](json& j) { j["problem"]["head_dim"] = 512; }},
      {"bad phase", "problem.phase", "prefill", [](json& j) { j["problem"]["phase"] = "train"; }},
      {"decode with many queries", "problem.q_len", "decode attends one query", [](json& j) {
         j["problem"]["phase"] = "decode";
         j["problem"]["q_len"] = 4;
       }},
      {"unknown problem field", "problem.seq", "unknown field", [](json& j) { j["problem"]["seq"] = 3; }},
      {"unknown top-level field", "config.varients", "unknown field", [](json& j) { j["varients"] = json::array(); }},
      {"unknown generator", "data.generator", "unknown generator 'gauss'", [](json& j) { j["data"]["generator"] = "gauss"; }},
      {"generator param type", "data.std", "expected number", [](json& j) { j["data"]["std"] = "wide"; }},
      {"negative seed", "data.seed", "non-negative", [](json& j) { j["data"]["seed"] = -1; }},
      {"unknown backend", "backends[0]", "must be one of", [](json& j) { j["backends"] = {"gpu"}; }},
      {"empty variants", "variants", "non-empty", [](json& j) { j["variants"] = json::array(); }},
      {"causal not boolean", "problem.causal", "true or false", [](json& j) { j["problem"]["causal"] = 1; }},
      {"probe head out of range", "probe.head", "query head", [](json& j) { j["probe"] = {{"head", 8}}; }},
      {"probe row block negative", "probe.row_block", "\"last\" or an index", [](json& j) { j["probe"] = {{"row_block", -1}}; }},
      {"probe row block a word", "probe.row_block", "\"last\" or an index", [](json& j) { j["probe"] = {{"row_block", "first"}}; }},
      {"missing data file", "no/such/file.safetensors", "", [](json& j) { j["data"] = {{"file", "no/such/file.safetensors"}}; }},
      {"report not an object", "report", "expected an object", [](json& j) { j["report"] = "speedup"; }},
      {"unknown report field", "report.speedup", "unknown field", [](json& j) { j["report"] = {{"speedup", "naive"}}; }},
      {"speedup_over not a name", "report.speedup_over", "non-empty string", [](json& j) { j["report"] = {{"speedup_over", 1}}; }},
      {"speedup_over no variant", "report.speedup_over", "'flash3' is not a listed variant",
       [](json& j) { j["report"] = {{"speedup_over", "flash3"}}; }},
      {"speedup_over a relabelled id", "report.speedup_over", "'flash2' is not a listed variant", [](json& j) {
         j["variants"][1]["label"] = "FP16";  // tables name it FP16 now, and so must the baseline
         j["report"] = {{"speedup_over", "flash2"}};
       }},
      {"speedup_over ambiguous", "report.speedup_over", "names 2 variants", [](json& j) {
         j["variants"][0] = {{"id", "flash2"}};
         j["report"] = {{"speedup_over", "flash2"}};
       }},
  };
  for (const auto& c : cases) {
    json j = base();
    c.edit(j);
    const std::string msg = error_of(j);
    INFO(c.what << " -> \"" << msg << "\"");
    CHECK(msg.find(c.field) != std::string::npos);
    CHECK(msg.find(c.rule) != std::string::npos);
    CHECK(msg.find('\n') == std::string::npos);
  }
}

TEST_CASE("probe.row_block: \"last\" by default, an index when given, both survive to_json", "[config]") {
  const Experiment by_default = parse_experiment(base());
  CHECK(by_default.probe.row_block == ProbeRequest::kLastRowBlock);
  CHECK(to_json(by_default).at("probe").at("row_block") == "last");
  CHECK(parse_experiment(to_json(by_default)).probe.row_block == ProbeRequest::kLastRowBlock);
  json j = base();
  j["probe"] = {{"row_block", 3}};
  const Experiment given = parse_experiment(j);
  CHECK(given.probe.row_block == 3);
  CHECK(parse_experiment(to_json(given)).probe.row_block == 3);
  CHECK(traced_row_block(given.probe, 8) == 3);
  CHECK(traced_row_block(given.probe, 2) == 1);          // a coarser B_r: that variant's last block
  CHECK(traced_row_block(by_default.probe, 8) == 7);
}

TEST_CASE("report.speedup_over names one variant by its label, else its id, and survives to_json", "[config]") {
  json j = base();
  j["variants"][0]["label"] = "FP32 naive";
  j["report"] = {{"speedup_over", "FP32 naive"}};
  const Experiment e = parse_experiment(j);
  CHECK(e.speedup_over == "FP32 naive");
  const json out = to_json(e);
  CHECK(out.at("report") == json{{"speedup_over", "FP32 naive"}});
  CHECK(parse_experiment(out).speedup_over == "FP32 naive");  // the complete config parses back
  j["report"] = {{"speedup_over", "flash2"}};                 // no label: the id names it
  CHECK(parse_experiment(j).speedup_over == "flash2");
  CHECK_FALSE(to_json(parse_experiment(base())).contains("report"));
}

TEST_CASE("set_value edits one field through the same validation", "[config]") {
  Experiment e = parse_experiment(base());
  set_value(e, "problem.q_len", 32, "--vary");
  CHECK(e.problem.q_len == 32);
  set_value(e, "block_c", 32, "--vary");
  CHECK(e.variants[1].params.integer("block_c") == 32);
  set_value(e, "flash2.block_r", 128, "--vary");
  CHECK(e.variants[1].params.integer("block_r") == 128);
  CHECK_THROWS_AS(set_value(e, "block_c", 3, "--vary"), InputError);
  CHECK_THROWS_AS(set_value(e, "no_such", 3, "--vary"), InputError);
  CHECK_THROWS_AS(set_value(e, "problem.nope", 3, "--vary"), InputError);
}

}  // namespace
}  // namespace attnlab
