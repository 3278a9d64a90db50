// Point-label placement (app/views/label_layout.h): labels beside their points, inside the plot, never on
// top of each other — the roofline's model and measured points of one variant often sit a few pixels apart.
#include "app/views/label_layout.h"
#include "tests/catch.h"

#include <cstddef>
#include <vector>

namespace attnlab::views {
namespace ATTNLAB_FILE_LOCAL {

struct Box {
  double x0, y0, x1, y1;
};
Box box_of(const LabelPlace& p, const LabelRequest& r) { return {p.x, p.y - r.h / 2, p.x + r.w, p.y + r.h / 2}; }
bool overlap(const Box& a, const Box& b) { return a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1; }

void check_layout(const std::vector<LabelRequest>& req, const std::vector<LabelPlace>& out, const PlotBox& plot) {
  REQUIRE(out.size() == req.size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (!out[i].shown) continue;
    const Box a = box_of(out[i], req[i]);
    CHECK(a.x0 >= plot.x0);
    CHECK(a.x1 <= plot.x1);
    CHECK(a.y0 >= plot.y0);
    CHECK(a.y1 <= plot.y1);
    for (std::size_t j = 0; j < i; ++j)
      if (out[j].shown) CHECK_FALSE(overlap(a, box_of(out[j], req[j])));
  }
}

TEST_CASE("place_labels: beside the point, facing the plot's middle", "[views]") {
  const PlotBox plot{0, 0, 400, 200};
  const std::vector<LabelRequest> req = {{50, 100, 60, 12}, {350, 100, 60, 12}};
  const auto out = place_labels(req, plot, 6);
  REQUIRE(out[0].shown);
  REQUIRE(out[1].shown);
  CHECK(out[0].x == 56);        // left half: to the right of its point
  CHECK(out[1].x == 350 - 66);  // right half: to the left
  CHECK(out[0].y == 100);       // on the point's line
  check_layout(req, out, plot);
}

TEST_CASE("place_labels: two labels on nearly one point both shown, apart", "[views]") {
  const PlotBox plot{0, 0, 400, 200};
  const std::vector<LabelRequest> req = {{200, 100, 70, 12}, {200, 104, 70, 12}, {202, 98, 70, 12}};
  const auto out = place_labels(req, plot, 6);
  for (const auto& p : out) CHECK(p.shown);
  check_layout(req, out, plot);
}

TEST_CASE("place_labels: a crowd keeps what fits and hides the rest; edges stay inside", "[views]") {
  const PlotBox plot{0, 0, 160, 60};
  std::vector<LabelRequest> req;
  for (int i = 0; i < 30; ++i) req.push_back({80, 30, 50, 12});
  req.push_back({2, 2, 50, 12});    // at the top-left corner
  req.push_back({158, 58, 50, 12});  // at the bottom-right corner
  const auto out = place_labels(req, plot, 6);
  int shown = 0;
  for (const auto& p : out) shown += p.shown;
  CHECK(shown >= 4);
  CHECK(shown < 32);
  check_layout(req, out, plot);
}

// The values over grouped bars: the model breakdown's neighbouring unit bars are a few pixels wide and often of
// nearly equal height, where centring every value over its bar wrote them over each other.
TEST_CASE("place_bar_values: centred over its bar, raised out of a neighbour's way, never overlapping", "[views]") {
  const PlotBox plot{0, 0, 400, 300};
  // Three 8-px bars side by side, their tops 2 px apart; each value is 30 px wide and 12 high.
  const std::vector<LabelRequest> crowded = {{100, 200, 30, 12}, {108, 202, 30, 12}, {116, 198, 30, 12}};
  const auto out = place_bar_values(crowded, plot, 3);
  check_layout(crowded, out, plot);
  REQUIRE(out[0].shown);
  CHECK(out[0].x == 85);           // centred over its bar
  CHECK(out[0].y == 200 - 3 - 6);  // gap, then half a text height above the bar's top
  REQUIRE(out[1].shown);
  CHECK(out[1].y < out[0].y - 11);  // raised one text height out of the first value's way
  CHECK(out[2].shown);
  // A fourth one finds every height taken (at most two raises): not shown, rather than drawn over the others.
  std::vector<LabelRequest> four = crowded;
  four.push_back({104, 200, 30, 12});
  const auto more = place_bar_values(four, plot, 3);
  check_layout(four, more, plot);
  CHECK_FALSE(more[3].shown);
  // Bars far apart keep their values at the first height; a value above the plot's top is not shown.
  const std::vector<LabelRequest> apart = {{50, 200, 30, 12}, {150, 200, 30, 12}, {250, 5, 30, 12}};
  const auto spread = place_bar_values(apart, plot, 3);
  check_layout(apart, spread, plot);
  CHECK(spread[0].y == spread[1].y);
  CHECK_FALSE(spread[2].shown);
}

// Bars stay clear of the legend: the tallest bar ends `reserved` pixels below the plot's top, whatever its value.
TEST_CASE("bar_axis_top: the tallest bar ends below the reserved band; the band is capped", "[views]") {
  const double plot = 200;
  for (const double top : {0.025, 1.0, 3e4}) {
    const double axis = bar_axis_top(top, plot, 50);
    CHECK(plot * (1 - top / axis) == Approx(50));  // the tallest bar's top, in pixels from the plot's top
  }
  CHECK(bar_axis_top(2, plot, 0) == 2);
  CHECK(plot * (1 - 1 / bar_axis_top(1, plot, 500)) == Approx(120));  // at most 60% of the plot
  CHECK(bar_axis_top(0, plot, 50) > 0);                              // nothing drawn: still an axis
}

}  // namespace
}  // namespace attnlab::views
