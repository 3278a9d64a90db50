// attnlab gui: the Experiment panel — every control edits AppState::experiment through set_value (the
// config's own validation), so a value the config would reject is never taken; variant parameters get
// controls generated from their declared specs, clamped to the declared range.
#include "app/gui/panels.h"

#include "core/data/generators.h"
#include "core/gpu_names.h"
#include "core/registry.h"
#include "sim/baselines.h"
#include "sim/gpu_spec.h"

#include <fmt/format.h>
#include <imgui.h>

#include <algorithm>
#include <optional>

namespace attnlab::gui {

namespace {

// Applies one edit on a copy, re-checks the cross-field rules, and keeps it only when both pass.
void apply(AppState& s, const std::string& path, const nlohmann::json& value) {
  Experiment e = s.experiment;
  try {
    set_value(e, path, value, path);
    check_experiment(e);
    s.experiment = std::move(e);
    s.error.clear();
  } catch (const std::exception& ex) {
    s.error = ex.what();
  }
}

void int_field(AppState& s, const char* label, const std::string& path, int64_t value, int64_t lo, int64_t hi) {
  int v = int(value);
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 7);
  if (ImGui::DragInt(label, &v, 1.0f, int(lo), int(hi), "%d", ImGuiSliderFlags_AlwaysClamp) && v != value)
    apply(s, path, v);
}

void param_controls(AppState& s, size_t index, const std::string& prefix, const std::vector<ParamSpec>& specs,
                    const ParamValues& values) {
  for (const auto& p : specs) {
    const std::string path = prefix + p.name, id = fmt::format("{}##{}{}", p.name, index, prefix);
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 8);
    switch (p.type) {
      case ParamType::integer: {
        int v = int(values.integer(p.name));
        if (ImGui::DragInt(id.c_str(), &v, 0.2f, int(p.min), int(p.max), "%d", ImGuiSliderFlags_AlwaysClamp) &&
            v != values.integer(p.name))
          apply(s, path, v);
        break;
      }
      case ParamType::real: {
        double v = values.real(p.name);
        const double lo = p.min, hi = p.max;
        if (ImGui::DragScalar(id.c_str(), ImGuiDataType_Double, &v, float((hi - lo) / 200), &lo, &hi, "%.4g",
                              ImGuiSliderFlags_AlwaysClamp) && v != values.real(p.name))
          apply(s, path, v);
        break;
      }
      case ParamType::boolean: {
        bool v = values.flag(p.name);
        if (ImGui::Checkbox(id.c_str(), &v)) apply(s, path, v);
        break;
      }
      case ParamType::choice: {
        const std::string& now = values.choice(p.name);
        if (ImGui::BeginCombo(id.c_str(), now.c_str())) {
          for (const auto& c : p.choices)
            if (ImGui::Selectable(c.c_str(), c == now) && c != now) apply(s, path, c);
          ImGui::EndCombo();
        }
        break;
      }
    }
    if (ImGui::IsItemHovered() && !p.help.empty()) ImGui::SetTooltip("%s", p.help.c_str());
  }
}

}  // namespace

void draw_experiment_panel(AppState& s) {
  Experiment& e = s.experiment;
  const bool busy = s.worker.busy();
  ImGui::SetNextItemWidth(-ImGui::GetFontSize() * 8);
  ImGui::InputText("##config", s.path_buffer, sizeof(s.path_buffer));
  ImGui::SameLine();
  if (ImGui::Button("Load") && !busy && s.load(s.path_buffer)) s.run();
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("load a config file (JSON); a bad one keeps the current results");
  ImGui::SameLine();
  if (ImGui::Button("Open results") && !busy) s.load_results(s.path_buffer);
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("show saved results computed elsewhere: a results.json, or the folder of attnlab run --save or a report");

  if (ImGui::CollapsingHeader("Problem", ImGuiTreeNodeFlags_DefaultOpen)) {
    const Problem& p = e.problem;
    int_field(s, "batch", "problem.batch", p.batch, 1, 64);
    int_field(s, "query heads", "problem.q_heads", p.q_heads, 1, 128);
    int_field(s, "KV heads", "problem.kv_heads", p.kv_heads, 1, 128);
    if (p.phase == Phase::prefill) int_field(s, "length", "problem.len", p.kv_len, 1, 65536);
    else int_field(s, "KV length", "problem.kv_len", p.kv_len, 1, 65536);
    int_field(s, "head dim", "problem.head_dim", p.head_dim, 8, 256);
    int_field(s, "GPUs", "problem.gpus", p.gpus, 1, kMaxGpus);  // context parallelism: the model's ring (views: HBM traffic)
    bool causal = p.causal;
    if (ImGui::Checkbox("causal", &causal)) apply(s, "problem.causal", causal);
    int phase = p.phase == Phase::decode ? 1 : 0;
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 7);
    if (ImGui::Combo("phase", &phase, "prefill\0decode\0")) apply(s, "problem.phase", phase == 1 ? "decode" : "prefill");
  }
  if (ImGui::CollapsingHeader("Data", ImGuiTreeNodeFlags_DefaultOpen)) {
    // A data file (.safetensors, or a folder of q/k/v .npy) replaces the generator; the config parser
    // checks it and takes the problem's sizes from it, as for a config that names it.
    static char file[1024] = {};
    ImGui::SetNextItemWidth(-ImGui::GetFontSize() * 4);
    ImGui::InputTextWithHint("##file", "data file or folder", file, sizeof(file));
    ImGui::SameLine();
    auto reparse = [&](const nlohmann::json& data) {  // the whole config again, with another data section
      nlohmann::json j = to_json(e);
      j["data"] = data;
      if (data.contains("file"))  // the sizes come from the file (the parser checks any given against it)
        for (const char* f : {"batch", "q_heads", "kv_heads", "q_len", "kv_len", "head_dim"}) j["problem"].erase(f);
      try {
        s.experiment = parse_experiment(j);
        s.error.clear();
      } catch (const std::exception& ex) {
        s.error = ex.what();
      }
    };
    if (ImGui::Button("Use") && file[0]) reparse({{"file", std::string(file)}});
    if (!e.data.file.empty()) {
      ImGui::TextWrapped("file: %s", e.data.file.c_str());
      if (ImGui::SmallButton("use a generator instead")) reparse({{"generator", "llm_like"}, {"seed", 1}});
    } else {
      ImGui::SetNextItemWidth(ImGui::GetFontSize() * 8);
      if (ImGui::BeginCombo("generator", e.data.generator.c_str())) {
        for (const auto& g : data::generator_registry())
          if (ImGui::Selectable(g.name.c_str(), g.name == e.data.generator) && g.name != e.data.generator)
            apply(s, "data.generator", g.name);
        ImGui::EndCombo();
      }
      int_field(s, "seed", "data.seed", int64_t(e.data.seed), 0, 1 << 30);
      if (const auto* g = data::find_generator(e.data.generator))
        param_controls(s, 0, "data.", g->params, e.data.generator_params);
    }
  }
  if (ImGui::CollapsingHeader("Backends and GPU model", ImGuiTreeNodeFlags_DefaultOpen)) {
    for (const auto& b : kBackends) {
      bool on = e.wants(b);
      if (ImGui::Checkbox(b.c_str(), &on)) {
        std::vector<std::string> next;
        for (const auto& x : kBackends)
          if (x == b ? on : e.wants(x)) next.push_back(x);
        if (next.empty()) s.error = "backends: at least one is needed";
        else e.backends = next;
      }
      ImGui::SameLine();
    }
    ImGui::NewLine();
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 9);
    if (ImGui::BeginCombo("GPU model", e.gpu_model.c_str())) {
      // "auto": the GPU the kernels run on (core/gpu_names.h); a spec pins the model to that GPU.
      if (ImGui::Selectable(kAutoGpuModel, e.gpu_model == kAutoGpuModel)) e.gpu_model = kAutoGpuModel;
      for (const auto& g : sim::all_gpu_specs())
        if (ImGui::Selectable(g.id.c_str(), g.id == e.gpu_model)) e.gpu_model = g.id;
      ImGui::EndCombo();
    }
  }
  if (ImGui::CollapsingHeader("Baselines measured elsewhere")) {
    // report.baselines: other implementations' measurement files (docs/configs.md); a file is read when added, so a
    // bad one is refused here, with its reason, and never reaches a run.
    static char path[1024] = {};
    ImGui::SetNextItemWidth(-ImGui::GetFontSize() * 4);
    ImGui::InputTextWithHint("##baseline", "measurements file (.json)", path, sizeof(path));
    ImGui::SameLine();
    if (ImGui::Button("Add") && path[0]) {
      Experiment next = e;
      next.baselines.push_back(path);
      try {
        sim::external_timings(next);
        e = std::move(next);
        s.error.clear();
      } catch (const std::exception& ex) {
        s.error = ex.what();
      }
    }
    std::optional<size_t> drop;
    for (size_t i = 0; i < e.baselines.size(); ++i) {
      ImGui::TextWrapped("%s", e.baselines[i].c_str());
      ImGui::SameLine();
      if (ImGui::SmallButton(fmt::format("remove##baseline{}", i).c_str())) drop = i;
    }
    if (drop) {
      e.baselines.erase(e.baselines.begin() + std::ptrdiff_t(*drop));
      // A speedup over an implementation only the removed file measured would name nothing: it goes with it.
      if (!e.speedup_over.empty() && variants_named(e, e.speedup_over) == 0) {
        bool measured = false;
        try {
          for (const auto& x : sim::external_timings(e)) measured = measured || x.implementation == e.speedup_over;
        } catch (const std::exception&) {  // a file changed on disk since it was added: the run will say so
        }
        if (!measured) e.speedup_over.clear();
      }
    }
    // The speedup's base: a listed variant, or an implementation measured on this problem in the baselines (the files
    // are read when the list opens, not every frame).
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 9);
    if (ImGui::BeginCombo("speedup over", e.speedup_over.empty() ? "none" : e.speedup_over.c_str())) {
      std::vector<std::string> names;
      for (const auto& v : e.variants) names.push_back(v.shown_label());
      try {
        for (const auto& x : sim::external_timings(e)) names.push_back(x.implementation);
      } catch (const std::exception&) {  // a file changed on disk since it was added: the run will say so
      }
      if (ImGui::Selectable("none", e.speedup_over.empty())) e.speedup_over.clear();
      for (const auto& n : names)
        if (ImGui::Selectable(n.c_str(), n == e.speedup_over)) e.speedup_over = n;
      ImGui::EndCombo();
    }
  }
  if (ImGui::CollapsingHeader("Variants", ImGuiTreeNodeFlags_DefaultOpen)) {
    std::optional<size_t> remove;
    for (size_t i = 0; i < e.variants.size(); ++i) {
      const VariantRequest& v = e.variants[i];
      const VariantSpec* spec = find_variant(v.id);
      const std::string name = v.shown_label();
      if (ImGui::TreeNode(fmt::format("{}##variant{}", name, i).c_str())) {
        if (spec) {
          ImGui::TextWrapped("%s", spec->title.c_str());
          // Paths address the variant by id; entries sharing an id (labels) change together.
          param_controls(s, i, v.id + ".", spec->params, v.params);
        }
        if (e.variants.size() > 1 && ImGui::SmallButton("remove")) remove = i;
        ImGui::TreePop();
      }
    }
    if (remove) e.variants.erase(e.variants.begin() + std::ptrdiff_t(*remove));
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 9);
    if (ImGui::BeginCombo("##add", "add a variant")) {
      for (const auto& v : variant_registry())
        if (ImGui::Selectable(v.id.c_str())) {
          VariantRequest r{v.id, ParamValues::defaults(v.params), ""};
          Experiment next = e;
          next.variants.push_back(r);
          try {
            check_experiment(next);
            e = std::move(next);
          } catch (const std::exception& ex) {
            s.error = ex.what();
          }
        }
      ImGui::EndCombo();
    }
  }
  ImGui::Separator();
  if (busy) {
    if (ImGui::Button("Cancel")) s.worker.cancel();
  } else if (ImGui::Button("Run")) {
    s.run();
  }
}

}  // namespace attnlab::gui
