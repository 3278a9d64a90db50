// The data files' field tables (sim/data_fields.h): every shipped file passes its table, and for every
// declared number a value just outside its range, a fraction where an integer belongs, an unknown field,
// a missing required one and a two-line text are each refused naming the field.
#include "core/error.h"
#include "sim/calibrate.h"
#include "sim/capacity.h"
#include "sim/data_fields.h"
#include "sim/gpu_spec.h"
#include "tests/catch.h"
#include "tests/support/input_error.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>

namespace attnlab::sim {
namespace ATTNLAB_FILE_LOCAL {

namespace fs = std::filesystem;
using nlohmann::json;

json read(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in);
}

// Writes `j` as <dir>/<name> and returns the InputError `load` throws for it ("" if none).
std::string error_for(const json& j, const std::string& name, const std::function<void(const std::string&)>& load) {
  const fs::path dir = fs::path(ATTNLAB_TEST_TMP) / "fields";
  fs::create_directories(dir);
  const std::string path = (dir / name).string();
  std::ofstream(path) << j.dump();
  return test::input_error([&] { load(path); });
}

void check_table(const FieldTable& t) {
  std::set<std::string> names;
  for (const FieldSpec& f : t) {
    INFO(f.name);
    CHECK(names.insert(f.name).second);
    CHECK(!f.help.empty());
    CHECK(f.min <= f.max);
    if (f.fields && f.type != FieldType::array) check_table(f.fields());
    if (f.type == FieldType::array) CHECK(f.fields().size() == 1);
  }
}

// For every integer and real row of `table` (at `at` in `good`, shown as `shown` in messages): below the
// minimum, above the maximum, ±1e300 and a fraction for an integer are refused, naming "<file>.<shown><name>".
void check_ranges(const json& good, const FieldTable& table, const json::json_pointer& at, const std::string& shown,
                  const std::string& name, const std::function<void(const std::string&)>& load) {
  for (const FieldSpec& f : table) {
    if (f.type != FieldType::integer && f.type != FieldType::real) continue;
    const std::string field = name + "." + shown + f.name + ": ";
    auto with = [&](double value) {
      json j = good;
      json& slot = j[at][f.name];
      (f.sourced ? slot["value"] : slot) = value;
      return error_for(j, name, load);
    };
    for (const double bad : {f.min - std::max(1.0, std::abs(f.min)), f.max * 2 + 1, 1e300, -1e300}) {
      const std::string e = with(bad);
      INFO(field << bad << " gave: " << e);
      CHECK(e.find(field) != std::string::npos);
      CHECK(e.find("is outside") != std::string::npos);
    }
    if (f.type == FieldType::integer) {
      const std::string e = with(f.min + 0.5);
      INFO(e);
      CHECK(e.find(field + "expected integer") != std::string::npos);
    }
  }
}

const FieldSpec& row(const FieldTable& t, const std::string& name) {
  return *std::find_if(t.begin(), t.end(), [&](const FieldSpec& f) { return f.name == name; });
}

TEST_CASE("field tables: names unique, ranges ordered, every row explained", "[sim][fields]") {
  for (const FieldTable* t : {&gpu_spec_fields(), &llm_fields(), &measurement_file_fields(), &measurement_fields()})
    check_table(*t);
}

TEST_CASE("GPU spec fields: every number out of range, a fraction of an SM, unknown and missing fields refused",
          "[sim][fields][bad-input]") {
  const json good = read(specs_dir() + "/h100-sxm5.json");
  const auto load = [](const std::string& p) { load_gpu_spec_file(p); };
  const std::string name = "h100-sxm5.json";
  REQUIRE(error_for(good, name, load).empty());
  check_ranges(good, gpu_spec_fields(), json::json_pointer(""), "", name, load);
  check_ranges(good, row(gpu_spec_fields(), "tensor_tflops").fields(), json::json_pointer("/tensor_tflops"),
               "tensor_tflops.", name, load);
  check_ranges(good, row(gpu_spec_fields(), "measured").fields(), json::json_pointer("/measured"), "measured.", name,
               load);
  for (const FieldSpec& f : gpu_spec_fields()) {
    json j = good;
    j.erase(f.name);
    const std::string e = error_for(j, name, load);
    INFO(f.name << ": " << e);
    if (f.required) CHECK(e.find(name + "." + f.name + ": missing") != std::string::npos);
    else CHECK(e.empty());
  }
  json j = good;
  j["sm_count"]["unit"] = "SMs";
  CHECK(error_for(j, name, load).find("sm_count.unit: unknown field") != std::string::npos);
  j = good;
  j["boost"] = 1;
  CHECK(error_for(j, name, load).find(name + ".boost: unknown field") != std::string::npos);
  j = good;
  j["name"] = "H100\nattnlab: error: forged";
  CHECK(error_for(j, name, load).find(name + ".name: 'H100\\nattnlab") != std::string::npos);
  j = good;
  j["sm_clock_ghz"]["source"] = std::string(5000, 's');
  CHECK(error_for(j, name, load).find("sm_clock_ghz.source: ") != std::string::npos);
  j = good;
  j["smem_per_cta_bytes"]["value"] = 233473;
  CHECK(error_for(j, name, load).find("smem_per_cta_bytes: 233473 exceeds smem_per_sm_bytes") != std::string::npos);
  j = good;
  j["measured"]["not_identifiable"] = {"cvt", "warp_drive"};
  CHECK(error_for(j, name, load).find("measured.not_identifiable[1]: 'warp_drive' is not one of") != std::string::npos);
  j = good;
  j["measured"]["median_error_after"] = "small";
  CHECK(error_for(j, name, load).find("measured.median_error_after: expected number, got text") != std::string::npos);
}

TEST_CASE("model file fields: ranges, kv_heads named as the file's field, MLA-only fields",
          "[sim][fields][bad-input]") {
  const json good = read(models_dir() + "/llama-3-8b.json");
  const auto load = [](const std::string& p) { load_llm(p); };
  const std::string name = "llama-3-8b.json";
  REQUIRE(error_for(good, name, load).empty());
  check_ranges(good, llm_fields(), json::json_pointer(""), "", name, load);
  json j = good;
  j["kv_heads"] = 1e9;
  CHECK(error_for(j, name, load).find(name + ".kv_heads: 1000000000 is outside [1, 1024]") != std::string::npos);
  j = good;
  j["kv_heads"] = 5;
  CHECK(error_for(j, name, load).find(name + ".kv_heads: 5 does not divide q_heads (32)") != std::string::npos);
  j = good;
  j["kv_lora_rank"] = 512;
  CHECK(error_for(j, name, load).find(name + ".kv_lora_rank: only for attention mla") != std::string::npos);
  j = good;
  j["attention"] = "mla";
  CHECK(error_for(j, name, load).find(name + ".kv_lora_rank: missing") != std::string::npos);
  j = good;
  j["layer"] = 32;
  CHECK(error_for(j, name, load).find(name + ".layer: unknown field") != std::string::npos);
  j = good;
  j["id"] = "llama-3-8b-instruct";
  CHECK(error_for(j, name, load).find(name + ".id: 'llama-3-8b-instruct' must equal the file name") !=
        std::string::npos);
  for (const auto& m : all_llms()) CHECK(m.layers > 0);  // every shipped model passes
}

TEST_CASE("measurement file fields: schema and gpu of the wrong type, huge and unknown fields",
          "[sim][fields][bad-input]") {
  const json good = read(std::string(ATTNLAB_SOURCE_DIR) + "/sim/measurements/h100-sxm5-sdpa-flash.json");
  const auto load = [](const std::string& p) { load_measurements(p); };
  const std::string name = "m.json";
  REQUIRE(error_for(good, name, load).empty());
  check_ranges(good, measurement_fields(), json::json_pointer("/measurements/0"), "measurements[0].", name, load);
  json j = good;
  j["schema"] = 1;
  CHECK(error_for(j, name, load).find(name + ".schema: expected text, got integer") != std::string::npos);
  j = good;
  j["gpu"] = 5;
  CHECK(error_for(j, name, load).find(name + ".gpu: expected text (an id), got integer") != std::string::npos);
  j = good;
  j["gpu"] = "../../etc/h100";  // the spec calibrate would write: an id, never a path
  CHECK(error_for(j, name, load).find(name + ".gpu: '../../etc/h100' is not an id") != std::string::npos);
  j = good;
  j["measurements"][2]["median_sec"] = 1;
  CHECK(error_for(j, name, load).find(name + ".measurements[2].median_sec: unknown field") != std::string::npos);
  j = good;
  j["measurements"] = json::array();
  CHECK(error_for(j, name, load).find(name + ".measurements: has 0 entries") != std::string::npos);
  j = good;
  j["device"] = {{"name", "H100"}, {"sms", 132.5}};
  CHECK(error_for(j, name, load).find(name + ".device.sms: expected integer") != std::string::npos);
  for (const char* file : {"h100-attnlab-kernels.json", "h200-attnlab-kernels.json"})
    CHECK(!load_measurements(std::string(ATTNLAB_SOURCE_DIR) + "/sim/measurements/" + file).empty());
}

TEST_CASE("data file names: ids, paths, and names that are neither", "[sim][fields][bad-input]") {
  CHECK(is_file_id("h100-sxm5"));
  CHECK(is_file_id("llama-3.1_8b"));
  const std::vector<std::string> bad_ids = {"", ".hidden", "-x", "a/b", "a b", "h1\n00", std::string(65, 'a'), "..", "a..b"};
  for (const std::string& bad : bad_ids) {
    INFO(bad);
    CHECK(!is_file_id(bad));
  }
  const std::string dir = specs_dir();
  CHECK(data_file_path("h100-sxm5", dir, "GPU", "--gpu") == dir + "/h100-sxm5.json");
  CHECK(data_file_path("my/gpu.json", dir, "GPU", "--gpu") == "my/gpu.json");
  CHECK(data_file_path("gpu.json", dir, "GPU", "--gpu") == "gpu.json");
  // A path must end in .json; an id has no '/' and no "..": nothing else is read, wherever it points.
  for (const char* neither : {"my/gpu", "../../../../etc/passwd", "/etc/passwd", "..", "a..b", "../specs/h100-sxm5"}) {
    INFO(neither);
    CHECK(data_file_name(neither) == DataFileName::neither);
    const std::string why = test::input_error([&] { data_file_path(neither, dir, "GPU", "gpu_model"); });
    CHECK(test::starts(why, "gpu_model"));
    CHECK(why.find("is neither a GPU id") != std::string::npos);
    CHECK(why.find("nor a path to a .json file") != std::string::npos);
  }
  CHECK(data_file_name("h100-sxm5") == DataFileName::id);
  CHECK(data_file_name("../mine/h100-sxm5.json") == DataFileName::path);
  const std::string unknown = test::input_error([&] { data_file_path("h900", dir, "GPU", "--gpu"); });
  CHECK(test::starts(unknown, "--gpu"));
  CHECK(unknown.find("h100-sxm5") != std::string::npos);  // the known ids are listed
  const std::string long_name = test::input_error([&] { data_file_path(std::string(300, 'a'), dir, "GPU", "--gpu"); });
  CHECK(test::starts(long_name, "--gpu"));
  CHECK(long_name.size() < 300);  // echoed cut, not whole
  CHECK(long_name.find("is neither a GPU id") != std::string::npos);
}

TEST_CASE("a GPU spec or model file's errors name the field or option that named it", "[sim][fields][bad-input]") {
  const fs::path dir = fs::path(ATTNLAB_TEST_TMP) / "named_files";
  fs::create_directories(dir);
  const std::string text = (dir / "passwd.json").string();
  std::ofstream(text) << "root:x:0:0:root:/root:/bin/bash\n";  // a file that is no spec, under a .json name
  for (const std::string where : {"gpu_model", "--gpu"}) {
    const std::string why = test::input_error([&] { load_gpu_spec(text, where); });
    CHECK(test::starts(why, where));
    CHECK(why.find(where + ": " + echo_path(text) + ": not valid JSON") == 0);
  }
  CHECK(test::input_error([&] { load_llm(text, "--model"); }).find("--model: " + echo_path(text) + ": not valid JSON") == 0);
  // A field's error, through a spec that is valid JSON: "<where>: <path>.<field>: <rule>".
  json spec = read(specs_dir() + "/h100-sxm5.json");
  spec["sm_count"]["value"] = 0.5;
  const std::string file = (dir / "h100-sxm5.json").string();
  std::ofstream(file) << spec.dump();
  CHECK(test::input_error([&] { load_gpu_spec(file); }).find("gpu_model: " + echo_path(file) + ".sm_count: ") == 0);
  // The climbing path of the issue: refused by its name, never opened.
  CHECK(test::starts(test::input_error([] { load_gpu_spec("../../../../etc/passwd"); }), "gpu_model"));
  CHECK(test::starts(test::input_error([] { load_llm("../../../../etc/passwd", "--model"); }), "--model"));
}

}  // namespace
}  // namespace attnlab::sim
