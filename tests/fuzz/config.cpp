// libFuzzer target: config text → Experiment, the way `attnlab run --config` reads it: the guarded
// JSON reader (core/json_input.h parse_json_text), then parse_experiment (core/config.h). An accepted
// config must also
//   - round-trip: to_json(e) is itself a config that parses to the same to_json (the GUI, presets and
//     results.json all rely on it: config.h calls it "the complete config, defaults filled in");
//   - give the cost model a finite prediction or a refusal for each variant (model_checks.h).
// "data": {"file": …} is resolved against a scratch folder holding a small qkv.safetensors and an
// npy/ folder of q.npy, k.npy, v.npy; absolute paths and ".." are skipped, so a run never reads the
// machine's other files and every finding reproduces anywhere.
#include "core/config.h"
#include "core/data/npy.h"
#include "core/data/safetensors.h"
#include "core/json_input.h"
#include "tests/fuzz/fuzz_support.h"
#include "tests/fuzz/model_checks.h"

#include <filesystem>

namespace {

using namespace attnlab;

// q (1, 2, 8, 16), k and v (1, 1, 8, 16): grouped-query attention, the smallest legal head dimension.
void write_data_files() {
  QKV t{Tensor({1, 2, 8, 16}, 0.25f), Tensor({1, 1, 8, 16}, -0.5f), Tensor({1, 1, 8, 16}, 1.0f)};
  data::save_safetensors(fuzz::scratch_dir() + "/qkv.safetensors", t, data::Dtype::f16);
  data::save_npy_folder(fuzz::scratch_dir() + "/npy", t, data::Dtype::f32);
}

bool reads_outside_scratch(const nlohmann::json& j) {
  if (!j.is_object() || !j.contains("data") || !j["data"].is_object() || !j["data"].contains("file") ||
      !j["data"]["file"].is_string())
    return false;
  const std::filesystem::path p = j["data"]["file"].get<std::string>();
  if (p.is_absolute()) return true;
  for (const auto& part : p)
    if (part == "..") return true;
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  write_data_files();
  (void)fuzz::reference_gpu();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::refusals_allowed([&] {
    const nlohmann::json j = parse_json_text(fuzz::as_text(data, size), "config");
    if (reads_outside_scratch(j)) return;
    const Experiment e = parse_experiment(j, fuzz::scratch_dir());

    const nlohmann::json full = to_json(e);
    Experiment again;
    try {
      again = parse_experiment(parse_json_text(full.dump(), "to_json"), fuzz::scratch_dir());
    } catch (const InputError& err) {
      fuzz::check(false, std::string("to_json of an accepted config is refused: ") + err.what());
    }
    fuzz::check(to_json(again) == full, "to_json does not round-trip: " + full.dump() + " became " +
                                            to_json(again).dump());

    for (const VariantRequest& v : e.variants) fuzz::check_prediction(e.problem, v, fuzz::reference_gpu());
  });
  return 0;
}
