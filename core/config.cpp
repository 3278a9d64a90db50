#include "core/config.h"

#include "core/data/generators.h"
#include "core/data/loaders.h"
#include "core/error.h"
#include "core/json_input.h"
#include "core/registry.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <utility>

namespace attnlab {

using nlohmann::json;
namespace fs = std::filesystem;

bool Experiment::wants(const std::string& backend) const {
  return std::find(backends.begin(), backends.end(), backend) != backends.end();
}

namespace {

constexpr size_t kMaxNameBytes = 200;

void require_object(const json& j, const std::string& where) {
  if (!j.is_object()) fail_input(where, "expected an object");
}

// A name shown in tables, legends, file names and messages (labels, the GPU id): one line of text.
std::string name_text(const json& v, const std::string& where) {
  if (!v.is_string() || v.get<std::string>().empty()) fail_input(where, "expected a non-empty string");
  const std::string s = v.get<std::string>();
  if (s.size() > kMaxNameBytes)
    fail_input(where, fmt::format("'{}' is longer than {} bytes", echo(s, 40), kMaxNameBytes));
  if (std::any_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }))
    fail_input(where, fmt::format("'{}' holds a control character (a name is one line of text)", echo(s)));
  return s;
}

std::string generator_names() {
  std::vector<std::string> names;
  for (const auto& g : data::generator_registry()) names.push_back(g.name);
  return fmt::format("{}", fmt::join(names, ", "));
}

void reject_unknown(const json& j, const std::vector<std::string>& known, const std::string& where) {
  for (const auto& [key, _] : j.items())
    if (std::find(known.begin(), known.end(), key) == known.end())
      fail_input(where + "." + echo(key), fmt::format("unknown field (known: {})", fmt::join(known, ", ")));
}

// Range-checked before conversion (json_integer); the problem's own rules (positive, products that fit)
// are validate()'s.
int64_t get_int(const json& j, const char* key, int64_t def, const std::string& where) {
  if (!j.contains(key)) return def;
  return json_integer(j.at(key), std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(),
                      where + "." + key);
}

// A non-negative integer (seeds): 0 … 2^64 − 1.
uint64_t get_seed(const json& v, const std::string& where) {
  if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0))
    fail_input(where, "expected a non-negative integer");
  return v.get<uint64_t>();
}

Problem parse_problem(const json& j, const std::string& where) {
  Problem p;
  if (j.is_null()) return p;
  require_object(j, where);
  reject_unknown(j, {"batch", "q_heads", "kv_heads", "q_len", "kv_len", "head_dim", "causal", "phase", "softmax_scale",
                     "gpus"},
                 where);
  p.batch = get_int(j, "batch", p.batch, where);
  p.q_heads = get_int(j, "q_heads", p.q_heads, where);
  p.kv_heads = get_int(j, "kv_heads", j.contains("q_heads") ? p.q_heads : p.kv_heads, where);
  p.kv_len = get_int(j, "kv_len", p.kv_len, where);
  p.head_dim = get_int(j, "head_dim", p.head_dim, where);
  p.gpus = get_int(j, "gpus", p.gpus, where);
  if (j.contains("causal")) {
    if (!j["causal"].is_boolean()) fail_input(where + ".causal", "expected true or false");
    p.causal = j["causal"].get<bool>();
  }
  if (j.contains("phase")) {
    const json& ph = j["phase"];
    if (ph == "prefill") p.phase = Phase::prefill;
    else if (ph == "decode") p.phase = Phase::decode;
    else fail_input(where + ".phase", "must be \"prefill\" or \"decode\"");
  }
  // Decode attends one new token; prefill defaults to a square problem.
  p.q_len = get_int(j, "q_len", p.phase == Phase::decode ? 1 : p.kv_len, where);
  if (j.contains("softmax_scale")) {
    if (!j["softmax_scale"].is_number()) fail_input(where + ".softmax_scale", "expected a number");
    p.softmax_scale = j["softmax_scale"].get<double>();
  }
  return p;
}

DataSpec parse_data(const json& j, const std::string& where, const std::string& base_dir) {
  DataSpec d;
  const GeneratorSpec* gen = data::find_generator(d.generator);
  if (j.is_null()) {
    d.generator_params = ParamValues::defaults(gen->params);
    return d;
  }
  require_object(j, where);
  if (j.contains("file")) {
    reject_unknown(j, {"file"}, where);
    if (!j["file"].is_string() || j["file"].get<std::string>().empty())
      fail_input(where + ".file", "expected a path to a .safetensors file or a folder of .npy files");
    fs::path path = j["file"].get<std::string>();
    if (path.is_relative()) path = fs::path(base_dir) / path;
    d.file = path.lexically_normal().string();
    d.generator.clear();
    return d;
  }
  if (j.contains("generator")) {
    if (!j["generator"].is_string()) fail_input(where + ".generator", "expected a string");
    d.generator = j["generator"].get<std::string>();
  }
  gen = data::find_generator(d.generator);
  if (!gen)
    fail_input(where + ".generator",
               fmt::format("unknown generator '{}' (known: {})", echo(d.generator), generator_names()));
  if (j.contains("seed")) d.seed = get_seed(j["seed"], where + ".seed");
  // Generator parameters sit beside "generator" and "seed" (or in "params").
  json given = j.contains("params") ? j["params"] : json::object();
  for (const auto& [key, value] : j.items())
    if (key != "generator" && key != "seed" && key != "params") given[key] = value;
  d.generator_params = ParamValues::parse(gen->params, given, where);
  return d;
}

std::vector<VariantRequest> parse_variants(const json& j, const std::string& where) {
  if (j.is_null()) return {{"flash2", ParamValues::defaults(find_variant("flash2")->params), ""}};
  if (!j.is_array() || j.empty()) fail_input(where, "expected a non-empty list of variants");
  std::vector<VariantRequest> out;
  for (size_t i = 0; i < j.size(); ++i) {
    const std::string at = fmt::format("{}[{}]", where, i);
    const json& v = j[i];
    if (v.is_string()) {
      out.push_back({v.get<std::string>(), {}, ""});
    } else {
      require_object(v, at);
      reject_unknown(v, {"id", "params", "label"}, at);
      if (!v.contains("id") || !v["id"].is_string()) fail_input(at + ".id", "expected the variant id (a string)");
      out.push_back({v["id"].get<std::string>(), {}, ""});
      if (v.contains("label")) out.back().label = name_text(v["label"], at + ".label");
    }
    const VariantSpec* spec = find_variant(out.back().id);
    if (!spec) {
      std::vector<std::string> ids;
      for (const auto& s : variant_registry()) ids.push_back(s.id);
      fail_input(at + ".id",
                 fmt::format("unknown variant '{}' (known: {})", echo(out.back().id), fmt::join(ids, ", ")));
    }
    const json params = v.is_object() && v.contains("params") ? v["params"] : json();
    out.back().params = ParamValues::parse(spec->params, params, at + ".params");
  }
  return out;
}

std::vector<std::string> parse_backends(const json& j, const std::string& where) {
  if (j.is_null()) return {"reference"};
  if (!j.is_array() || j.empty()) fail_input(where, "expected a non-empty list of backends");
  std::vector<std::string> out;
  for (size_t i = 0; i < j.size(); ++i) {
    const std::string at = fmt::format("{}[{}]", where, i);
    if (!j[i].is_string() || std::find(kBackends.begin(), kBackends.end(), j[i].get<std::string>()) == kBackends.end())
      fail_input(at, fmt::format("must be one of: {}", fmt::join(kBackends, ", ")));
    if (std::find(out.begin(), out.end(), j[i].get<std::string>()) == out.end()) out.push_back(j[i]);
  }
  return out;
}

ProbeRequest parse_probe(const json& j, const std::string& where) {
  ProbeRequest r;
  if (j.is_null()) return r;
  require_object(j, where);
  reject_unknown(j, {"batch", "head", "row_block"}, where);
  r.batch = get_int(j, "batch", 0, where);
  r.head = get_int(j, "head", 0, where);
  // "last" (the default) or an index ≥ 0; variants with fewer row blocks trace their last.
  if (const auto it = j.find("row_block"); it != j.end() && !(it->is_string() && *it == "last")) {
    if (it->is_string()) fail_input(where + ".row_block", "must be \"last\" or an index ≥ 0");
    r.row_block = get_int(j, "row_block", 0, where);
    if (r.row_block < 0) fail_input(where + ".row_block", "must be \"last\" or an index ≥ 0");
  }
  return r;
}

// Takes the problem's sizes from the data file's headers (nothing else is read: the runner checks the
// memory the data needs before loading it). A size the config also states must agree: a config value that
// contradicts the file is ambiguous (which did the user mean?), so it is refused, every such field in one line
// that says to remove them, rather than silently overruled.
void adopt_file_shapes(Experiment& e, const json& problem_json) {
  const data::QkvShapes t = data::read_qkv_shapes(e.data.file);
  const std::pair<const char*, int64_t> from_file[] = {{"batch", t.q.batch}, {"q_heads", t.q.heads},
                                                       {"kv_heads", t.k.heads}, {"q_len", t.q.len},
                                                       {"kv_len", t.k.len},  {"head_dim", t.q.dim}};
  std::vector<std::string> stated, in_file;
  for (const auto& [field, n] : from_file)
    if (problem_json.is_object() && problem_json.contains(field) && get_int(problem_json, field, 0, "problem") != n) {
      stated.push_back(fmt::format("{} {}", field, problem_json[field].dump()));
      in_file.push_back(std::to_string(n));
    }
  if (!stated.empty())
    fail_input("problem", fmt::format("{} {} with {}{}{} in '{}': remove {} from \"problem\" — with a data file the "
                                      "sizes come from the file",
                                      fmt::join(stated, ", "), stated.size() == 1 ? "disagrees" : "disagree",
                                      stated.size() == 1 ? "" : "(", fmt::join(in_file, ", "),
                                      stated.size() == 1 ? "" : ")", echo_path(e.data.file),
                                      stated.size() == 1 ? "it" : "them"));
  Problem& p = e.problem;
  p.batch = t.q.batch, p.q_heads = t.q.heads, p.kv_heads = t.k.heads;
  p.q_len = t.q.len, p.kv_len = t.k.len, p.head_dim = t.q.dim;
  e.problem_from_file = true;
}

}  // namespace

int64_t variants_named(const Experiment& e, const std::string& name) {
  return std::count_if(e.variants.begin(), e.variants.end(),
                       [&](const VariantRequest& v) { return v.shown_label() == name; });
}

void check_experiment(Experiment& e) {
  validate(e.problem);
  const ProbeRequest& r = e.probe;
  if (r.batch < 0 || r.batch >= e.problem.batch) fail_input("probe.batch", "must index a batch entry of the problem");
  if (r.head < 0 || r.head >= e.problem.q_heads) fail_input("probe.head", "must index a query head of the problem");
  for (size_t i = 0; i < e.variants.size(); ++i) {
    const VariantSpec& spec = *find_variant(e.variants[i].id);
    const std::string at = fmt::format("variants[{}]", i);
    if (!spec.supports(e.problem.phase))
      fail_input(at + ".id", fmt::format("'{}' does not support the {} phase", spec.id, to_string(e.problem.phase)));
    if (spec.validate) spec.validate(e.problem, e.variants[i].params, at + ".params");
  }
  if (!e.speedup_over.empty()) {  // names exactly one variant, as tables name them (label, else id)
    const int64_t named = variants_named(e, e.speedup_over);
    // With baselines it may name one of their implementations instead: the runner checks it once the files are read,
    // before anything runs.
    if (named == 0 && e.baselines.empty())
      fail_input("report.speedup_over",
                 fmt::format("'{}' is not a listed variant (its label, or its id where it has none)", echo(e.speedup_over)));
    if (named > 1)
      fail_input("report.speedup_over", fmt::format("'{}' names {} variants: give the baseline a label of its own",
                                                    echo(e.speedup_over), named));
  }
}

// "sweep": [{"vary": "<path>", "values": [v1, v2, …]}, …]: at most two axes, each with ≥ 1 value. The
// paths and values are checked when the grid is expanded (core/sweep.h), against the whole experiment.
std::vector<SweepAxis> parse_sweep(const json& j, const std::string& where) {
  std::vector<SweepAxis> axes;
  if (j.is_null()) return axes;
  if (!j.is_array() || j.size() > 2) fail_input(where, "expected an array of at most two {\"vary\", \"values\"} axes");
  for (size_t i = 0; i < j.size(); ++i) {
    const std::string at = fmt::format("{}[{}]", where, i);
    if (!j[i].is_object()) fail_input(at, "expected an object {\"vary\": path, \"values\": [...]}");
    reject_unknown(j[i], {"vary", "values"}, at);
    if (!j[i].contains("vary") || !j[i]["vary"].is_string()) fail_input(at + ".vary", "expected a string path");
    if (!j[i].contains("values") || !j[i]["values"].is_array() || j[i]["values"].empty())
      fail_input(at + ".values", "expected a non-empty array");
    axes.push_back({j[i]["vary"].get<std::string>(), j[i]["values"].get<std::vector<json>>()});
  }
  return axes;
}

Experiment parse_experiment(const json& j, const std::string& base_dir) {
  if (!j.is_object()) fail_input("config", "expected a JSON object");
  reject_unknown(j,
                 {"title", "description", "problem", "data", "variants", "backends", "gpu_model", "model", "probe", "sweep",
                  "lesson", "report"},
                 "config");
  Experiment e;
  auto text = [&](const char* key) -> std::string {
    if (!j.contains(key)) return "";
    if (!j[key].is_string()) fail_input(key, "expected a string");
    return j[key].get<std::string>();
  };
  e.title = text("title");
  e.description = text("description");
  if (j.contains("lesson")) e.lesson = parse_lesson(j["lesson"], "lesson");  // checked against the rest below
  const json none;
  e.problem = parse_problem(j.value("problem", none), "problem");
  e.data = parse_data(j.value("data", none), "data", base_dir);
  e.variants = parse_variants(j.value("variants", none), "variants");
  e.backends = parse_backends(j.value("backends", none), "backends");
  if (j.contains("gpu_model")) e.gpu_model = name_text(j["gpu_model"], "gpu_model");
  e.probe = parse_probe(j.value("probe", none), "probe");
  if (j.contains("model")) {
    require_object(j["model"], "model");
    reject_unknown(j["model"], {"l2_reuse"}, "model");
    if (j["model"].contains("l2_reuse")) {
      if (!j["model"]["l2_reuse"].is_boolean()) fail_input("model.l2_reuse", "expected true or false");
      e.model_l2_reuse = j["model"]["l2_reuse"].get<bool>();
    }
  }
  if (!e.data.file.empty()) adopt_file_shapes(e, j.value("problem", none));
  e.sweep = parse_sweep(j.value("sweep", none), "sweep");
  if (j.contains("report")) {  // what the report draws beyond its standard views
    require_object(j["report"], "report");
    reject_unknown(j["report"], {"speedup_over", "baselines"}, "report");
    if (j["report"].contains("speedup_over"))
      e.speedup_over = name_text(j["report"]["speedup_over"], "report.speedup_over");
    if (j["report"].contains("baselines")) {
      const json& b = j["report"]["baselines"];
      if (!b.is_array() || b.size() > 16) fail_input("report.baselines", "expected an array of at most 16 file paths");
      for (size_t i = 0; i < b.size(); ++i) {
        const std::string at = fmt::format("report.baselines[{}]", i);
        if (!b[i].is_string() || b[i].get<std::string>().empty()) fail_input(at, "expected a file path");
        fs::path path = b[i].get<std::string>();
        if (path.is_relative()) path = fs::path(base_dir) / path;
        e.baselines.push_back(path.lexically_normal().string());
      }
    }
  }
  check_experiment(e);
  check_lesson(e);  // every step's change applies: a typo in a step fails here, not when it is reached
  return e;
}

Experiment load_experiment(const std::string& path) {
  // A regular file only (a FIFO would block, a folder is no config), depth-limited, NUL-free JSON.
  const json j = read_json_file(path);
  const std::string folder = fs::path(path).parent_path().string();
  try {
    return parse_experiment(j, folder.empty() ? "." : folder);
  } catch (const InputError& err) {
    throw InputError(echo_path(path) + ": " + err.what());
  }
}

json to_json(const Problem& p) {
  return {{"batch", p.batch},       {"q_heads", p.q_heads}, {"kv_heads", p.kv_heads},
          {"q_len", p.q_len},       {"kv_len", p.kv_len},   {"head_dim", p.head_dim},
          {"causal", p.causal},     {"phase", to_string(p.phase)},
          {"softmax_scale", p.scale()}, {"gpus", p.gpus}};
}

json to_json(const Experiment& e) {
  json j;
  if (!e.title.empty()) j["title"] = e.title;
  if (!e.description.empty()) j["description"] = e.description;
  if (e.lesson) j["lesson"] = to_json(*e.lesson);
  j["problem"] = to_json(e.problem);
  if (!e.data.file.empty()) {
    j["data"] = {{"file", e.data.file}};
  } else {
    j["data"] = e.data.generator_params.to_json();
    j["data"]["generator"] = e.data.generator;
    j["data"]["seed"] = e.data.seed;
  }
  j["variants"] = json::array();
  for (const auto& v : e.variants) {
    j["variants"].push_back({{"id", v.id}, {"params", v.params.to_json()}});
    if (!v.label.empty()) j["variants"].back()["label"] = v.label;
  }
  j["backends"] = e.backends;
  j["gpu_model"] = e.gpu_model;
  j["model"] = {{"l2_reuse", e.model_l2_reuse}};
  j["probe"] = {{"batch", e.probe.batch}, {"head", e.probe.head}};
  j["probe"]["row_block"] = e.probe.row_block == ProbeRequest::kLastRowBlock ? json("last") : json(e.probe.row_block);
  if (!e.sweep.empty()) {
    j["sweep"] = json::array();
    for (const auto& a : e.sweep) j["sweep"].push_back({{"vary", a.path}, {"values", a.values}});
  }
  if (!e.speedup_over.empty()) j["report"]["speedup_over"] = e.speedup_over;
  if (!e.baselines.empty()) j["report"]["baselines"] = e.baselines;
  return j;
}

void set_value(Experiment& e, const std::string& path, const json& value, const std::string& where) {
  const auto dot = path.find('.');
  const std::string head = path.substr(0, dot), rest = dot == std::string::npos ? "" : path.substr(dot + 1);
  if (head == "problem") {
    if (e.problem_from_file) fail_input(where, "the problem's sizes come from the data file");
    json pj = to_json(e.problem);
    pj.erase("softmax_scale");
    if (e.problem.softmax_scale > 0) pj["softmax_scale"] = e.problem.softmax_scale;
    if (rest == "len") {  // a sequence-length sweep: both lengths, decode keeps its one query
      pj["kv_len"] = value;
      if (e.problem.phase == Phase::prefill) pj["q_len"] = value;
    } else {
      if (!pj.contains(rest)) fail_input(where, fmt::format("unknown problem field '{}'", echo(rest)));
      pj[rest] = value;
    }
    e.problem = parse_problem(pj, "problem");
    return;
  }
  if (path == "model.l2_reuse") {
    if (!value.is_boolean()) fail_input(where, "expected true or false");
    e.model_l2_reuse = value.get<bool>();
    return;
  }
  if (head == "data") {
    if (rest == "seed") {
      e.data.seed = get_seed(value, where);
      return;
    }
    if (rest == "generator") {
      if (!e.data.file.empty()) fail_input(where, "the data comes from a file");
      if (!value.is_string() || !data::find_generator(value.get<std::string>()))
        fail_input(where, fmt::format("expected the name of a generator ({})", generator_names()));
      e.data.generator = value.get<std::string>();
      e.data.generator_params = ParamValues::defaults(data::find_generator(e.data.generator)->params);
      return;
    }
    const GeneratorSpec* gen = data::find_generator(e.data.generator);
    if (!gen) fail_input(where, "the data comes from a file; it has no generator parameters");
    e.data.generator_params.set(gen->params, rest, value, where);
    return;
  }
  bool matched = false;
  for (auto& v : e.variants) {
    const VariantSpec& spec = *find_variant(v.id);
    const bool scoped = !rest.empty() && head == v.id;
    const std::string name = scoped ? rest : path;
    if (!scoped && !rest.empty()) continue;
    if (std::none_of(spec.params.begin(), spec.params.end(), [&](const ParamSpec& s) { return s.name == name; }))
      continue;
    v.params.set(spec.params, name, value, where);
    matched = true;
  }
  if (!matched) fail_input(where, fmt::format("no listed variant declares a parameter '{}'", echo(path)));
}

}  // namespace attnlab
