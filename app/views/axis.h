// attnlab views: what both chart renderers (report SVG, GUI draw list) share — the colours, and the
// mapping of an axis's data range to pixels with "nice" ticks — so a chart looks the same in both.
#pragma once

#include <array>
#include <string>
#include <vector>

namespace attnlab::views {

// Series and stack colours as 0xRRGGBB: Okabe–Ito (distinguishable with colour-vision deficiencies),
// then four of Tol's muted scheme for charts with more stacks than that.
inline constexpr std::array<unsigned, 12> kPalette = {0x0072B2, 0xD55E00, 0x009E73, 0xCC79A7, 0xE69F00, 0x56B4E9,
                                                      0xF0E442, 0x000000, 0x882255, 0x44AA99, 0x999933, 0xAA4499};

// Heatmap colour map (viridis, interpolated between five anchors): t in [0, 1] → 0xRRGGBB; a non-finite t
// (an empty bin) is light grey.
unsigned colour_map(double t);

// A linear or log axis: data [lo, hi] → pixels [p0, p1], with ticks at 1, 2, 5 × 10^k (decades when log).
struct AxisScale {
  double lo = 0, hi = 1, p0 = 0, p1 = 1;
  bool log = false;
  double at(double v) const;
  std::vector<double> ticks(bool integer = false) const;
};
// The scale for data in [lo, hi]: padded by 4%, widened to include 0 when the data nearly reach it.
AxisScale axis_scale(double lo, double hi, double p0, double p1, bool log);

// A tick label: 4 significant digits, exponent form for very large or small magnitudes; "—" (kNoNumber)
// for a value that is not finite.
std::string tick_label(double x);

}  // namespace attnlab::views
