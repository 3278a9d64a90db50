#include "sim/calibrate.h"

#include "core/error.h"
#include "sim/schedule.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

namespace attnlab::sim {

using nlohmann::json;

namespace {

constexpr double kLo = -3.912, kHi = 0.405;  // ln 0.02, ln 1.5
constexpr int kSweeps = 40;
constexpr double kPrior = 1e-5;
constexpr const char* kOverhead = "cta_overhead_us";
constexpr double kOverheadLo = -4.6, kOverheadHi = 3.4;  // ln 0.01 µs, ln 30 µs

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct Fitter {
  GpuSpec gpu;
  ModelOptions options;
  std::vector<Layout> layouts;  // the efficiency-independent half of each prediction, computed once
  std::vector<double> measured;

  double predict_one(size_t i) const { return timing(layouts[i], gpu).time_ms; }

  // Σ (ln t_model − ln t_measured)² over the rows in `use`, plus a weak pull of every factor towards the
  // datasheet (kPrior·Σ ln² factor): when two units could explain a time (e.g. a slow MMA or a very slow
  // conversion pipe), the explanation that needs the smaller departure from the datasheet wins.
  double loss(const std::vector<size_t>& use, bool prior = true) const {
    double s = 0;
    if (prior) {
      for (const auto& [_, e] : gpu.efficiency) s += kPrior * std::log(e) * std::log(e);
      s += kPrior * std::log(gpu.cta_overhead_us) * std::log(gpu.cta_overhead_us);
    }
    for (size_t i : use) {
      const double r = std::log(predict_one(i) / measured[i]);
      s += r * r;
    }
    return s;
  }

  // Coordinate descent with golden-section line searches on ln(factor).
  // The parameter called `u`: a unit's efficiency factor, or the per-wave CTA overhead (µs).
  double& param(const std::string& u) { return u == kOverhead ? gpu.cta_overhead_us : gpu.efficiency[u]; }

  std::map<std::string, double> fit(const std::vector<std::string>& units, const std::vector<size_t>& use,
                                    std::vector<std::string>* flat) {
    for (const auto& u : units) param(u) = 1.0;
    const double phi = (std::sqrt(5.0) - 1) / 2;
    for (int sweep = 0; sweep < kSweeps; ++sweep)
      for (const auto& u : units) {
        auto at = [&](double x) {
          param(u) = std::exp(x);
          return loss(use);
        };
        double a = u == kOverhead ? kOverheadLo : kLo, b = u == kOverhead ? kOverheadHi : kHi;
        double c = b - phi * (b - a), d = a + phi * (b - a);
        double fc = at(c), fd = at(d);
        for (int it = 0; it < 60; ++it) {
          if (fc < fd) b = d, d = c, fd = fc, c = b - phi * (b - a), fc = at(c);
          else a = c, c = d, fc = fd, d = a + phi * (b - a), fd = at(d);
        }
        param(u) = std::exp((a + b) / 2);
      }
    std::map<std::string, double> out;
    for (const auto& u : units) {
      // Identifiable: moving the factor by 10% either way changes the loss.
      const double best = param(u), base = loss(use, false);
      param(u) = best * 1.1;
      const double up = loss(use, false);
      param(u) = best / 1.1;
      const double down = loss(use, false);
      const bool moves = std::abs(up - base) > 1e-12 || std::abs(down - base) > 1e-12;
      param(u) = moves ? best : 1.0;
      if (moves) out[u] = best;
      else if (flat) flat->push_back(u);
    }
    return out;
  }
};

}  // namespace

json measurements_json(const std::vector<Results>& runs) {
  json list = json::array();
  std::string device;
  for (const Results& r : runs) {
    if (r.environment.gpu) device = *r.environment.gpu;
    for (const VariantResult& v : r.variants) {
      if (!v.kernel) continue;
      const KernelResult& k = *v.kernel;
      list.push_back({{"variant", v.id}, {"label", v.label}, {"params", v.params}, {"problem", r.problem},
                      {"median_ms", k.median_ms}, {"p10_ms", k.p10_ms}, {"p90_ms", k.p90_ms}, {"tops", k.tops},
                      {"hbm_gbps", k.hbm_gbps}});
    }
  }
  return {{"schema", "attnlab.measurements/1"}, {"gpu", spec_id_for_device(device)}, {"device", device},
          {"measurements", list}};
}

std::vector<Measurement> load_measurements(const std::string& path, std::string* gpu) {
  std::ifstream in(path);
  if (!in) fail_input(path, "cannot open the measurements file");
  json j;
  try {
    j = json::parse(in);
  } catch (const json::parse_error& e) {
    fail_input(path, fmt::format("not valid JSON (byte {})", e.byte));
  }
  if (!j.is_object() || j.value("schema", "") != "attnlab.measurements/1")
    fail_input(path, "expected schema \"attnlab.measurements/1\"");
  if (gpu) *gpu = j.value("gpu", "");
  if (!j.contains("measurements") || !j["measurements"].is_array() || j["measurements"].empty())
    fail_input(path + ".measurements", "expected a non-empty array");
  std::vector<Measurement> out;
  for (size_t i = 0; i < j["measurements"].size(); ++i) {
    const json& m = j["measurements"][i];
    const std::string at = fmt::format("{}: measurements[{}]", path, i);
    if (!m.is_object() || !m.contains("variant") || !m["variant"].is_string())
      fail_input(at + ".variant", "expected a variant id");
    if (!m.contains("median_ms") || !m["median_ms"].is_number() || !(m["median_ms"].get<double>() > 0))
      fail_input(at + ".median_ms", "expected a positive time");
    json config = {{"problem", m.value("problem", json::object())},
                   {"variants", json::array({{{"id", m["variant"]}, {"params", m.value("params", json::object())}}})}};
    Experiment e;
    try {
      e = parse_experiment(config);
    } catch (const InputError& err) {
      fail_input(at, err.what());
    }
    const Problem& p = e.problem;
    const std::string label = fmt::format("{} B={} H={}/{} N={} d={}{}{}", m["variant"].get<std::string>(), p.batch,
                                          p.q_heads, p.kv_heads, p.kv_len, p.head_dim, p.causal ? " causal" : "",
                                          p.phase == Phase::decode ? " decode" : "");
    out.push_back({label, p, e.variants[0], m["median_ms"].get<double>()});
  }
  return out;
}

Calibration calibrate(const GpuSpec& gpu, const std::vector<Measurement>& m, const ModelOptions& o) {
  if (m.empty()) fail_input("measurements", "nothing to calibrate from");
  Fitter f{gpu, o, {}, {}};
  f.gpu.efficiency.clear();
  f.gpu.cta_overhead_us = 1.0;
  std::set<std::string> used = {"hbm"};
  for (const auto& x : m) {
    f.layouts.push_back(layout(make_schedule(x.problem, x.variant, gpu), gpu, o, nullptr));
    f.measured.push_back(x.median_ms);
    for (const auto& [u, ops] : f.layouts.back().work.ops)
      if (ops > 0) used.insert(to_string(u));
  }
  // Fit the units that bound the most uncalibrated predictions first: coordinate descent settles on the
  // first unit that can explain a time, and that should be the one on the critical path, not a pipe the
  // datasheet says has room to spare.
  std::map<std::string, int> binds;
  for (const auto& l : f.layouts) {
    const std::string b = timing(l, f.gpu).bound;
    ++binds[b == "memory" ? "hbm" : b];
  }
  std::vector<std::string> units(used.begin(), used.end());
  units.push_back(kOverhead);
  std::stable_sort(units.begin(), units.end(), [&](const auto& a, const auto& b) { return binds[a] > binds[b]; });
  std::vector<size_t> all(m.size());
  for (size_t i = 0; i < m.size(); ++i) all[i] = i;

  Calibration c;
  std::vector<double> before(m.size());
  for (size_t i = 0; i < m.size(); ++i) before[i] = f.predict_one(i);
  c.efficiency = f.fit(units, all, &c.not_identifiable);
  const GpuSpec fitted = f.gpu;
  for (size_t i = 0; i < m.size(); ++i) {
    std::vector<size_t> others;
    for (size_t k = 0; k < m.size(); ++k)
      if (k != i) others.push_back(k);
    double loo = f.predict_one(i);
    if (!others.empty()) {
      Fitter g{gpu, o, f.layouts, f.measured};
      g.gpu.efficiency.clear();
      g.gpu.cta_overhead_us = 1.0;
      g.fit(units, others, nullptr);
      loo = g.predict_one(i);
    }
    c.rows.push_back({m[i].label, m[i].median_ms, before[i], timing(f.layouts[i], fitted).time_ms, loo});
  }
  std::vector<double> eb, ea, el;
  for (const auto& r : c.rows) {
    eb.push_back(std::abs(r.before_ms / r.measured_ms - 1));
    ea.push_back(std::abs(r.after_ms / r.measured_ms - 1));
    el.push_back(std::abs(r.loo_ms / r.measured_ms - 1));
  }
  c.median_error_before = median(eb), c.median_error_after = median(ea), c.median_error_loo = median(el);
  return c;
}

std::string spec_with_calibration(const std::string& spec_path, const Calibration& c, size_t measurements,
                                  const std::string& source) {
  std::ifstream in(spec_path);
  if (!in) fail_input(spec_path, "cannot open the GPU spec");
  std::stringstream text;
  text << in.rdbuf();
  const std::string s = text.str();
  // Replace the `"measured": …` line (the spec files keep it on one line, last) and keep the rest verbatim.
  const auto at = s.find("\n \"measured\":");
  if (at == std::string::npos) fail_input(spec_path, "no \"measured\" line to replace");
  const auto end = s.find('\n', at + 1);
  std::map<std::string, double> factors = c.efficiency;
  const auto overhead = factors.find(kOverhead);
  json measured = json::object();
  if (overhead != factors.end()) measured["cta_overhead_us"] = overhead->second, factors.erase(overhead);
  measured.update({{"efficiency", factors},
                   {"fitted_from", measurements},
                   {"measurements", source},
                   {"median_error_before", c.median_error_before},
                   {"median_error_after", c.median_error_after},
                   {"median_error_leave_one_out", c.median_error_loo}});
  if (!c.not_identifiable.empty()) measured["not_identifiable"] = c.not_identifiable;
  return s.substr(0, at) + "\n \"measured\": " + measured.dump() + s.substr(end);
}

}  // namespace attnlab::sim
