// A data file gives the problem its sizes (core/config.cpp, adopt_file_shapes): a size the config states too must
// agree with the file. Those that disagree are refused — the config is ambiguous, and which one the user meant
// is not for the tool to guess — all of them in one line that names each field with both values and says what to
// do: remove them from "problem". The newcomer's case is the default config with a data file put in.
#include "core/config.h"
#include "core/error.h"
#include "tests/catch.h"
#include "tests/core/data/data_files.h"
#include "tests/support/input_error.h"

#include <fstream>

namespace attnlab::data {
namespace ATTNLAB_FILE_LOCAL {

using namespace attnlab::test;
using nlohmann::json;

json default_config() {
  std::ifstream in(std::string(ATTNLAB_SOURCE_DIR) + "/configs/default.json");
  return json::parse(in);
}

TEST_CASE("a data file: the config's sizes that disagree are named in one line, to be removed", "[config][data][bad-input]") {
  const fs::path dir = fresh_dir("file_problem");
  const std::string path = (dir / "x.safetensors").string();
  // q (1, 4, 3, 16), k and v (1, 2, 5, 16): sizes a config may hold (head_dim a multiple of 16).
  write_bytes(path, safetensors_bytes({{"q", "F32", {1, 4, 3, 16}, f32_bytes(iota_values(4 * 3 * 16))},
                                       {"k", "F32", {1, 2, 5, 16}, f32_bytes(iota_values(2 * 5 * 16, 0.5f))},
                                       {"v", "F32", {1, 2, 5, 16}, f32_bytes(iota_values(2 * 5 * 16, -0.125f))}}));

  // configs/default.json with its generator swapped for the file: batch 1 agrees, the other five do not.
  json j = default_config();
  j["data"] = {{"file", path}};
  CHECK(input_error([&] { parse_experiment(j, "."); }) ==
        "problem: q_heads 8, kv_heads 8, q_len 1024, kv_len 1024, head_dim 128 disagree with (4, 2, 3, 5, 16) in '" +
            echo_path(path) + "': remove them from \"problem\" — with a data file the sizes come from the file");

  j["problem"] = {{"batch", 1}, {"kv_len", 1024}, {"causal", true}};
  CHECK(input_error([&] { parse_experiment(j, "."); }) ==
        "problem: kv_len 1024 disagrees with 5 in '" + echo_path(path) +
            "': remove it from \"problem\" — with a data file the sizes come from the file");

  // Sizes that agree stay allowed, and what the file does not hold (causal, phase) comes from the config.
  j["problem"] = {{"batch", 1}, {"q_heads", 4}, {"causal", true}};
  j["variants"] = {"naive"};
  const Experiment e = parse_experiment(j, ".");
  CHECK(e.problem_from_file);
  CHECK(e.problem.batch == 1);
  CHECK(e.problem.q_heads == 4);
  CHECK(e.problem.kv_heads == 2);
  CHECK(e.problem.q_len == 3);
  CHECK(e.problem.kv_len == 5);
  CHECK(e.problem.head_dim == 16);
  CHECK(e.problem.causal);

  // No "problem" at all: every size from the file.
  j.erase("problem");
  CHECK(parse_experiment(j, ".").problem.q_heads == 4);
}

}  // namespace ATTNLAB_FILE_LOCAL
}  // namespace attnlab::data
