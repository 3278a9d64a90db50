// Hostile and careless config input (the corpus in tests/corpus holds the end-to-end reproducers): integers
// range-checked before conversion, size products that would overflow int64, config files that are not
// regular files or not text, echoed values that stay one short line, --vary values never handed to the
// parser when they nest, and the two environment variables that are inputs too.
#include "core/config.h"
#include "core/error.h"
#include "core/memory.h"
#include "core/parallel.h"
#include "core/params.h"
#include "core/registry.h"
#include "core/sweep.h"
#include "tests/catch.h"
#include "tests/support/input_error.h"
#include "tests/support/scoped_env.h"

#include <nlohmann/json.hpp>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <string>

namespace attnlab {
namespace ATTNLAB_FILE_LOCAL {

using nlohmann::json;
namespace fs = std::filesystem;
using test::input_error;
using test::ScopedEnv;

json small() {
  return json::parse(R"({
    "problem": {"batch": 1, "q_heads": 2, "kv_heads": 1, "q_len": 16, "kv_len": 16, "head_dim": 16},
    "data": {"generator": "normal", "seed": 1},
    "variants": [{"id": "naive"}, {"id": "turbo"}],
    "backends": ["reference"]
  })");
}

std::string error_of(const json& j) {
  return input_error([&] { parse_experiment(j); });
}

fs::path scratch(const std::string& name) {
  const fs::path d = fs::path(ATTNLAB_TEST_TMP) / "guards" / (name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

TEST_CASE("json_integer checks the range before converting", "[config][bad-input]") {
  const int64_t lo = -6, hi = 0;
  CHECK(json_integer(json(-3), lo, hi, "x") == -3);
  CHECK(json_integer(json(-3.0), lo, hi, "x") == -3);  // a float without a fraction is an integer
  CHECK(json_integer(json::parse("0"), lo, hi, "x") == 0);  // parsed as unsigned
  struct Bad {
    json value;
    const char* rule;
  };
  const Bad bad[] = {
      {json::parse("18446744073709551615"), "18446744073709551615 is outside [-6, 0]"},  // not −1
      {json::parse("9223372036854775808"), "9223372036854775808 is outside"},
      {json(1e30), "1e+30 is outside"},
      {json(-1e30), "-1e+30 is outside"},
      {json(-2.5), "expected integer, got number"},
      {json("3"), "expected integer, got string"},
      {json(7), "7 is outside [-6, 0]"},
  };
  for (const Bad& b : bad) {
    const std::string msg = input_error([&] { json_integer(b.value, lo, hi, "turbo.n_r"); });
    INFO(b.value.dump() << " -> " << msg);
    CHECK(test::starts(msg, "turbo.n_r"));
    CHECK(msg.find(b.rule) != std::string::npos);
  }
  // The full int64 range: 2^63 as a float must not be converted (it does not fit).
  const int64_t min = std::numeric_limits<int64_t>::min(), max = std::numeric_limits<int64_t>::max();
  CHECK(input_error([&] { json_integer(json(0x1p63), min, max, "b"); }).find("does not fit a 64-bit integer") !=
        std::string::npos);
  CHECK(json_integer(json(-0x1p63), min, max, "b") == min);
}

TEST_CASE("integer parameters and problem sizes beyond their range are refused, not wrapped", "[config][bad-input]") {
  json j = small();
  j["variants"][1]["params"]["n_r"] = json::parse("18446744073709551615");
  std::string msg = error_of(j);
  CHECK(test::starts(msg, "variants[1].params.n_r"));
  CHECK(msg.find("18446744073709551615 is outside [-") != std::string::npos);

  j = small();
  j["problem"]["kv_len"] = 1e30;
  msg = error_of(j);
  CHECK(test::starts(msg, "problem.kv_len"));
  CHECK(msg.find("1e+30 does not fit a 64-bit integer") != std::string::npos);

  // B·H·N·d that wraps int64 (2^51·2·64·64 = 2^64) or exceeds 2^60: refused by the problem's rules.
  for (const json& batch : {json(2251799813685248), json(std::numeric_limits<int64_t>::max())}) {
    j = small();
    j["problem"] = {{"batch", batch}, {"q_heads", 2}, {"kv_heads", 2}, {"q_len", 64}, {"kv_len", 64}, {"head_dim", 64}};
    msg = error_of(j);
    INFO(msg);
    CHECK(test::starts(msg, "problem"));
    CHECK(msg.find(batch.dump() + "·2·64·64 exceeds 2^60") != std::string::npos);
  }
  // The score matrices too: q_len·kv_len over all heads.
  j = small();
  j["problem"]["q_len"] = int64_t{1} << 31;
  j["problem"]["kv_len"] = int64_t{1} << 31;
  CHECK(error_of(j).find("(scores)") != std::string::npos);
}

TEST_CASE("a config must be a regular text file: folders, FIFOs, symlink loops, NUL bytes", "[config][bad-input]") {
  const fs::path dir = scratch("files");
  const auto message = [](const fs::path& p) { return input_error([&] { load_experiment(p.string()); }); };

  CHECK(message(dir).find("is a folder, expected a file") != std::string::npos);

  const fs::path fifo = dir / "f.json";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK(message(fifo).find("not a regular file") != std::string::npos);  // returns: nothing was opened

  fs::create_symlink(dir / "b.json", dir / "a.json");
  fs::create_symlink(dir / "a.json", dir / "b.json");
  CHECK(message(dir / "a.json").find("symbolic link loop") != std::string::npos);

  const std::string text = small().dump();
  std::ofstream(dir / "nul.json", std::ios::binary) << text << '\0' << R"({"variants": ["x"]})";
  std::string msg = message(dir / "nul.json");
  CHECK(test::starts(msg, (dir / "nul.json").string()));
  CHECK(msg.find("NUL byte at byte " + std::to_string(text.size())) != std::string::npos);

  std::ofstream(dir / "big.json") << R"({"problem": {"batch": 1e999}})";
  CHECK(message(dir / "big.json").find("beyond the double range") != std::string::npos);

  // Nested far past any config (a stack overflow when copied, before the guard); text after the data.
  std::ofstream(dir / "deep.json") << R"({"variants": [{"id": "flash2", "params": {"block_r": )" << std::string(90000, '[')
                                   << std::string(90000, ']') << "}}]}";
  CHECK(message(dir / "deep.json").find("deeper than 64") != std::string::npos);
}

TEST_CASE("values from the input are echoed escaped and cut: one short line", "[config][bad-input]") {
  const std::string huge(10'000'000, 'x');
  struct Case {
    const char* what;
    std::function<void(json&)> edit;
    std::string expect;
  };
  const std::vector<Case> cases = {
      {"variant id", [](json& j) { j["variants"][0]["id"] = "na\nive"; }, "unknown variant 'na\\nive'"},
      {"huge variant id", [&](json& j) { j["variants"][0]["id"] = huge; }, "bytes in all)"},
      {"choice", [](json& j) { j["variants"][1]["params"]["poly"] = "pa\nper"; }, "'pa\\nper' is not one of"},
      {"generator", [](json& j) { j["data"]["generator"] = "nor\r\nmal"; }, "unknown generator 'nor\\r\\nmal'"},
      {"field name", [](json& j) { j["problem"]["bat\nch"] = 1; }, "problem.bat\\nch: unknown field"},
      {"parameter name", [](json& j) { j["variants"][1]["params"]["n\tr"] = 1; }, "params.n\\tr: unknown parameter"},
      {"label", [](json& j) { j["variants"][0]["label"] = "a\nb"; }, "'a\\nb' holds a control character"},
      {"huge label", [&](json& j) { j["variants"][0]["label"] = huge; }, "longer than 200 bytes"},
      {"gpu_model", [](json& j) { j["gpu_model"] = "h100\x1b[2J"; }, "'h100\\x1b[2J' holds a control character"},
  };
  for (const Case& c : cases) {
    json j = small();
    c.edit(j);
    const std::string msg = error_of(j);
    INFO(c.what << " -> " << msg.substr(0, 300));
    CHECK(msg.find(c.expect) != std::string::npos);
    CHECK(msg.find('\n') == std::string::npos);
    CHECK(msg.find('\r') == std::string::npos);
    CHECK(msg.size() < 400);
  }
}

TEST_CASE("--vary values: scalars parsed through the guard, nested text never parsed", "[sweep][bad-input]") {
  const SweepAxis a = parse_axis("n_r=-6,tile," + std::string(60000, '[') + std::string(60000, ']') + ",true");
  REQUIRE(a.values.size() == 4);
  CHECK(a.values[0] == json(-6));
  CHECK(a.values[1] == json("tile"));
  CHECK(a.values[2].is_string());  // the nested value stays text; set_value then names its type
  CHECK(a.values[3] == json(true));
  CHECK(test::starts(input_error([] { parse_axis("n_r=1e999"); }), "--vary"));
  const std::string msg = input_error([] { parse_axis("bad\nspec"); });
  CHECK(msg.find("'bad\\nspec'") != std::string::npos);
}

TEST_CASE("ATTNLAB_THREADS and ATTNLAB_MAX_MEMORY_GB are range-checked inputs", "[runner][bad-input]") {
  {
    ScopedEnv env("ATTNLAB_THREADS", "3");
    CHECK(worker_threads() == 3);
  }
  {
    ScopedEnv env("ATTNLAB_THREADS", "");  // set but empty: the default
    CHECK(worker_threads() >= 1);
  }
  for (const char* bad : {"99999999999", "0", "-2", "4097", "2x", "1.5", " 2"}) {
    ScopedEnv env("ATTNLAB_THREADS", bad);
    const std::string msg = input_error([] { worker_threads(); });
    INFO(bad << " -> " << msg);
    CHECK(test::starts(msg, "ATTNLAB_THREADS"));
    CHECK(msg.find("[1, 4096]") != std::string::npos);
  }
  {
    ScopedEnv env("ATTNLAB_MAX_MEMORY_GB", "0.5");
    CHECK(memory_limit_bytes() == 0.5 * double(1ull << 30));
  }
  for (const char* bad : {"nan", "-1", "0", "lots", "inf", "1e300", "2GB"}) {
    ScopedEnv env("ATTNLAB_MAX_MEMORY_GB", bad);
    const std::string msg = input_error([] { memory_limit_bytes(); });
    INFO(bad << " -> " << msg);
    CHECK(test::starts(msg, "ATTNLAB_MAX_MEMORY_GB"));
  }
}

TEST_CASE("every variant declares its working memory, growing with the problem", "[runner]") {
  Problem p;
  p.batch = 1, p.q_heads = 4, p.kv_heads = 2, p.q_len = 128, p.kv_len = 128, p.head_dim = 64;
  Problem bigger = p;
  bigger.kv_len = 4096, bigger.q_len = 4096;
  for (const VariantSpec& v : variant_registry()) {
    INFO(v.id);
    REQUIRE(v.working_memory);
    const ParamValues params = ParamValues::defaults(v.params);
    const double small_bytes = v.working_memory(p, params, 2), big_bytes = v.working_memory(bigger, params, 2);
    CHECK(small_bytes >= 4.0 * double(p.q_shape().count()));  // at least its FP32 output
    CHECK(big_bytes > small_bytes);
    CHECK(v.working_memory(bigger, params, 1) <= big_bytes);  // fewer threads, less scratch
  }
}

TEST_CASE("the estimate counts the truth only when it is computed, the variants only when they run", "[runner]") {
  json j = small();
  j["problem"]["q_len"] = j["problem"]["kv_len"] = 2048;
  const Experiment with_reference = parse_experiment(j);
  j["backends"] = {"kernel", "model"};  // attnlab bench: timings only
  const Experiment kernels_only = parse_experiment(j);
  const MemoryEstimate full = estimate_memory(with_reference, 2);
  CHECK(full.truth > 0);
  CHECK(full.truth_scratch > 0);
  CHECK(full.variant > 0);
  const MemoryEstimate timing = estimate_memory(kernels_only, 2, /*ground_truth=*/false);
  CHECK(timing.truth == 0);
  CHECK(timing.truth_scratch == 0);
  CHECK(timing.variant == 0);
  CHECK(timing.inputs == full.inputs);
  CHECK(timing.total() < full.total());
}

}  // namespace
}  // namespace attnlab
