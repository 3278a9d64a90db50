// The Runner: Results carry every requested backend or the reason it did not run; JSON round-trips;
// progress, cancel and the memory guard behave; flash2's online-softmax trace is self-consistent.
#include "core/data/attention_stats.h"
#include "core/data/generators.h"
#include "core/error.h"
#include "core/runner.h"
#include "tests/catch.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <tuple>
#include <vector>

namespace attnlab {
namespace ATTNLAB_FILE_LOCAL {

using nlohmann::json;

Experiment small_experiment(json edits = json::object()) {
  json j = {{"problem", {{"batch", 1}, {"q_heads", 4}, {"kv_heads", 2}, {"q_len", 150}, {"kv_len", 150},
                         {"head_dim", 32}, {"causal", true}}},
            {"data", {{"generator", "normal"}, {"seed", 4}}},
            {"variants", {{{"id", "naive"}}, {{"id", "flash2"}, {"params", {{"block_r", 32}, {"block_c", 16}}}}}},
            {"backends", {"reference", "kernel", "model"}},
            {"probe", {{"head", 3}, {"row_block", 2}}}};
  j.merge_patch(edits);
  return parse_experiment(j);
}

// A stand-in model backend: runs flash2 only, and says why not for the others.
struct FakeModel : Backend {
  int runs = 0;
  std::string name() const override { return "model"; }
  std::string unavailable() const override { return ""; }
  std::string cannot_run(const VariantRequest& v, const Experiment&) const override {
    return v.id == "flash2" ? "" : "no schedule for this variant";
  }
  void run(const Experiment& e, const VariantRequest&, const QKV&, const TensorF64&, VariantResult& into) override {
    ++runs;
    into.model = ModelResult{e.gpu_model, 1.5, "memory", {{"total", 10.0}}, {{"mma_fp16", 2.0}}, json::object()};
  }
};

// A stand-in kernel backend on a named GPU that runs nothing (its device name is what the runner reads).
struct FakeGpu : Backend {
  std::string device;
  explicit FakeGpu(std::string d) : device(std::move(d)) {}
  std::string name() const override { return "kernel"; }
  std::string unavailable() const override { return ""; }
  std::string cannot_run(const VariantRequest&, const Experiment&) const override { return "not in this test"; }
  void run(const Experiment&, const VariantRequest&, const QKV&, const TensorF64&, VariantResult&) override {}
  std::string device_name() const override { return device; }
};

// gpu_model "auto" (the default) reaches the model backend as the spec of the GPU here; a pinned one as itself, and
// the results say the two GPUs differ (core/gpu_names.h).
TEST_CASE("the model predicts for the GPU here unless the config pins another", "[runner]") {
  auto run = [](const std::string& device, const json& edits) {
    Runner runner;
    runner.add_backend(std::make_unique<FakeGpu>(device));
    runner.add_backend(std::make_unique<FakeModel>());
    return runner.run(small_experiment(edits));
  };
  const Results automatic = run("NVIDIA H200", json::object());
  CHECK(automatic.config["gpu_model"] == "auto");  // the config as given
  CHECK(automatic.environment.model_gpu == "h200");
  CHECK(automatic.environment.model_gpu_note.empty());
  REQUIRE(automatic.variants[1].model.has_value());
  CHECK(automatic.variants[1].model->gpu == "h200");  // what the model backend was given

  const Results pinned = run("NVIDIA H200", {{"gpu_model", "h100-sxm5"}});
  CHECK(pinned.environment.model_gpu == "h100-sxm5");
  CHECK(pinned.variants[1].model->gpu == "h100-sxm5");
  CHECK(pinned.environment.model_gpu_note.find("different GPUs") != std::string::npos);

  const Results no_spec = run("NVIDIA B200", json::object());
  CHECK(no_spec.environment.model_gpu == "h100-sxm5");
  CHECK(no_spec.environment.model_gpu_note.find("the NVIDIA B200 has no spec") == 0);
  const Results saved = results_from_json(to_json(no_spec));  // recorded in results.json and read back
  CHECK(saved.environment.model_gpu == "h100-sxm5");
  CHECK(saved.environment.model_gpu_note == no_spec.environment.model_gpu_note);
}

TEST_CASE("requested backends that are absent are recorded with a reason", "[runner]") {
  const Results r = Runner().run(small_experiment());
  REQUIRE(r.variants.size() == 2);
  for (const auto& v : r.variants) {
    CHECK(v.reference.has_value());
    CHECK_FALSE(v.kernel.has_value());
    CHECK_FALSE(v.model.has_value());
  }
  int reasons = 0;
  for (const auto& s : r.environment.skipped) {
    CHECK_FALSE(s.reason.empty());
    reasons += (s.backend == "kernel" || s.backend == "model");
  }
  CHECK(reasons == 2);
  CHECK(r.environment.ran == std::vector<std::string>{"reference"});
  CHECK(r.variants[1].reference->metrics.rel_l2 < 1e-2);
  CHECK(r.variants[1].reference->metrics.cosine > 0.9999);
}

TEST_CASE("a backend runs where it can and says why where it cannot", "[runner]") {
  Runner runner;
  auto model = std::make_unique<FakeModel>();
  FakeModel* fake = model.get();
  runner.add_backend(std::move(model));
  const Results r = runner.run(small_experiment());
  CHECK(fake->runs == 1);
  CHECK_FALSE(r.variants[0].model.has_value());
  REQUIRE(r.variants[1].model.has_value());
  bool reason_found = false;
  for (const auto& s : r.environment.skipped)
    reason_found |= s.variant == "naive" && s.backend == "model" && s.reason == "no schedule for this variant";
  CHECK(reason_found);
}

// A stand-in kernel backend: returns O scaled by 2 from its inputs' shapes (not a correct attention: the
// test only follows where the tensor goes).
struct FakeKernel : Backend {
  std::string name() const override { return "kernel"; }
  std::string unavailable() const override { return ""; }
  std::string cannot_run(const VariantRequest&, const Experiment&) const override { return ""; }
  void run(const Experiment& e, const VariantRequest&, const QKV& in, const TensorF64&, VariantResult& into) override {
    KernelResult k;
    k.output = Tensor(e.problem.q_shape(), 2.0f);
    k.output->data()[0] = in.q.data()[0];
    into.kernel = std::move(k);
  }
};

TEST_CASE("every backend's output reaches on_output once, and Results keep none", "[runner]") {
  Runner runner;
  runner.add_backend(std::make_unique<FakeKernel>());
  const Experiment e = small_experiment();
  std::vector<std::tuple<size_t, std::string, float, float>> seen;  // variant, backend, O[0], O[1]
  RunControl control;
  control.on_output = [&](size_t i, const std::string& backend, const Tensor& o) {
    CHECK(o.shape() == e.problem.q_shape());
    seen.emplace_back(i, backend, o.data()[0], o.data()[1]);
  };
  const Results r = runner.run(e, control);
  REQUIRE(seen.size() == 4);  // naive and flash2, each reference then kernel
  const QKV in = experiment_inputs(e);
  for (size_t v = 0; v < 2; ++v) {
    CHECK(std::get<0>(seen[2 * v]) == v);
    CHECK(std::get<1>(seen[2 * v]) == "reference");
    CHECK(std::get<0>(seen[2 * v + 1]) == v);
    CHECK(std::get<1>(seen[2 * v + 1]) == "kernel");
    CHECK(std::get<2>(seen[2 * v + 1]) == in.q.data()[0]);
    CHECK(std::get<3>(seen[2 * v + 1]) == 2.0f);
    REQUIRE(r.variants[v].kernel.has_value());
    CHECK_FALSE(r.variants[v].kernel->output.has_value());  // dropped once handed over
  }
}

TEST_CASE("Results survive a JSON round trip", "[runner][results]") {
  Runner runner;
  runner.add_backend(std::make_unique<FakeModel>());
  const Results r = runner.run(small_experiment());
  const json j = to_json(r);
  CHECK(j["schema"] == "attnlab.results/2");
  CHECK(j["variants"][1]["params"]["block_c"] == 16);
  CHECK(to_json(results_from_json(j)) == j);
  CHECK(to_json(results_from_json(json::parse(j.dump()))) == j);
  CHECK_THROWS_AS(results_from_json(json{{"schema", "other/2"}}), InputError);
}

TEST_CASE("every run records what its inputs do to attention, and results.json keeps it", "[runner][results]") {
  const Experiment e = small_experiment();
  const Results r = Runner().run(e);
  const Probes expected = data::attention_statistics(e.problem, experiment_inputs(e));
  REQUIRE(r.data_probes.size() == 4);
  for (const char* name : {"attn.entropy", "attn.sink_share", "attn.recent_mass", "attn.logit_range"}) {
    INFO(name);
    REQUIRE(r.data_probes.count(name) == 1);
    CHECK(r.data_probes.at(name).shape == std::vector<int64_t>{e.problem.batch, e.problem.q_heads});
    CHECK(std::equal(r.data_probes.at(name).values.begin(), r.data_probes.at(name).values.end(),
                     expected.at(name).values.begin()));
  }
  const json j = to_json(r);
  REQUIRE(j.contains("data"));
  CHECK(results_from_json(j).data_probes.size() == 4);
  json old = j;  // a file from before the statistics: none, and nothing else missing
  old.erase("data");
  CHECK(results_from_json(old).data_probes.empty());
}

TEST_CASE("by default the trace follows the last row block, the one with the longest causal KV loop", "[runner][probes]") {
  json no_probe = {{"probe", nullptr}};
  const Results r = Runner().run(small_experiment(no_probe));
  const ProbeArray& block = r.variants[1].reference->probes.at("trace.block");  // flash2, B_r 32, N 150
  CHECK(block.values[2] == 4);                                                  // row blocks 0 … 4
  const ProbeArray& tiles = r.variants[1].reference->probes.at("trace.kv_tile");
  CHECK(tiles.values.size() == 10);  // rows 128 … 149 see keys 0 … 149: ⌈150 / 16⌉ tiles of B_c 16
}

TEST_CASE("progress rises to 1 and cancel stops the run", "[runner]") {
  std::vector<double> seen;
  RunControl control;
  control.progress = [&](double f, const std::string&) { seen.push_back(f); };
  Runner().run(small_experiment(), control);
  REQUIRE(seen.size() >= 3);
  for (size_t i = 1; i < seen.size(); ++i) CHECK(seen[i] >= seen[i - 1]);
  CHECK(seen.back() == 1.0);
  std::atomic<bool> cancel{true};
  control.cancel = &cancel;
  CHECK_THROWS_AS(Runner().run(small_experiment(), control), Cancelled);
}

TEST_CASE("a problem too large for this machine is refused before allocating", "[runner][bad-input]") {
  const Experiment e = small_experiment(json{{"problem", {{"q_len", 4096}, {"kv_len", 4096}}}});
  setenv("ATTNLAB_MAX_MEMORY_GB", "0.01", 1);
  try {
    Runner().run(e);
    FAIL("expected an InputError");
  } catch (const InputError& err) {
    CHECK(std::string(err.what()).find("problem: needs about") == 0);
  }
  unsetenv("ATTNLAB_MAX_MEMORY_GB");
}

TEST_CASE("flash2's online-softmax trace follows the chosen row block", "[runner][probes]") {
  const Results r = Runner().run(small_experiment());
  const Probes& pr = r.variants[1].reference->probes;
  // Row block 2 of 32 rows is rows 64..95; causal, so its last row sees 96 keys: ⌈96/16⌉ = 6 tiles.
  const ProbeArray& tiles = pr.at("trace.kv_tile");
  REQUIRE(tiles.shape == std::vector<int64_t>{6});
  for (int j = 0; j < 6; ++j) CHECK(tiles.values[j] == j);
  const ProbeArray& m = pr.at("trace.m");
  const ProbeArray& l = pr.at("trace.l");
  REQUIRE(m.shape == std::vector<int64_t>{6, 32});
  const ProbeArray& lse = pr.at("lse");
  for (int64_t row = 0; row < 32; ++row) {
    for (int step = 1; step < 6; ++step) CHECK(m.values[step * 32 + row] >= m.values[(step - 1) * 32 + row]);
    // After the last tile, m + log ℓ is the row's logsumexp (head 3, row 64 + row).
    const double last = m.values[5 * 32 + row] + std::log(l.values[5 * 32 + row]);
    CHECK(last == Approx(lse.values[(3 * 150) + 64 + row]).epsilon(1e-6));
  }
  const ProbeArray& bytes = pr.at("trace.hbm_bytes");
  // Qᵢ (32 rows × 32 dims × 2 bytes) first, then each tile adds K and V (16 rows each).
  CHECK(bytes.values[0] == 32 * 32 * 2 + 2 * 16 * 32 * 2);
  CHECK(bytes.values[5] == 32 * 32 * 2 + 6 * 2 * 16 * 32 * 2);
}

// The llm_like generator rotates K by RoPE as its last step; variants that record channel ranges also get
// K's ranges before RoPE, which are exactly those of the same draws generated without the rotation.
TEST_CASE("Runner: channel ranges of K before RoPE beside the variants' own", "[runner]") {
  json edits = {{"data", {{"generator", "llm_like"}, {"seed", 7}}},
                {"variants", {{{"id", "flash2"}}, {{"id", "int_flash"}}}},
                {"backends", {"reference"}}};
  const Experiment e = small_experiment(edits);
  const Results r = Runner().run(e);
  CHECK_FALSE(r.variants[0].reference->probes.count("channels.k_pre_rope.max"));  // flash2 records no channels
  const Probes& probes = r.variants[1].reference->probes;
  REQUIRE(probes.count("channels.k_pre_rope.max"));
  ParamValues no_rope = e.data.generator_params;
  no_rope.set(data::find_generator("llm_like")->params, "rope", false, "test");
  const QKV raw = data::generate(e.problem, "llm_like", no_rope, e.data.seed);
  const ProbeArray& hi = probes.at("channels.k_pre_rope.max");
  REQUIRE(hi.shape == std::vector<int64_t>{1, 2, 32});
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t c = 0; c < 32; ++c) {
      float top = -INFINITY;
      for (int64_t n = 0; n < 150; ++n) top = std::max(top, raw.k.at(0, h, n, c));
      CHECK(hi.values[size_t(h * 32 + c)] == top);
    }
  CHECK(probes.at("channels.k.max").values != hi.values);  // RoPE did move the ranges

  edits["data"]["rope"] = false;  // no rotation: nothing extra
  CHECK_FALSE(Runner().run(small_experiment(edits)).variants[1].reference->probes.count("channels.k_pre_rope.max"));
}

}  // namespace
}  // namespace attnlab
