// The Data panel (app/views/data_views.h): the inputs' attention statistics per head, with the heads a paper
// would call sink heads marked, their range beside the published observations, and the one line that says
// which data a report's numbers come from.
#include "app/report/html.h"
#include "app/views/chart.h"
#include "app/views/data_views.h"
#include "core/data/attention_stats.h"
#include "tests/catch.h"
#include "tests/support/sample_results.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>
#include <variant>

namespace attnlab::views {
namespace ATTNLAB_FILE_LOCAL {

ProbeArray per_head(std::vector<double> v) {
  ProbeArray a;
  a.shape = {1, int64_t(v.size())};
  a.values = ProbeValues(std::move(v));
  a.unit = "share";
  return a;
}

Results with_statistics() {
  Results r = test::small_results();  // B 1, two query heads
  r.data_probes["attn.sink_share"] = per_head({0.62, 0.05});
  r.data_probes["attn.recent_mass"] = per_head({0.1, 0.55});
  r.data_probes["attn.entropy"] = per_head({0.4, 0.7});
  r.data_probes["attn.logit_range"] = per_head({14.0, 9.5});
  r.config["data"] = {{"generator", "llm_like"}, {"seed", 3}, {"sink_heads", 0.5}};
  return r;
}

const View* find_view(const std::vector<View>& views, const std::string& id) {
  const auto it = std::find_if(views.begin(), views.end(), [&](const View& v) { return v.id == id; });
  return it == views.end() ? nullptr : &*it;
}

TEST_CASE("data views: per-head shares with the sink heads marked, and their range beside real models", "[views]") {
  const std::vector<View> views = chart_views(with_statistics());
  const View* chart = find_view(views, "data.attention");
  REQUIRE(chart != nullptr);
  CHECK(chart->panel == "Data");
  const BarChart& bars = std::get<BarChart>(chart->body);
  REQUIRE(bars.bars.size() == 2);
  CHECK(bars.bars[0].label == "b0 h0");
  CHECK(bars.bars[0].segments == std::vector<double>{0.62, 0.1, 0.4});
  CHECK(bars.bars[0].marked);   // 0.62 > 0.3: a sink head (Gu et al.)
  CHECK(!bars.bars[1].marked);  // 0.05
  CHECK(bars.mark_meaning.find("0.3") != std::string::npos);
  const View* summary = find_view(views, "data.attention.summary");
  REQUIRE(summary != nullptr);
  const Table& t = std::get<Table>(summary->body);
  REQUIRE(t.rows.size() == 4);
  CHECK(t.rows[0][0].text == "attn.sink_share");
  CHECK(t.rows[0][2].value == 0.05);  // min
  CHECK(t.rows[0][4].value == 0.62);  // max
  CHECK(t.rows[0][5].text.find("StreamingLLM") != std::string::npos);
  CHECK(t.rows[3][0].text == "attn.logit_range");
  CHECK(t.rows[3][5].text == "-");  // no paper gives a range to hold it against

  // No statistics (a model-only run, a file from before them): no Data views.
  Results none = test::small_results();
  none.data_probes.clear();
  CHECK(data_views(none).empty());
}

TEST_CASE("data line: synthetic data says so, with its generator, seed and parameters, atop the report", "[views]") {
  Results r = with_statistics();
  CHECK(data_line(r) == "synthetic data: llm_like (seed 3; sink_heads 0.5)");
  CHECK(data_line(r, false) == "synthetic data: llm_like (seed 3)");
  const std::string html = report::render_html(r);
  const size_t line = html.find("<p class=\"data\">synthetic data: llm_like (seed 3; sink_heads 0.5)</p>");
  REQUIRE(line != std::string::npos);
  CHECK(line < html.find("<table"));  // read before any number
  r.config["data"] = {{"file", "acts/layer8.safetensors"}};
  CHECK(data_line(r) == "data from acts/layer8.safetensors");
  // A model-only run made none of it, and the line says so (Environment::data_note).
  r.environment.data_note = kNoDataNote;
  CHECK(data_line(r) == std::string("data from acts/layer8.safetensors — ") + kNoDataNote);
}

}  // namespace
}  // namespace attnlab::views
