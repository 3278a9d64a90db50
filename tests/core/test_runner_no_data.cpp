// The Runner makes data only for a backend that reads it (core/runner.h, Backend::needs_data): a run whose
// backends need the problem's shapes alone (the cost model) generates and reads none, computes no FP64 truth,
// checks no host memory for them — at any size — and says so (environment.data_note); the reference, or a
// backend that reads the operands and runs a variant, still gets them, checked against the memory limit first.
#include "core/error.h"
#include "core/results.h"
#include "core/runner.h"
#include "tests/catch.h"
#include "tests/core/data/data_files.h"
#include "tests/support/input_error.h"
#include "tests/support/scoped_env.h"

#include <nlohmann/json.hpp>

#include <sys/resource.h>

#include <filesystem>
#include <memory>
#include <string>

namespace attnlab {
namespace ATTNLAB_FILE_LOCAL {

namespace fs = std::filesystem;
using nlohmann::json;

// A newcomer's shape: decode over 32k keys at batch 16 and 32 heads — gigabytes of data for the reference.
Experiment large_experiment(const json& backends) {
  return parse_experiment({{"problem", {{"batch", 16}, {"q_heads", 32}, {"kv_heads", 32}, {"q_len", 1},
                                        {"kv_len", 32768}, {"head_dim", 128}, {"phase", "decode"}}},
                           {"variants", {"flash2"}},
                           {"backends", backends}});
}

// A backend that reads the shapes alone, as the cost model does; it records what it was handed.
struct ShapesOnly : Backend {
  int64_t seen_q = -1, seen_truth = -1;
  std::string name() const override { return "model"; }
  std::string unavailable() const override { return ""; }
  std::string cannot_run(const VariantRequest&, const Experiment&) const override { return ""; }
  bool needs_data() const override { return false; }
  void run(const Experiment&, const VariantRequest&, const QKV& in, const TensorF64& truth, VariantResult& into) override {
    seen_q = in.q.size(), seen_truth = truth.size();
    into.model = ModelResult{"spec", 1.0, "memory", {{"total", 1.0}}, {}, json::object()};
  }
};

// A backend that reads the operands (as the kernels do) but runs no variant of this experiment.
struct ReadsDataRunsNothing : Backend {
  std::string name() const override { return "kernel"; }
  std::string unavailable() const override { return ""; }
  std::string cannot_run(const VariantRequest&, const Experiment&) const override { return "no kernel here"; }
  void run(const Experiment&, const VariantRequest&, const QKV&, const TensorF64&, VariantResult&) override {}
};

long peak_rss_kib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

TEST_CASE("a run whose backends need no data makes none and checks no host memory for it", "[runner]") {
  test::ScopedEnv limit("ATTNLAB_MAX_MEMORY_GB", "0.25");
  Runner runner;
  auto shapes = std::make_unique<ShapesOnly>();
  ShapesOnly* model = shapes.get();
  runner.add_backend(std::move(shapes));
  runner.add_backend(std::make_unique<ReadsDataRunsNothing>());

  const long before = peak_rss_kib();
  const Results r = runner.run(large_experiment({"model", "kernel"}));
  CHECK(peak_rss_kib() - before < 100 * 1024);  // the gigabytes of Q, K, V were neither made nor held
  REQUIRE(r.variants.size() == 1);
  CHECK(r.variants[0].model);
  CHECK(model->seen_q == 0);
  CHECK(model->seen_truth == 0);
  CHECK(r.data_probes.empty());
  CHECK(r.environment.data_note == kNoDataNote);
  CHECK(r.environment.ran == std::vector<std::string>{"model"});
  CHECK(results_from_json(to_json(r)).environment.data_note == kNoDataNote);

  // With the reference the same problem needs its data: refused from the shapes, before any is made.
  const std::string refused = test::input_error([&] { runner.run(large_experiment({"reference", "model"})); });
  CHECK(refused.rfind("problem: needs about ", 0) == 0);
  CHECK(refused.find("GiB of host memory for its data") != std::string::npos);
  CHECK(refused.find("the model backend alone needs no data") != std::string::npos);
}

TEST_CASE("a model-only run of a data file reads its header, never its tensors", "[runner][data]") {
  const fs::path dir = test::fresh_dir("no_data_file");
  // q (1, 64, 1, 256), k and v (1, 64, 131072, 256) F16: 4 GiB each on disk as a hole, 8 GiB each as FP32.
  json header = json::object();
  uint64_t offset = 0;
  for (const auto& [name, len] : {std::pair<const char*, uint64_t>{"q", 1}, {"k", 131072}, {"v", 131072}}) {
    const uint64_t bytes = 2ull * 64 * len * 256;
    header[name] = {{"dtype", "F16"}, {"shape", {1, 64, len, 256}}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  const std::string text = header.dump();
  const fs::path path = dir / "big.safetensors";
  test::write_bytes(path, test::le(text.size(), 8) + text);
  fs::resize_file(path, 8 + text.size() + offset);

  test::ScopedEnv limit("ATTNLAB_MAX_MEMORY_GB", "0.25");
  Runner runner;
  runner.add_backend(std::make_unique<ShapesOnly>());
  const Experiment e = parse_experiment(
      {{"data", {{"file", path.string()}}}, {"variants", {"flash2"}}, {"backends", {"model"}}});
  CHECK(e.problem.kv_len == 131072);
  const long before = peak_rss_kib();
  const Results r = runner.run(e);
  CHECK(peak_rss_kib() - before < 100 * 1024);
  CHECK(r.variants.at(0).model);
  CHECK(r.environment.data_note == kNoDataNote);
}

}  // namespace ATTNLAB_FILE_LOCAL
}  // namespace attnlab
