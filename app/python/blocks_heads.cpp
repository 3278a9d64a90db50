// attnlab python: head-wise mixed precision (TurboAttention §3.2, Eq. 11–12; the ablation of §5.6;
// core/quant/head_priority.h) on NumPy arrays: which KV heads keep 4 bits and which drop to 2.
#include "app/python/blocks.h"
#include "app/python/blocks_args.h"
#include "core/quant/head_priority.h"

#include <optional>

#include <pybind11/stl.h>

namespace attnlab::python {

namespace {

using namespace blocks;
using quant::PriorityMetric;

// The names of turbo's `priority` parameter.
constexpr std::array<Name<PriorityMetric>, 4> kMetrics = {{{"gap_std", PriorityMetric::gap_std},
                                                           {"entropy", PriorityMetric::entropy},
                                                           {"min_max", PriorityMetric::min_max},
                                                           {"variation", PriorityMetric::variation}}};

py::dict head_priority(const py::object& x, const std::string& metric, std::optional<int> two_bit_heads, int bits_lo,
                       int bits_hi) {
  const PriorityMetric pm = choose(metric, "metric", kMetrics);
  const Matrices m = float_matrices(x, "x", "(..., heads, tokens, channels)", 3);
  const int64_t heads = m.lead.back(), d = m.cols;
  std::vector<quant::HeadRange> ranges(static_cast<size_t>(m.count));
  std::vector<double> priority(static_cast<size_t>(m.count));
  for_each_matrix(m, "x", [&](int64_t i) {
    ranges[i] = quant::head_range(m.matrix(i), m.rows, m.cols);
    priority[i] = quant::head_priority(m.matrix(i), m.rows, m.cols, pm);  // Eq. 11 or a §5.6 baseline
  });
  py::array_t<double> gap(m.lead), gap_std(m.lead), lo(m.lead), hi(m.lead);
  py::array_t<float> ch_min(m.with({d})), ch_max(m.with({d}));
  for (size_t i = 0; i < ranges.size(); ++i) {
    const quant::HeadRange& r = ranges[i];
    gap.mutable_data()[i] = r.gap;
    gap_std.mutable_data()[i] = r.gap_std;
    lo.mutable_data()[i] = r.min;
    hi.mutable_data()[i] = r.max;
    std::copy(r.channel_min.begin(), r.channel_min.end(), ch_min.mutable_data() + i * d);
    std::copy(r.channel_max.begin(), r.channel_max.end(), ch_max.mutable_data() + i * d);
  }
  py::dict out;
  out["priority"] = to_array<double>(m.lead, priority.data());
  out["metric"] = metric;
  out["gap"] = gap;
  out["gap_std"] = gap_std;
  out["min"] = lo;
  out["max"] = hi;
  out["channel_min"] = ch_min;
  out["channel_max"] = ch_max;
  if (two_bit_heads) {  // Eq. 12, over the heads of each sequence, as turbo assigns them
    std::vector<int> bits;
    for (int64_t s = 0; s < m.count / heads; ++s) {
      const std::vector<double> p(priority.begin() + s * heads, priority.begin() + (s + 1) * heads);
      const std::vector<int> b = quant::assign_bits(p, *two_bit_heads, bits_lo, bits_hi);
      bits.insert(bits.end(), b.begin(), b.end());
    }
    out["bits"] = to_array<int32_t>(m.lead, bits.data());
    out["two_bit_heads"] = *two_bit_heads;
  }
  return out;
}

}  // namespace

void bind_heads(py::module_& m) {
  m.def("head_priority", &head_priority, py::arg("x"), py::arg("metric") = "gap_std",
        py::arg("two_bit_heads") = py::none(), py::arg("bits_lo") = 2, py::arg("bits_hi") = 4,
        R"(Head priorities (TurboAttention §3.2, Eq. 11; §5.6) and the bits each head gets (Eq. 12), as the
turbo variant computes them from a sequence's keys (core/quant/head_priority.h).

Eq. 11: priority = gap × std, gap = max − min over the head, std = the population standard deviation of
the channel gaps max_t x[t, c] − min_t x[t, c] (FP64).
x: float32 or float16 (..., heads, tokens, channels), finite: one sequence's keys (or values) per head.
metric: "gap_std" (Eq. 11), or a §5.6 baseline: "min_max" (gap alone), "variation" (std alone),
    "entropy" (Shannon entropy in bits of the head's values over 256 equal bins on [min, max]).
two_bit_heads: n_h, or None for no assignment. Eq. 12: in each sequence the n_h heads of lowest priority
    get bits_lo, the others bits_hi; equal priorities drop the lower head index first.
bits_lo, bits_hi: 2, 4 or 8.
Returns a dict: "priority", "gap", "gap_std", "min", "max" float64 (..., heads); "channel_min",
"channel_max" float32 (..., heads, channels); "metric"; and with two_bit_heads, "bits" int32
(..., heads) and "two_bit_heads".)");
}

}  // namespace attnlab::python
