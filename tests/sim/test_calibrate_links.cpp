// Calibration across GPUs (sim/calibrate.h): rows measured as a ring over several GPUs fit the link term — its
// efficiency and latency, through over_link (sim/context_parallel_model.h) — after the units are fitted on the rows of
// one GPU. Rings timed by the model itself with a known link recover it; rings whose transfers all hide leave the link
// unidentified; what cannot be calibrated is refused in one line; the fit is written into the spec and read back.
#include "core/error.h"
#include "core/registry.h"
#include "sim/calibrate.h"
#include "sim/context_parallel_model.h"
#include "sim/gpu_spec.h"
#include "sim/schedule.h"
#include "tests/catch.h"
#include "tests/support/model_cases.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace attnlab::sim {
namespace ATTNLAB_FILE_LOCAL {

using test::request;

Problem prefill(int64_t n, bool causal, int64_t kv_heads, int64_t gpus) {
  Problem p;
  p.batch = 1, p.q_heads = 32, p.kv_heads = kv_heads, p.q_len = n, p.kv_len = n, p.head_dim = 128, p.causal = causal;
  p.gpus = gpus;
  return p;
}

// An L40S (PCIe) whose tensor cores reach 0.6 of the datasheet and whose links 0.55 of their rate with 25 µs per
// transfer: the "hardware" the measurements below come from.
GpuSpec truth() {
  GpuSpec g = load_gpu_spec("l40s");
  g.efficiency = {{"mma_fp16", 0.6}};
  g.link_efficiency = 0.55, g.link_latency_us = 25;
  return g;
}

double time_on(const GpuSpec& g, const Problem& p) {
  const VariantRequest v = request("flash2");
  return p.gpus == 1 ? predict(make_schedule(p, v, g), g).time_ms
                     : predict_context_parallel(p, v, g, int(p.gpus), cp::default_balance(p.causal)).time_ms;
}

// One-GPU rows (every length the rings' blocks and the rings' own problems take) and rings on 2 and 4 GPUs, MHA (whose
// shards bind the PCIe link at these lengths) and GQA, causal and not, timed on `g`.
std::vector<Measurement> rows(const GpuSpec& g, bool with_rings = true) {
  std::vector<Measurement> m;
  auto add = [&](const Problem& p) {
    m.push_back({fmt::format("flash2 N={} kv={} causal={} ×{}", p.kv_len, p.kv_heads, p.causal, p.gpus), p,
                 request("flash2"), time_on(g, p), ""});
  };
  for (int64_t n : {512, 1024, 2048, 4096, 8192, 16384})
    for (bool causal : {false, true})
      for (int64_t kv : {8, 32}) add(prefill(n, causal, kv, 1));
  if (with_rings)
    for (int64_t n : {4096, 8192, 16384})
      for (int64_t gpus : {2, 4})
        for (bool causal : {false, true})
          for (int64_t kv : {8, 32}) add(prefill(n, causal, kv, gpus));
  return m;
}

TEST_CASE("calibrate across GPUs: rings timed on a known link give that link back", "[sim][calibrate][context_parallel]") {
  const std::vector<Measurement> m = rows(truth());
  const GpuSpec spec = load_gpu_spec("l40s");  // its datasheet link: efficiency 0.8, 10 µs
  REQUIRE(spec.link_efficiency == 0.8);
  const Calibration c = calibrate(spec, m);
  REQUIRE(c.efficiency.count("link_efficiency"));
  REQUIRE(c.efficiency.count("link_latency_us"));
  // The units are fitted on the one-GPU rows to within the golden sections' resolution, so the rings' blocks are the
  // truth's; what is left for the link fit is the link itself.
  CHECK(c.efficiency.at("link_efficiency") == Approx(0.55).epsilon(0.01));
  CHECK(c.efficiency.at("link_latency_us") == Approx(25).epsilon(0.05));
  REQUIRE(c.rows.size() == m.size());
  size_t across = 0;
  for (size_t i = 0; i < m.size(); ++i) {
    INFO(c.rows[i].label);
    CHECK(c.rows[i].label == m[i].label);  // every row, in the file's order
    if (m[i].problem.gpus == 1) continue;
    ++across;
  }
  CHECK(across == 24);
  for (const CalibrationRow& r : c.rows) {
    INFO(r.label);
    CHECK(r.after_ms == Approx(r.measured_ms).epsilon(0.005));
    CHECK(r.loo_ms == Approx(r.measured_ms).epsilon(0.01));
  }
  CHECK(c.median_error_after < 0.002);
  CHECK(c.median_error_before > 0.05);  // the datasheet's link, and tensor cores at 1: far off
}

TEST_CASE("calibrate across GPUs: where every transfer hides, the link is not identifiable", "[sim][calibrate][context_parallel]") {
  // H100s over NVLink at N 64k and 128k: the attention hides every transfer, so no row moves with the link.
  GpuSpec h100 = load_gpu_spec("h100-sxm5");
  h100.efficiency.clear();
  std::vector<Measurement> m;
  for (int64_t n : {65536, 131072})
    for (int64_t gpus : {1, 2, 4}) {
      const Problem p = prefill(n, true, 8, gpus);
      m.push_back({fmt::format("N={} ×{}", n, gpus), p, request("flash2"), time_on(h100, p), ""});
    }
  const Calibration c = calibrate(h100, m);
  CHECK(c.efficiency.count("link_efficiency") == 0);
  CHECK(c.efficiency.count("link_latency_us") == 0);
  CHECK(std::count(c.not_identifiable.begin(), c.not_identifiable.end(), "link_efficiency") == 1);
  CHECK(std::count(c.not_identifiable.begin(), c.not_identifiable.end(), "link_latency_us") == 1);
}

TEST_CASE("calibrate across GPUs: decodes tell the link's latency, not its rate", "[sim][calibrate][context_parallel]") {
  // A decode's partials are a few KB: the gather is its latency, and a 10% change of the rate moves no row's time by
  // 0.5% — the rate is left at the spec's estimate and named, where a fit would have been the prior's and the noise's.
  std::vector<Measurement> m = rows(truth(), false);
  for (int64_t n : {32768, 262144, 1048576})
    for (int64_t gpus : {1, 2, 4}) {
      Problem p = prefill(n, false, 8, gpus);
      p.phase = Phase::decode, p.q_len = 1;
      m.push_back({fmt::format("decode N={} ×{}", n, gpus), p, request("flash2"), time_on(truth(), p), ""});
    }
  const Calibration c = calibrate(load_gpu_spec("l40s"), m);
  CHECK(c.efficiency.count("link_efficiency") == 0);
  CHECK(std::count(c.not_identifiable.begin(), c.not_identifiable.end(), "link_efficiency") == 1);
  REQUIRE(c.efficiency.count("link_latency_us") == 1);
  CHECK(c.efficiency.at("link_latency_us") == Approx(25).epsilon(0.02));
}

TEST_CASE("calibrate across GPUs: what it cannot fit, it refuses in one line", "[sim][calibrate][context_parallel]") {
  const GpuSpec spec = load_gpu_spec("l40s");
  std::vector<Measurement> rings;
  for (const Measurement& x : rows(truth()))
    if (x.problem.gpus > 1) rings.push_back(x);
  auto refusal = [&](const std::vector<Measurement>& m, const GpuSpec& g) {
    try {
      (void)calibrate(g, m);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  // Rings alone: no one-GPU rows to fit the units their blocks are predicted with.
  const std::string alone = refusal(rings, spec);
  CHECK(alone.find("every row was measured across GPUs") != std::string::npos);
  CHECK(alone.find('\n') == std::string::npos);
  // Another implementation's ring: the model's ring is attnlab's.
  std::vector<Measurement> other = rows(truth(), false);
  other.push_back(rings[0]);
  other.back().implementation = "ring_flash_attn";
  CHECK(refusal(other, spec).find("measurements[" + std::to_string(other.size() - 1) + "]") == 0);
  // A spec without links: no multi-GPU model to fit.
  GpuSpec no_links = spec;
  no_links.pcie_gbs_per_direction = 0, no_links.nvlink_gbs_per_direction = 0;
  std::vector<Measurement> mixed = rows(truth(), false);
  mixed.push_back(rings[0]);
  CHECK(refusal(mixed, no_links).find("no links section") != std::string::npos);
}

TEST_CASE("calibrate across GPUs: the fitted link is written into the spec and read back", "[sim][calibrate][context_parallel]") {
  const std::vector<Measurement> m = rows(truth());
  const std::string source = std::string(ATTNLAB_SOURCE_DIR) + "/sim/specs/l40s.json";
  const Calibration c = calibrate(load_gpu_spec_file(source), m);
  const std::string dir = std::string(ATTNLAB_TEST_TMP) + "/calibrate-links";
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/l40s.json";
  std::ofstream(path) << spec_with_calibration(source, c, m.size(), "rings.json");
  const GpuSpec back = load_gpu_spec_file(path);
  CHECK(back.link_efficiency == Approx(c.efficiency.at("link_efficiency")).epsilon(1e-12));
  CHECK(back.link_latency_us == Approx(c.efficiency.at("link_latency_us")).epsilon(1e-12));
  CHECK(back.measured.contains("link_efficiency"));
  CHECK_FALSE(back.measured["efficiency"].contains("link_efficiency"));  // not a unit
  // The model now predicts the rings within the fit's error.
  for (const Measurement& x : m)
    if (x.problem.gpus > 1) {
      INFO(x.label);
      CHECK(time_on(back, x.problem) == Approx(x.median_ms).epsilon(0.005));
    }
  // A later calibration from one-GPU rows only says nothing of the links: the fitted link stays in the spec; and a
  // fit from the rings again starts from the links section's estimates (not from the fit the spec now holds) and lands
  // where the first did.
  const Calibration units_only = calibrate(back, rows(truth(), false));
  const std::string again = dir + "/again";
  std::filesystem::create_directories(again);
  std::ofstream(again + "/l40s.json") << spec_with_calibration(path, units_only, 24, "one-gpu.json");
  CHECK(load_gpu_spec_file(again + "/l40s.json").link_efficiency == back.link_efficiency);
  CHECK(back.links_section_efficiency == 0.8);
  const Calibration refit = calibrate(back, m);
  CHECK(refit.efficiency.at("link_efficiency") == Approx(c.efficiency.at("link_efficiency")).epsilon(0.01));
  CHECK(refit.efficiency.at("link_latency_us") == Approx(c.efficiency.at("link_latency_us")).epsilon(0.02));
  GpuSpec start = back;  // "before": the datasheet's units, the spec's issue latency, the links section's link
  start.efficiency.clear(), start.cta_overhead_us = 1.0;
  start.link_efficiency = 0.8, start.link_latency_us = 10;
  for (size_t i = 0; i < m.size(); ++i)
    if (m[i].problem.gpus > 1) CHECK(refit.rows[i].before_ms == time_on(start, m[i].problem));
  // A spec whose measured line names a link term but which has no links section is refused, naming the field.
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::string s = text.str();
  const auto links = s.find("\n \"links\":");
  REQUIRE(links != std::string::npos);
  const auto end = s.find("\n \"", links + 1);
  s.erase(links, end - links);
  const std::string bad = dir + "/bad/l40s.json";
  std::filesystem::create_directories(dir + "/bad");
  std::ofstream(bad) << s;
  try {
    (void)load_gpu_spec_file(bad);
    FAIL("a link term without links was read");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("measured.link_efficiency") != std::string::npos);
  }
}

}  // namespace ATTNLAB_FILE_LOCAL
}  // namespace attnlab::sim
