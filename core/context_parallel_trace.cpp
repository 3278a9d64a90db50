#include "core/context_parallel_trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace attnlab::cp {

namespace {

void check_count(int gpus, int steps, const std::vector<StepMarks>& marks) {
  if (gpus < 1 || marks.size() != size_t(gpus) * size_t(steps))
    throw std::invalid_argument(
        fmt::format("ring trace: {} marks for {} GPUs and {} steps (want one per GPU and step)", marks.size(), gpus, steps));
}

// end − begin of an interval both of whose marks exist; NaN when neither does.
double length(double begin, double end, const char* what, int gpu, int step) {
  if (std::isnan(begin) && std::isnan(end)) return NAN;
  if (std::isnan(begin) || std::isnan(end) || end < begin)
    throw std::invalid_argument(
        fmt::format("ring trace: GPU {} step {}: the {} interval [{}, {}] is not an interval", gpu, step, what, begin, end));
  return end - begin;
}

const StepMarks& at(const std::vector<StepMarks>& marks, int gpus, int step, int gpu) {
  return marks[size_t(step) * size_t(gpus) + size_t(gpu)];
}

double required(double mark, const char* what, int gpu, int step) {
  if (std::isnan(mark)) throw std::invalid_argument(fmt::format("ring trace: GPU {} step {} has no {}", gpu, step, what));
  return mark;
}

// The ranks' clocks agree to a cross-GPU wait's microseconds, so a span measured across two of them can come out a
// hair shorter than the interval inside it: such a wait is no wait.
double wait(double span, double busy) { return std::max(0.0, span - busy); }

}  // namespace

std::vector<TraceSlot> prefill_trace(int gpus, const std::vector<StepMarks>& marks) {
  check_count(gpus, gpus, marks);
  double ring_end = -INFINITY;  // the latest end of any GPU's last step: the ring is done
  for (int r = 0; r < gpus; ++r)
    ring_end = std::max(ring_end, required(at(marks, gpus, gpus - 1, r).compute_end, "compute end", r, gpus - 1));
  std::vector<TraceSlot> out;
  for (int s = 0; s < gpus; ++s)
    for (int r = 0; r < gpus; ++r) {
      const StepMarks& m = at(marks, gpus, s, r);
      TraceSlot slot{.gpu = r, .step = s};
      slot.compute_ms = length(required(m.compute_begin, "compute begin", r, s),
                               required(m.compute_end, "compute end", r, s), "compute", r, s);
      slot.exchange_ms = length(m.exchange_begin, m.exchange_end, "exchange", r, s);
      const double next = s + 1 < gpus
                              ? required(at(marks, gpus, s + 1, r).compute_begin, "compute begin", r, s + 1)
                              : ring_end;
      slot.idle_ms = wait(next - m.compute_begin, slot.compute_ms);
      out.push_back(slot);
    }
  return out;
}

std::vector<TraceSlot> decode_trace(int gpus, const std::vector<StepMarks>& marks) {
  check_count(gpus, 2, marks);
  double attended = -INFINITY;  // the slowest GPU's attention ends: the gather can be complete no earlier
  std::vector<TraceSlot> out;
  for (int r = 0; r < gpus; ++r) {
    const StepMarks& m = at(marks, gpus, 0, r);
    TraceSlot slot{.gpu = r, .step = 0};
    slot.compute_ms = length(required(m.compute_begin, "compute begin", r, 0), required(m.compute_end, "compute end", r, 0),
                             "compute", r, 0);
    attended = std::max(attended, m.compute_end);
    out.push_back(slot);
  }
  for (TraceSlot& slot : out) slot.idle_ms = wait(attended - at(marks, gpus, 0, slot.gpu).compute_begin, slot.compute_ms);
  const StepMarks& merge = at(marks, gpus, 1, 0);
  const double merged = required(merge.compute_end, "merge end", 0, 1);
  const double span = wait(merged, attended);
  for (int r = 0; r < gpus; ++r) {
    const StepMarks& m = at(marks, gpus, 1, r);
    TraceSlot slot{.gpu = r, .step = 1};
    slot.exchange_ms = length(m.exchange_begin, m.exchange_end, "exchange", r, 1);
    if (r == 0) {
      slot.compute_ms = length(required(m.compute_begin, "merge begin", 0, 1), merged, "merge", 0, 1);
      slot.idle_ms = wait(span, slot.compute_ms);
    } else {
      slot.idle_ms = wait(span, std::isnan(slot.exchange_ms) ? 0.0 : slot.exchange_ms);
    }
    out.push_back(slot);
  }
  return out;
}

}  // namespace attnlab::cp
