// attnlab report: a lesson's tour in the report — every step in order, its text, the paper figure it
// follows, the change its run made, and the view of its panel drawn from that run (core/lesson.h).
#pragma once

#include "core/lesson.h"
#include "core/results.h"

#include <string>
#include <vector>

namespace attnlab::report {

// `runs[k]` is step k's run (the lesson's config with the step's "set" applied); one per step.
std::string tour_html(const Lesson& lesson, const std::vector<const Results*>& runs);

}  // namespace attnlab::report
