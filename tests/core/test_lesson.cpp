// Lessons (core/lesson.h): every shipped lesson is a tour of 4–8 steps whose panels exist and whose changes
// name real parameters and change the run; a malformed step is refused on load with one line naming the
// file, the step and the field.
#include "core/config.h"
#include "core/error.h"
#include "tests/catch.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

namespace attnlab {
namespace ATTNLAB_FILE_LOCAL {

using nlohmann::json;
namespace fs = std::filesystem;

const char* kLessons[] = {"online-softmax", "sas", "head-priority", "progressive-quantization", "fireq-smoothing",
                           "fireq-kernel"};

TEST_CASE("lessons: every shipped lesson is a tour of 4 to 8 steps over real panels and real parameters", "[lesson]") {
  size_t shipped = 0;
  for (const auto& f : fs::directory_iterator("configs/lessons")) shipped += f.path().extension() == ".json";
  CHECK(shipped == std::size(kLessons));  // a new lesson joins this list
  for (const char* name : kLessons) {
    const std::string path = std::string("configs/lessons/") + name + ".json";
    INFO(path);
    const Experiment e = load_experiment(path);
    REQUIRE(e.lesson);
    const auto& steps = e.lesson->steps;
    CHECK(steps.size() >= 4);
    CHECK(steps.size() <= 8);
    size_t changed = 0;
    for (size_t k = 0; k < steps.size(); ++k) {
      INFO("step " << k + 1);
      CHECK(std::find(kPanels.begin(), kPanels.end(), steps[k].panel) != kPanels.end());
      CHECK(steps[k].text.size() > 80);  // prose that says what to look at and why, not a caption
      const Experiment s = step_experiment(e, k);
      // A change is a real one: the step's run differs from the lesson's, in every path it names.
      const json before = to_json(e), after = to_json(s);
      CHECK((before == after) == steps[k].set.empty());
      changed += !steps[k].set.empty();
    }
    CHECK(changed >= 1);  // a tour changes something and re-runs
    // The lesson's JSON form round-trips (results.json carries the config).
    CHECK(to_json(parse_lesson(to_json(*e.lesson), "lesson")) == to_json(*e.lesson));
  }
}

// The SAS lesson with one step replaced: the message for the whole file, as the CLI prints it.
std::string error_with_step(const json& step) {
  json j = json::parse(std::ifstream("configs/lessons/sas.json"));
  j["lesson"]["steps"][2] = step;
  const fs::path dir = fs::path(ATTNLAB_TEST_TMP) / "lesson";
  fs::create_directories(dir);
  std::ofstream(dir / "bad.json") << j.dump();
  try {
    load_experiment((dir / "bad.json").string());
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST_CASE("lessons: a malformed step is refused naming the file, the step and the field", "[lesson]") {
  const json text = "Look at the SAS panel: the curve and its error, above and below the threshold n_r.";
  struct Case {
    json step;
    std::string message;  // after "<file>: "
  };
  const Case cases[] = {
      {{{"text", text}}, "lesson.steps[2].panel: missing"},
      {{{"panel", "SAS"}}, "lesson.steps[2].text: missing"},
      {{{"text", text}, {"panel", "Roofs"}}, "lesson.steps[2].panel: unknown panel 'Roofs' (known: Results, Data, Block scales"},
      {{{"text", text}, {"panel", "SAS"}, {"set", {{"turbo.n_rr", -3}}}},
       "lesson.steps[2].set.turbo.n_rr: no listed variant declares a parameter 'turbo.n_rr'"},
      {{{"text", text}, {"panel", "SAS"}, {"set", {{"turbo.n_r", 5}}}}, "lesson.steps[2].set.turbo.n_r"},
      {{{"text", text}, {"panel", "SAS"}, {"set", {{"problem.heads", 2}}}}, "lesson.steps[2].set.problem.heads: unknown problem field 'heads'"},
      {{{"text", text}, {"panel", "SAS"}, {"set", {{"problem.kv_heads", 3}}}}, "lesson.steps[2].set: problem.kv_heads"},
      {{{"text", text}, {"panel", "SAS"}, {"set", json::array()}}, "lesson.steps[2].set: expected an object"},
      {{{"text", text}, {"panel", "SAS"}, {"look", "here"}}, "lesson.steps[2].look: unknown field"},
      {"SAS", "lesson.steps[2]: expected an object"},
  };
  for (const Case& c : cases) {
    const std::string message = error_with_step(c.step);
    INFO(c.step.dump() << " → " << message);
    const std::string file = (fs::path(ATTNLAB_TEST_TMP) / "lesson" / "bad.json").string() + ": ";
    CHECK(message.rfind(file, 0) == 0);
    CHECK(message.find(c.message) == file.size());
    CHECK(message.find('\n') == std::string::npos);
  }
  // The refusal's message, or "" where nothing was refused (written out: Catch2 v2 and v3 spell the
  // string matchers differently, and both must build this file).
  auto refusal = [](const json& experiment) -> std::string {
    try {
      parse_experiment(experiment);
    } catch (const std::exception& e) {
      return e.what();
    }
    return "";
  };
  json j = json::parse(std::ifstream("configs/lessons/sas.json"));
  j["lesson"]["steps"] = json::array();
  CHECK(refusal(j).find("lesson.steps: expected a non-empty list") != std::string::npos);
  j["lesson"] = {{"text", "the old form"}, {"panel", "SAS"}};
  CHECK(refusal(j).find("lesson.panel: unknown field (known: figure, steps)") != std::string::npos);
}

TEST_CASE("lessons: a step's change applies to its run only, not to the steps after it", "[lesson]") {
  const Experiment e = load_experiment("configs/lessons/sas.json");
  CHECK(step_experiment(e, 3).variants[0].params.integer("n_r") == -3);
  CHECK(step_experiment(e, 5).variants[0].params.integer("n_r") == -10);
  CHECK(step_experiment(e, 2).variants[0].params.integer("n_r") == -6);  // no change: the config's value
  CHECK_THROWS_AS(step_experiment(e, 6), InputError);
}

}  // namespace
}  // namespace attnlab
