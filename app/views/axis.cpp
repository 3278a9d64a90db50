#include "app/views/axis.h"

#include "app/views/table.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace attnlab::views {

namespace {

constexpr std::array<std::array<double, 3>, 5> kViridis = {
    {{68, 1, 84}, {59, 82, 139}, {33, 145, 140}, {94, 201, 98}, {253, 231, 37}}};

}  // namespace

unsigned colour_map(double t) {
  if (!std::isfinite(t)) return 0xdddddd;
  t = std::clamp(t, 0.0, 1.0) * double(kViridis.size() - 1);
  const size_t i = std::min(size_t(t), kViridis.size() - 2);
  const double f = t - double(i);
  auto mix = [&](size_t c) { return unsigned(std::lround(kViridis[i][c] * (1 - f) + kViridis[i + 1][c] * f)); };
  return (mix(0) << 16) | (mix(1) << 8) | mix(2);
}

double AxisScale::at(double v) const {
  const double a = log ? std::log10(lo) : lo, b = log ? std::log10(hi) : hi, x = log ? std::log10(v) : v;
  return b == a ? (p0 + p1) / 2 : p0 + (x - a) / (b - a) * (p1 - p0);
}

std::vector<double> AxisScale::ticks(bool integer) const {
  std::vector<double> t;
  if (log) {
    // Decades; on a range of less than about two decades (a roofline fitted to its points) 1, 2, 5 × 10^k,
    // and on one too narrow even for those the linear ticks.
    for (const std::vector<double>& mantissas : {std::vector<double>{1}, std::vector<double>{1, 2, 5}}) {
      t.clear();
      for (double d = std::floor(std::log10(lo)); d <= std::ceil(std::log10(hi)); ++d)
        for (double m : mantissas)
          if (const double v = m * std::pow(10.0, d); v >= lo * 0.999 && v <= hi * 1.001) t.push_back(v);
      if (t.size() >= 3) return t;
    }
    if (t.size() >= 2) return t;
    return AxisScale{lo, hi, p0, p1, false}.ticks(integer);
  }
  const double raw = (hi - lo) / 5, mag = std::pow(10.0, std::floor(std::log10(raw > 0 ? raw : 1)));
  double step = raw / mag < 1.5 ? mag : raw / mag < 3.5 ? 2 * mag : raw / mag < 7.5 ? 5 * mag : 10 * mag;
  if (integer) step = std::max(1.0, std::round(step));
  for (double v = std::ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) t.push_back(std::abs(v) < step * 1e-9 ? 0 : v);
  return t;
}

AxisScale axis_scale(double lo, double hi, double p0, double p1, bool log) {
  if (!(lo < hi)) lo -= 0.5, hi += 0.5;
  if (log) lo = std::max(lo, hi * 1e-12);
  else if (lo > 0 && lo < hi * 0.3) lo = 0;  // include zero when the data nearly reach it
  if (!log) {
    const double pad = (hi - lo) * 0.04;
    hi += pad;
    if (lo != 0) lo -= pad;
  }
  return {lo, hi, p0, p1, log};
}

std::string tick_label(double x) {
  if (!std::isfinite(x)) return kNoNumber;  // a tooltip on a cell with no value (table.h)
  if (x == 0) return "0";
  const double a = std::abs(x);
  if (a >= 1e5 || a < 1e-3) return fmt::format("{:.2g}", x);
  return fmt::format("{:.4g}", x);
}

}  // namespace attnlab::views
