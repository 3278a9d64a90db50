#include "core/lesson.h"

#include "core/config.h"
#include "core/error.h"

#include <fmt/format.h>

#include <algorithm>

namespace attnlab {

using nlohmann::json;

namespace {

std::string text_field(const json& j, const char* key, bool required, const std::string& where) {
  if (!j.contains(key)) {
    if (required) fail_input(where + "." + key, "missing");
    return "";
  }
  if (!j[key].is_string() || j[key].get<std::string>().empty()) fail_input(where + "." + key, "expected a non-empty string");
  return j[key].get<std::string>();
}

void only_known(const json& j, const std::vector<std::string>& known, const std::string& where) {
  for (const auto& [key, _] : j.items())
    if (std::find(known.begin(), known.end(), key) == known.end())
      fail_input(where + "." + echo(key), fmt::format("unknown field (known: {})", fmt::join(known, ", ")));
}

LessonStep parse_step(const json& j, const std::string& where) {
  if (!j.is_object()) fail_input(where, "expected an object {\"text\", \"panel\", optional \"set\" and \"figure\"}");
  only_known(j, {"text", "panel", "set", "figure"}, where);
  LessonStep s;
  s.text = text_field(j, "text", true, where);
  s.panel = text_field(j, "panel", true, where);
  if (std::find(kPanels.begin(), kPanels.end(), s.panel) == kPanels.end())
    fail_input(where + ".panel", fmt::format("unknown panel '{}' (known: {})", echo(s.panel), fmt::join(kPanels, ", ")));
  s.figure = text_field(j, "figure", false, where);
  if (j.contains("set")) {
    if (!j["set"].is_object()) fail_input(where + ".set", "expected an object {\"<variant>.<param>\" or \"problem.<field>\": value}");
    s.set = j["set"];
  }
  return s;
}

}  // namespace

Lesson parse_lesson(const json& j, const std::string& where) {
  if (!j.is_object()) fail_input(where, "expected an object {\"steps\": [...], optional \"figure\"}");
  only_known(j, {"figure", "steps"}, where);
  Lesson l;
  l.figure = text_field(j, "figure", false, where);
  if (!j.contains("steps") || !j["steps"].is_array() || j["steps"].empty())
    fail_input(where + ".steps", "expected a non-empty list of steps {\"text\", \"panel\"}");
  for (size_t k = 0; k < j["steps"].size(); ++k) l.steps.push_back(parse_step(j["steps"][k], fmt::format("{}.steps[{}]", where, k)));
  return l;
}

json to_json(const Lesson& l) {
  json steps = json::array();
  for (const LessonStep& s : l.steps) {
    json j = {{"text", s.text}, {"panel", s.panel}};
    if (!s.figure.empty()) j["figure"] = s.figure;
    if (!s.set.empty()) j["set"] = s.set;
    steps.push_back(std::move(j));
  }
  json out = {{"steps", steps}};
  if (!l.figure.empty()) out["figure"] = l.figure;
  return out;
}

Experiment step_experiment(const Experiment& base, size_t k) {
  if (!base.lesson || k >= base.lesson->steps.size())
    fail_input("lesson", fmt::format("has no step {}", k + 1));
  const std::string where = fmt::format("lesson.steps[{}].set", k);
  Experiment e = base;
  // A new generator resets its parameters (set_value), so it goes first; the rest in the object's order.
  std::vector<std::pair<std::string, json>> changes;
  for (const auto& [path, value] : base.lesson->steps[k].set.items()) changes.emplace_back(path, value);
  std::stable_partition(changes.begin(), changes.end(), [](const auto& c) { return c.first == "data.generator"; });
  for (const auto& [path, value] : changes) set_value(e, path, value, where + "." + echo(path));
  try {
    check_experiment(e);
  } catch (const InputError& err) {  // a rule across fields ("two_bit_heads must not exceed the KV heads")
    throw InputError(where + ": " + err.what());
  }
  return e;
}

void check_lesson(const Experiment& e) {
  if (!e.lesson) return;
  for (size_t k = 0; k < e.lesson->steps.size(); ++k) step_experiment(e, k);
}

std::string describe_change(const LessonStep& s) {
  std::vector<std::string> parts;
  for (const auto& [path, value] : s.set.items()) parts.push_back(path + " = " + value.dump());
  return fmt::format("{}", fmt::join(parts, ", "));
}

}  // namespace attnlab
