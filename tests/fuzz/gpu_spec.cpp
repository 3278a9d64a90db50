// libFuzzer target: a GPU spec file through load_gpu_spec_file (sim/gpu_spec.h), then what the cost
// model reads from it: every unit's peak rate and efficiency, and a prediction for every variant on the
// default prefill and decode problems (model_checks.h). An accepted spec must give finite, non-negative
// rates.
//
// The spec's "id" must equal its file name, so the input is written to "<id>.json" when its id is a
// plain file name (the seeds are the real specs and pass that check), else to "fuzz.json".
#include "core/json_input.h"
#include "core/registry.h"
#include "sim/gpu_spec.h"
#include "tests/fuzz/fuzz_support.h"
#include "tests/fuzz/model_checks.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

namespace {

using namespace attnlab;

std::string file_name_for(std::string_view text) {
  try {
    const nlohmann::json j = parse_json_text(text, "spec");
    if (j.is_object() && j.contains("id") && j["id"].is_string()) {
      const std::string id = j["id"].get<std::string>();
      const bool plain = !id.empty() && id.size() <= 64 && id[0] != '.' &&
                         std::all_of(id.begin(), id.end(), [](char c) {
                           return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
                         });
      if (plain) return id + ".json";
    }
  } catch (const InputError&) {
  }
  return "fuzz.json";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::write_scratch(file_name_for(fuzz::as_text(data, size)), data, size);
  fuzz::refusals_allowed([&] {
    const sim::GpuSpec g = sim::load_gpu_spec_file(path);
    for (const sim::Unit u : sim::kUnits) {
      fuzz::check(std::isfinite(g.peak(u)) && g.peak(u) >= 0, std::string("peak(") + sim::to_string(u) + ") of an accepted spec");
      fuzz::check(std::isfinite(g.efficiency_of(u)) && g.efficiency_of(u) > 0,
                  std::string("efficiency_of(") + sim::to_string(u) + ") of an accepted spec");
    }
    Problem prefill, decode;
    decode.phase = Phase::decode;
    decode.q_len = 1;
    for (const VariantSpec& spec : variant_registry()) {
      const VariantRequest v{spec.id, ParamValues::defaults(spec.params), ""};
      for (const Problem& p : {prefill, decode})
        if (spec.supports(p.phase)) fuzz::check_prediction(p, v, g);
    }
  });
  // Each input gets its own file name; remove it so the scratch folder does not grow.
  std::remove(path.c_str());
  return 0;
}
