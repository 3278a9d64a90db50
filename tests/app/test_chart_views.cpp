// Chart views built from a small, hand-made Results: each view has the expected shape, labels and
// values, taken (or binned) from the probes and never computed beyond that.
#include "app/views/chart.h"
#include "app/views/stepper.h"
#include "core/config.h"
#include "sim/gpu_spec.h"
#include "tests/catch.h"
#include "tests/support/sample_results.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

namespace attnlab::views {
namespace ATTNLAB_FILE_LOCAL {

const View* find(const std::vector<View>& all, const std::string& id) {
  const auto it = std::find_if(all.begin(), all.end(), [&](const View& v) { return v.id == id; });
  return it == all.end() ? nullptr : &*it;
}

TEST_CASE("chart views: block-scale heatmap is (batch, head) × tokens with the probe's values", "[views]") {
  const std::vector<View> all = chart_views(test::small_results());
  const View* v = find(all, "scales.q.turbo.reference");
  REQUIRE(v != nullptr);
  CHECK(v->panel == "Block scales");
  const auto& h = std::get<Heatmap>(v->body);
  CHECK(h.rows == 2);
  CHECK(h.cols == 6);
  CHECK(h.x.label == "token");  // 6 columns = q_len
  CHECK(h.row_names == std::vector<std::string>{"b0 h0", "b0 h1"});
  CHECK(h.values[7] == 8);  // row 1, column 1
}

TEST_CASE("chart views: wide heatmaps are binned by the largest value in each bin", "[views]") {
  const std::vector<View> all = chart_views(test::small_results(), 4);  // 6 columns → bins of 2
  const auto& h = std::get<Heatmap>(find(all, "scales.q.turbo.reference")->body);
  CHECK(h.col_bin == 2);
  CHECK(h.cols == 3);
  CHECK(h.values == std::vector<double>{2, 4, 6, 8, 10, 12});
  CHECK_FALSE(h.bin_rule.empty());
}

TEST_CASE("chart views: channel ranges, |K| heatmap, priority bars, SAS curves, trace", "[views]") {
  const std::vector<View> all = chart_views(test::small_results());
  const auto& ch = std::get<LineChart>(find(all, "channels")->body);
  REQUIRE(ch.series.size() == 6);  // K, V, K before RoPE: max and min each
  CHECK(ch.series[4].name == "K before RoPE max");
  CHECK(ch.series[4].y == std::vector<double>{1, 1, 12, 1});
  CHECK(ch.series[0].name == "K max");
  CHECK(ch.series[0].y == std::vector<double>{1, 3, 8, 1});
  CHECK(ch.x.label == "channel");
  const auto& abs_k = std::get<Heatmap>(find(all, "channels.k.abs")->body);
  CHECK(abs_k.values == std::vector<double>{1, 3, 9, 1});  // max(|min|, |max|) per channel

  const auto& bars = std::get<BarChart>(find(all, "priority.turbo")->body);
  REQUIRE(bars.bars.size() == 1);
  CHECK(bars.bars[0].marked);  // kv_bits = bits_lo = 2
  CHECK(bars.y.label == "priority (entropy)");
  CHECK(std::get<Table>(find(all, "priority.metrics.turbo")->body).rows.size() == 1);

  const auto& sas = std::get<LineChart>(find(all, "sas.curve.turbo")->body);
  CHECK(sas.series[1].y == std::vector<double>{0, 0.36, 1});
  const auto& err = std::get<LineChart>(find(all, "sas.error.turbo")->body);
  CHECK(err.series[0].y[1] == Approx(0.36 - std::exp(-1.0)));

  const auto& zeroed = std::get<BarChart>(find(all, "sas.zeroed")->body);
  REQUIRE(zeroed.bars.size() == 1);
  CHECK(zeroed.bars[0].segments[0] == 25.0);  // percent
  CHECK(zeroed.bars[0].label == "turbo (-6)");  // n_r not in the params: turbo's declared default

  const auto& m = std::get<LineChart>(find(all, "trace.m.turbo")->body);
  REQUIRE(m.series.size() == 3);  // rows 0, mid, last
  CHECK(m.series[0].y == std::vector<double>{1, 4});
  CHECK(m.series[2].y == std::vector<double>{3, 6});
  CHECK(m.y.unit == "logit");
}

TEST_CASE("chart views: HBM bytes stack per tensor; roofline has model and measured points", "[views]") {
  const Results r = test::small_results();
  const std::vector<View> all = chart_views(r);
  const auto& hbm = std::get<BarChart>(find(all, "hbm.reference")->body);
  CHECK(hbm.stacks == std::vector<std::string>{"k", "o", "q", "v"});
  CHECK(hbm.bars[0].segments == std::vector<double>{20, 40, 10, 30});
  CHECK(hbm.y.unit == "bytes");
  const auto& model = std::get<BarChart>(find(all, "hbm.model")->body);
  CHECK(model.stacks == std::vector<std::string>{"o", "q"});  // "total" is not a segment

  const auto& roof = std::get<LineChart>(find(all, "roofline")->body);
  CHECK(roof.x.log);
  CHECK(roof.y.log);
  const double flops = 4.0 * 4 * 36 * 2;  // 4·d·pairs·B·H (not causal)
  const auto model_pt =
      std::find_if(roof.series.begin(), roof.series.end(), [](const Series& s) { return s.name == "predicted (model)"; });
  const auto kernel_pt =
      std::find_if(roof.series.begin(), roof.series.end(), [](const Series& s) { return s.name == "measured (kernel)"; });
  REQUIRE(model_pt != roof.series.end());
  REQUIRE(kernel_pt != roof.series.end());
  CHECK(model_pt->points);
  CHECK(model_pt->x[0] == Approx(flops / 1000));
  CHECK(model_pt->y[0] == Approx(flops / 1e-6 / 1e12));
  CHECK(kernel_pt->y[0] == Approx(flops / 2e-6 / 1e12));
  // The one point sits far below every knee: across the drawn range all roofs are the HBM slope, one line.
  const sim::GpuSpec gpu = sim::load_gpu_spec("h100-sxm5");
  const auto slope = std::find_if(roof.series.begin(), roof.series.end(),
                                  [](const Series& s) { return s.name == "FP16, FP8 and INT8 roof"; });
  REQUIRE(slope != roof.series.end());
  CHECK(slope->y.back() == Approx(gpu.peak(sim::Unit::hbm) * roof.x.hi / 1e12));
}

TEST_CASE("chart views: panel order, and nothing for probes no variant recorded", "[views]") {
  const std::vector<View> all = chart_views(test::small_results());
  std::vector<std::string> panels;
  for (const auto& v : all)
    if (panels.empty() || panels.back() != v.panel) panels.push_back(v.panel);
  CHECK(panels == std::vector<std::string>{"Block scales", "Channel outliers", "Head priority", "SAS", "HBM traffic",
                                           "Tile stepper"});
  Results bare;
  bare.problem = test::small_results().problem;
  VariantResult v;
  v.id = v.label = "naive";
  v.reference = ReferenceResult{};
  bare.variants = {v};
  CHECK(chart_views(bare).empty());
}

TEST_CASE("view_as_table: long-form rows for heatmaps, lines and bars", "[views]") {
  const std::vector<View> all = chart_views(test::small_results());
  const Table h = view_as_table(*find(all, "scales.q.turbo.reference"));
  CHECK(h.rows.size() == 12);
  CHECK(h.columns[2].key == "value");
  CHECK(h.rows[7][2].value == 8);
  const Table b = view_as_table(*find(all, "hbm.reference"));
  CHECK(b.rows.size() == 4);
  CHECK(b.rows[0][1].text == "k");
  const Table l = view_as_table(*find(all, "channels"));
  CHECK(l.rows.size() == 24);  // 6 series × 4 channels
}

}  // namespace
}  // namespace attnlab::views

namespace attnlab::views {
namespace ATTNLAB_FILE_LOCAL {

// The tile stepper's data at each step, from the sample's trace (2 steps × 3 rows) and its model details.
TEST_CASE("stepper_view: rows, rescale flags, bytes per step, tile scales, the model's tile", "[views]") {
  Results r = test::small_results();
  ReferenceResult& ref = *r.variants[0].reference;
  ref.probes["trace.block"] = labelled({"batch", "head", "row_block", "first_row", "rows", "block_r", "block_c"},
                                       {0, 1, 0, 0, 3, 3, 3}, "", "");
  ref.probes["trace.kv_tile"] = {{2}, {0, 1}, {}, "tile", ""};
  r.variants[0].model->details["per_tile"] = {{"bytes", {{"k", 10.0}, {"v", 20.0}}}, {"ops", {{"mma_fp16", 99.0}}},
                                              {"q_block_bytes", 7.0}};
  CHECK(traced_variants(r) == std::vector<std::string>{"turbo"});
  const auto s0 = stepper_view(r, "turbo", 0);
  REQUIRE(s0);
  CHECK(s0->steps == 2);
  CHECK(s0->bytes_this_step == 100);  // step 0: Q_i with the first tile
  REQUIRE(s0->rows_shown.size() == 3);
  CHECK_FALSE(s0->rows_shown[0].m_changed);
  const auto s1 = stepper_view(r, "turbo", 7);  // clamped to the last step
  REQUIRE(s1);
  CHECK(s1->step == 1);
  CHECK(s1->kv_tile == 1);
  CHECK(s1->bytes_this_step == 100);  // 200 − 100
  CHECK(s1->rows_shown[2].m == 6);
  CHECK(s1->rows_shown[2].m_changed);  // 3 → 6
  // scales.q is per token (6 = q_len): head 1, row block 0 of 3 rows → tokens 0..2 of row 1: 7, 8, 9.
  REQUIRE_FALSE(s1->scales.empty());
  CHECK(s1->scales[0].name == "scales.q");
  CHECK(s1->scales[0].per_token);
  CHECK(s1->scales[0].lo == 7);
  CHECK(s1->scales[0].hi == 9);
  REQUIRE(s1->model_tile.size() == 3);
  CHECK(s1->model_tile[0].value == 30);  // K/V bytes of one tile
  CHECK(s1->model_tile[1].value == 7);   // Q_i
  CHECK_FALSE(stepper_view(r, "no such variant", 0));
}

}  // namespace
}  // namespace attnlab::views
