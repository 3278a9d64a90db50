// attnlab core: a lesson — a guided tour through one experiment (configs/lessons/). A lesson is a list of
// steps; each says what to look at and why (text), in which panel, optionally following a paper figure,
// and may change the experiment first ("set": variant parameters, problem fields, the data, as set_value
// takes them). Step k's run is the lesson's config with step k's changes — steps do not inherit earlier
// steps' changes, so any step can be opened on its own and Back undoes what Next did.
//
//   "lesson": {"figure": "TurboAttention §4, Fig. 5",
//              "steps": [{"text": "…", "panel": "SAS"},
//                        {"text": "…", "panel": "Results", "set": {"turbo.n_r": -3}, "figure": "Eq. 14"}]}
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace attnlab {

struct Experiment;

// The panels a step may point at, in the GUI grid's order: the GUI's windows and the report's sections
// share these names (every chart view's `panel` is one of them).
inline const std::vector<std::string> kPanels = {"Results", "Data",         "Block scales", "Channel outliers",
                                                 "Head priority", "SAS", "HBM traffic",  "Tile stepper"};

struct LessonStep {
  std::string text;    // what to look at and why, in plain prose
  std::string panel;   // one of kPanels: the panel the GUI enlarges and the report shows for this step
  std::string figure;  // optional: the paper figure or section this step follows
  nlohmann::json set = nlohmann::json::object();  // {path: value} applied with set_value before the run
};

struct Lesson {
  std::string figure;  // optional: the papers and figures the whole tour follows
  std::vector<LessonStep> steps;  // at least one
};

// The shape of a "lesson" object; errors name `where` (e.g. "lesson.steps[2].panel") and the rule.
// Whether each step's changes apply to the experiment is check_lesson's.
Lesson parse_lesson(const nlohmann::json& j, const std::string& where);
nlohmann::json to_json(const Lesson& l);

// The experiment of step `k` (0-based): `base` with the step's "set" applied and re-checked. Errors name
// "lesson.steps[k].set.<path>" (an unknown parameter, a value out of range) or, for a rule that spans
// fields, "lesson.steps[k].set: <the rule>".
Experiment step_experiment(const Experiment& base, size_t k);
// Every step of `e`'s lesson applies to `e` (step_experiment for each); nothing when `e` has no lesson.
void check_lesson(const Experiment& e);
// "turbo.n_r = -3, problem.kv_len = 256": a step's change as a one-line text ("" when it has none).
std::string describe_change(const LessonStep& s);

}  // namespace attnlab
