// Inputs that overflow: the up-front rule of core/input_range.h (scores and the P·V accumulator within
// FP32), a variant that overflows on data beyond FP16 named with the data's source, and metrics that are
// NaN — never a finite-looking number — for a non-finite output.
#include "core/config.h"
#include "core/error.h"
#include "core/input_range.h"
#include "core/metrics.h"
#include "core/runner.h"
#include "tests/catch.h"
#include "tests/support/input_error.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>
#include <string>

namespace attnlab {
namespace ATTNLAB_FILE_LOCAL {

using nlohmann::json;
using test::input_error;

Experiment experiment(const std::string& variant, json edits = json::object()) {
  json j = {{"problem", {{"batch", 1}, {"q_heads", 2}, {"kv_heads", 1}, {"q_len", 16}, {"kv_len", 32}, {"head_dim", 16}}},
            {"data", {{"generator", "normal"}, {"seed", 2}}},
            {"variants", {{{"id", variant}}}},
            {"backends", {"reference"}}};
  j.merge_patch(edits);
  return parse_experiment(j);
}

bool has(const std::string& msg, const std::string& part) { return msg.find(part) != std::string::npos; }

TEST_CASE("scores beyond FP32 are refused up front, naming softmax_scale or the data", "[runner][bad-input]") {
  std::string msg = input_error([] { Runner().run(experiment("naive", {{"problem", {{"softmax_scale", 1e38}}}})); });
  INFO(msg);
  CHECK(test::starts(msg, "problem.softmax_scale"));
  CHECK(has(msg, "beyond the FP32 range"));

  // Inside the rule the same data runs, with finite metrics.
  const Results ok = Runner().run(experiment("naive", {{"problem", {{"softmax_scale", 1e30}}}}));
  CHECK(std::isfinite(ok.variants[0].reference->metrics.rel_l2));

  // The data at fault (one key of 3e38, the default scale): the message names the data's source — here
  // the generator and its parameters. measure_inputs and the rule on tensors directly.
  const Experiment e = experiment("naive");
  QKV in{Tensor(e.problem.q_shape(), 1.0f), Tensor(e.problem.kv_shape(), 1.0f), Tensor(e.problem.kv_shape(), 1.0f)};
  in.k.at(0, 0, 5, 3) = 3e38f;
  InputMagnitudes m = measure_inputs(in);
  CHECK(m.k == double(3e38f));
  CHECK(m.q_norm == 4.0);  // ‖(1, …, 1)‖ over d = 16
  msg = input_error([&] { check_input_range(e, m); });
  CHECK(test::starts(msg, "data (normal: data.mean = 0, data.std = 1)"));
  CHECK(has(msg, "scores can reach"));
  in.k.at(0, 0, 5, 3) = 1.0f;
  in.v.at(0, 0, 0, 0) = 1e37f;  // 32 keys · 1e37 > FLT_MAX/2
  m = measure_inputs(in);
  CHECK(has(input_error([&] { check_input_range(e, m); }), "P·V accumulator"));
}

TEST_CASE("a variant that overflows its formats is named with the data that made it", "[runner][bad-input]") {
  // std 1e6 fits FP32 but not FP16: kivi raises its own error, flash2's output turns NaN; both name the
  // variant, data.std and FP16.
  for (const char* id : {"kivi", "flash2"}) {
    json edits = {{"data", {{"std", 1e6}}}};
    if (std::string(id) == "kivi") edits["problem"] = {{"phase", "decode"}, {"q_len", 1}};
    const std::string msg = input_error([&] { Runner().run(experiment(id, edits)); });
    INFO(msg);
    CHECK(test::starts(msg, fmt::format("variants[0] ({})", id)));
    CHECK(has(msg, "data.std = 1e+06"));
    CHECK(has(msg, "beyond FP16's ±65504"));
    CHECK(msg.find('\n') == std::string::npos);
  }
  // The same variants on data within FP16 run and give finite metrics.
  for (const char* id : {"kivi", "flash2"}) {
    json edits = {{"data", {{"std", 1e3}}}};
    if (std::string(id) == "kivi") edits["problem"] = {{"phase", "decode"}, {"q_len", 1}};
    const Results r = Runner().run(experiment(id, edits));
    CHECK(std::isfinite(r.variants[0].reference->metrics.cosine));
  }
}

TEST_CASE("metrics of a non-finite output are NaN, not a max abs of 0 or a cosine of 0", "[metrics]") {
  const Shape4 s{1, 1, 2, 2};
  Tensor out(s, 1.0f);
  TensorF64 truth(s, 1.0);
  CHECK(compare_to_truth(out, truth).max_abs == 0.0);
  CHECK(first_nonfinite(out) == -1);
  out.at(0, 0, 1, 0) = std::numeric_limits<float>::quiet_NaN();
  CHECK(first_nonfinite(out) == 2);
  const Metrics m = compare_to_truth(out, truth);
  CHECK(std::isnan(m.rel_l2));
  CHECK(std::isnan(m.mre));
  CHECK(std::isnan(m.cosine));
  CHECK(std::isnan(m.max_abs));
  out.at(0, 0, 1, 0) = 1.0f;
  truth.at(0, 0, 0, 1) = std::numeric_limits<double>::infinity();
  CHECK(std::isnan(compare_to_truth(out, truth).max_abs));
  // NaN metrics travel through results.json as null and come back as NaN.
  CHECK(std::isnan(metrics_from_json(to_json(m)).cosine));
}

}  // namespace
}  // namespace attnlab
