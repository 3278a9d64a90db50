#include "sim/calibrate.h"

#include "core/error.h"
#include "core/parallel.h"
#include "sim/context_parallel_model.h"
#include "sim/factor_timing.h"
#include "sim/schedule.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <mutex>
#include <set>
#include <sstream>
#include <stdexcept>

namespace attnlab::sim {

using nlohmann::json;

namespace {

constexpr int kSweeps = 40;
constexpr double kPrior = 1e-5;
constexpr const char* kOverhead = "cta_overhead_us";
// The latency term's cycles between a warp's instructions (cost_model.h, step 2).
constexpr const char* kLatency = "issue_latency_cycles";
// The link term of the model across GPUs (context_parallel_model.h): fitted on the rows measured across GPUs.
constexpr const char* kLinkEfficiency = "link_efficiency";
constexpr const char* kLinkLatency = "link_latency_us";
// The range each fitted factor may take — it stays physical, or the fit explains a time by a unit that did
// not spend it. An efficiency is a fraction of the datasheet's peak: at most 1.
struct PhysicalRange {
  const char* name;
  double lo, hi;
};
constexpr PhysicalRange kPhysical[] = {
    // A streaming kernel moves 0.85–0.9 of the datasheet's bandwidth (copy on the H100: 2.93–2.98 of 3.35 TB/s);
    // a tiled one, with its prologue and epilogue not overlapped, not less than half.
    {"hbm", 0.5, 1.0},
    // Tensor cores: FlashAttention kernels reach 0.35–0.75 of peak (FA2 ~0.35–0.5, FA3 ~0.75 on the H100).
    {"mma_fp16", 0.3, 1.0},
    {"mma_fp8", 0.3, 1.0},
    {"mma_int8", 0.3, 1.0},
    // The SIMT pipes at a quarter of their rate or better (measured: FFMA 122 of 128 per clock, ex2 16 of 16).
    {"fma_fp32", 0.25, 1.0},
    {"exp_sfu", 0.25, 1.0},
    {"int32", 0.25, 1.0},
    {"cvt", 0.25, 1.0},
    // Issue: the latency term already says how far below one instruction per clock a scheduler stays.
    {"issue", 0.5, 1.0},
    // A CTA wave's fill and drain: about one DRAM latency and a tile's load, 1–5 µs.
    {kOverhead, 0.1, 10},
    // The ALU's dependent latency (about 4 cycles on sm_80–sm_90) to a shared-memory load's (about 30).
    {kLatency, 4, 30},
    // A ring across GPUs (problem.gpus > 1): the share of the link's datasheet rate per direction NCCL's send/receive
    // reaches (large messages on NVLink or PCIe: 0.6–0.9), and its fixed time per transfer (a few µs on NVLink, tens
    // on PCIe through the host).
    {kLinkEfficiency, 0.3, 1.0},
    {kLinkLatency, 1, 100},
};

// Up to this many measurements, each leave-one-out fit is a whole fit of its own (N² work: ~3 s of CPU at 100).
constexpr std::size_t kRefitLooMax = 100;
// Leave-one-out fits from the full fit (Levenberg–Marquardt): the difference step in ln(value), when a
// step is too small to go on, and at most how many iterations.
constexpr double kLmStep = 1e-7, kLmTol = 1e-10;
constexpr int kLmIterations = 100;
constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();

}  // namespace

std::pair<double, double> physical_range(const std::string& factor) {
  for (const PhysicalRange& r : kPhysical)
    if (factor == r.name) return {r.lo, r.hi};
  throw std::logic_error("calibrate: no physical range for the factor '" + factor + "'");
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

namespace {

// The medians of |t_model/t_measured − 1| over c's rows, before the fit, after it and left out of it.
void set_median_errors(Calibration& c) {
  std::vector<double> eb, ea, el;
  for (const auto& r : c.rows) {
    eb.push_back(std::abs(r.before_ms / r.measured_ms - 1));
    ea.push_back(std::abs(r.after_ms / r.measured_ms - 1));
    el.push_back(std::abs(r.loo_ms / r.measured_ms - 1));
  }
  c.median_error_before = median(eb), c.median_error_after = median(ea), c.median_error_loo = median(el);
}

// A fitted parameter: a unit's efficiency factor, or the per-wave CTA overhead (µs); searched in ln.
struct Param {
  std::string name;
  std::size_t unit = 0;
  bool overhead = false, latency = false;
  double lo = 0, hi = 0;  // ln of its physical range (physical_range)
  double start = 1.0;  // where a fit starts, and what a parameter no measurement moves keeps
};

struct Fitter {
  const FactorTiming& timing;
  const std::vector<double>& measured;
  std::vector<Param> params;       // in fitting order
  std::vector<std::size_t> prior;  // the unit parameters by name, then the overhead (the sum's order)

  static double& value(FactorParams& p, const Param& q) {
    return q.overhead ? p.cta_overhead_us : q.latency ? p.issue_latency_cycles : p.efficiency[q.unit];
  }

  // Σ (ln t_model − ln t_measured)² over every row but `skip`, plus a weak pull of every factor towards the
  // datasheet (kPrior·Σ ln² factor): when two units could explain a time (e.g. a slow MMA or a very slow
  // conversion pipe), the explanation that needs the smaller departure from the datasheet wins.
  double loss(const FactorParams& p, std::size_t skip, bool with_prior = true) const {
    double s = 0;
    if (with_prior)
      for (std::size_t k : prior) {
        // The pull is towards each parameter's start (the datasheet's 1, the spec's latency).
        const double e = value(const_cast<FactorParams&>(p), params[k]) / params[k].start;
        s += kPrior * std::log(e) * std::log(e);
      }
    const FactorTiming::Rates r = timing.rates(p);
    for (std::size_t i = 0; i < measured.size(); ++i) {
      if (i == skip) continue;
      const double d = std::log(timing.time_ms(i, r) / measured[i]);
      s += d * d;
    }
    return s;
  }

  // Golden-section search for the minimum of loss over ln(value of q) in [a, b], `steps` times or until
  // the bracket is narrower than `tol`; the parameter is left at the bracket's middle.
  double golden(FactorParams& p, const Param& q, double a, double b, int steps, double tol, std::size_t skip) const {
    static const double phi = (std::sqrt(5.0) - 1) / 2;
    auto at = [&](double x) {
      value(p, q) = std::exp(x);
      return loss(p, skip);
    };
    double c = b - phi * (b - a), d = a + phi * (b - a);
    double fc = at(c), fd = at(d);
    for (int it = 0; it < steps && b - a > tol; ++it) {
      if (fc < fd) b = d, d = c, fd = fc, c = b - phi * (b - a), fc = at(c);
      else a = c, c = d, fc = fd, d = a + phi * (b - a), fd = at(d);
    }
    const double x = (a + b) / 2;
    value(p, q) = std::exp(x);
    return x;
  }

  // The full fit: from 1, kSweeps sweeps of 60-step golden sections over each parameter's whole range.
  void fit_from_datasheet(FactorParams& p, std::size_t skip, const std::function<void(int)>& on_sweep = {}) const {
    for (const Param& q : params) value(p, q) = q.start;
    for (int sweep = 0; sweep < kSweeps; ++sweep) {
      for (const Param& q : params) golden(p, q, q.lo, q.hi, 60, 0, skip);
      if (on_sweep) on_sweep(sweep + 1);
    }
  }

  // Every row's residual ln(t_model/t_measured) at p (the skipped row's too; the caller leaves it out).
  void residuals(const FactorParams& p, std::vector<double>& r) const {
    const FactorTiming::Rates rates = timing.rates(p);
    r.resize(measured.size());
    for (std::size_t i = 0; i < measured.size(); ++i) r[i] = std::log(timing.time_ms(i, rates) / measured[i]);
  }

  // From p (the full fit's factors): Levenberg–Marquardt on x = ln(values), the rows' residuals and the
  // prior's √kPrior·x as one least-squares problem. Each iteration takes the residuals' Jacobian by forward
  // differences (one pass over the rows per parameter), solves (JᵀJ + λ·diag) δ = −Jᵀr, keeps x + δ (inside
  // each parameter's range) only if the loss falls, and otherwise raises λ (towards short gradient steps).
  // It moves every parameter at once, so it does not stall where a max() in the model couples two of them,
  // which coordinate descent near its start does.
  void fit_lm(FactorParams& p, std::size_t skip) const {
    const std::size_t n = params.size();
    std::vector<double> x(n), r, r_h;
    std::vector<std::vector<double>> jac(n);
    for (std::size_t k = 0; k < n; ++k) x[k] = std::log(value(p, params[k]));
    auto set = [&](const std::vector<double>& at) {
      for (std::size_t k = 0; k < n; ++k) value(p, params[k]) = std::exp(at[k]);
    };
    double cost = loss(p, skip), lambda = 1e-3;
    for (int iter = 0; iter < kLmIterations; ++iter) {
      residuals(p, r);
      for (std::size_t k = 0; k < n; ++k) {
        std::vector<double> xh = x;
        xh[k] += kLmStep;
        set(xh);
        residuals(p, r_h);
        jac[k].resize(r.size());
        for (std::size_t i = 0; i < r.size(); ++i) jac[k][i] = (r_h[i] - r[i]) / kLmStep;
      }
      set(x);
      // Normal equations of the rows but `skip`, plus the prior (residual √kPrior·x_k, derivative √kPrior).
      std::vector<double> a(n * n, 0.0), g(n, 0.0);
      for (std::size_t k = 0; k < n; ++k) {
        for (std::size_t l = 0; l <= k; ++l) {
          double s = 0;
          for (std::size_t i = 0; i < r.size(); ++i)
            if (i != skip) s += jac[k][i] * jac[l][i];
          a[k * n + l] = a[l * n + k] = s;
        }
        for (std::size_t i = 0; i < r.size(); ++i)
          if (i != skip) g[k] += jac[k][i] * r[i];
        a[k * n + k] += kPrior, g[k] += kPrior * (x[k] - std::log(params[k].start));
      }
      bool improved = false;
      std::vector<double> step;
      while (lambda < 1e12) {
        std::vector<double> damped = a;
        for (std::size_t k = 0; k < n; ++k) damped[k * n + k] += lambda * a[k * n + k];
        step = solve(damped, g, n);
        std::vector<double> xn(n);
        for (std::size_t k = 0; k < n; ++k) xn[k] = std::clamp(x[k] - step[k], params[k].lo, params[k].hi);
        set(xn);
        const double c = loss(p, skip);
        if (c < cost) {
          double moved = 0;
          for (std::size_t k = 0; k < n; ++k) moved = std::max(moved, std::abs(xn[k] - x[k]));
          x = xn, cost = c, lambda = std::max(lambda / 10, 1e-9), improved = true;
          if (moved < kLmTol) return;
          break;
        }
        lambda *= 10;
      }
      set(x);
      if (!improved) return;  // no step lowers the loss: a minimum
    }
  }

  // Gaussian elimination with partial pivoting: a (n × n, row-major) · s = g.
  static std::vector<double> solve(std::vector<double> a, std::vector<double> g, std::size_t n) {
    for (std::size_t c = 0; c < n; ++c) {
      std::size_t pivot = c;
      for (std::size_t r = c + 1; r < n; ++r)
        if (std::abs(a[r * n + c]) > std::abs(a[pivot * n + c])) pivot = r;
      for (std::size_t k = 0; k < n; ++k) std::swap(a[c * n + k], a[pivot * n + k]);
      std::swap(g[c], g[pivot]);
      for (std::size_t r = c + 1; r < n; ++r) {
        const double f = a[r * n + c] / a[c * n + c];
        for (std::size_t k = c; k < n; ++k) a[r * n + k] -= f * a[c * n + k];
        g[r] -= f * g[c];
      }
    }
    std::vector<double> s(n);
    for (std::size_t c = n; c-- > 0;) {
      double v = g[c];
      for (std::size_t k = c + 1; k < n; ++k) v -= a[c * n + k] * s[k];
      s[c] = v / a[c * n + c];
    }
    return s;
  }

  // Parameters whose ±10% moves no prediction go back to 1 (not identifiable from these rows).
  std::vector<std::string> settle_flat(FactorParams& p, std::size_t skip) const {
    std::vector<std::string> flat;
    for (const Param& q : params) {
      const double best = value(p, q), base = loss(p, skip, false);
      value(p, q) = best * 1.1;
      const double up = loss(p, skip, false);
      value(p, q) = best / 1.1;
      const double down = loss(p, skip, false);
      const bool moves = std::abs(up - base) > 1e-12 || std::abs(down - base) > 1e-12;
      value(p, q) = moves ? best : q.start;
      if (!moves) flat.push_back(q.name);
    }
    return flat;
  }
};

}  // namespace

// The units' fit (the header's), on rows measured on one GPU.
Calibration calibrate_units(const GpuSpec& gpu, const std::vector<Measurement>& m, const ModelOptions& o,
                            const CalibrationProgress& progress, LooMethod loo_method) {
  const LooMethod method = loo_method != LooMethod::automatic ? loo_method
                           : m.size() <= kRefitLooMax  ? LooMethod::refit
                                                       : LooMethod::from_full_fit;
  GpuSpec plain = gpu;  // the fit starts from the datasheet
  plain.efficiency.clear();
  plain.cta_overhead_us = 1.0;
  std::vector<Layout> layouts;
  std::vector<double> measured;
  std::set<std::string> used = {"hbm"};
  for (const auto& x : m) {
    const Kernels whose = x.implementation.empty() ? Kernels::ours : Kernels::design;
    layouts.push_back(layout(make_schedule(x.problem, x.variant, gpu, whose), gpu, o, nullptr));
    measured.push_back(x.median_ms);
    for (const auto& [u, ops] : layouts.back().work.ops)
      if (ops > 0) used.insert(to_string(u));
  }
  const FactorTiming timing_of(plain, layouts);
  // Fit the units that bound the most uncalibrated predictions first: coordinate descent settles on the
  // first unit that can explain a time, and that should be the one on the critical path, not a pipe the
  // datasheet says has room to spare.
  std::map<std::string, int> binds;
  for (const auto& l : layouts) {
    const std::string b = timing(l, plain).bound;
    ++binds[b == "memory" ? "hbm" : b];
  }
  std::vector<std::string> names(used.begin(), used.end());  // by name: the prior's order
  names.push_back(kOverhead);
  names.push_back(kLatency);
  std::vector<std::string> order = names;
  std::stable_sort(order.begin(), order.end(), [&](const auto& a, const auto& b) { return binds[a] > binds[b]; });
  Fitter f{timing_of, measured, {}, {}};
  for (const std::string& name : order) {
    Param q;
    q.name = name;
    if (name == kOverhead) q.overhead = true;
    else if (name == kLatency) q.latency = true;
    else
      q.unit = unit_index(*std::find_if(std::begin(kUnits), std::end(kUnits),
                                        [&](Unit u) { return name == to_string(u); }));
    const auto [lo, hi] = physical_range(name);
    q.lo = std::log(lo), q.hi = std::log(hi);
    q.start = std::clamp(q.latency ? gpu.issue_latency_cycles : q.start, lo, hi);
    f.params.push_back(q);
  }
  for (const std::string& name : names)
    f.prior.push_back(std::find_if(f.params.begin(), f.params.end(), [&](const Param& q) { return q.name == name; }) -
                      f.params.begin());

  std::mutex progress_lock;
  auto report = [&](double fraction, const std::string& stage) {
    if (!progress) return;
    std::lock_guard<std::mutex> hold(progress_lock);
    progress(fraction, stage);
  };
  // The share of the work the full fit takes: 40 whole-range sweeps against N shorter leave-one-out fits.
  const double full_share = method == LooMethod::refit ? 1.0 / double(m.size() + 1) : 0.3;
  FactorParams start;
  start.issue_latency_cycles = gpu.issue_latency_cycles;
  const FactorTiming::Rates start_rates = timing_of.rates(start);
  FactorParams fitted = start;
  f.fit_from_datasheet(fitted, kNone, [&](int sweep) {
    report(full_share * sweep / kSweeps, fmt::format("fit: sweep {}/{}", sweep, kSweeps));
  });
  Calibration c;
  c.not_identifiable = f.settle_flat(fitted, kNone);
  for (const Param& q : f.params)
    if (std::find(c.not_identifiable.begin(), c.not_identifiable.end(), q.name) == c.not_identifiable.end())
      c.efficiency[q.name] = Fitter::value(fitted, q);
  const FactorTiming::Rates fitted_rates = timing_of.rates(fitted);

  std::vector<double> loo(m.size());
  std::size_t done = 0;  // leave-one-out fits finished (under progress_lock)
  parallel_for(int64_t(m.size()), [&](int64_t i) {
    const auto row = std::size_t(i);
    if (m.size() == 1) {  // nothing to fit without it
      loo[row] = timing_of.time_ms(row, fitted_rates);
      return;
    }
    FactorParams p = fitted;
    if (method == LooMethod::refit) f.fit_from_datasheet(p, row);
    else f.fit_lm(p, row);
    f.settle_flat(p, row);
    loo[row] = timing_of.time_ms(row, timing_of.rates(p));
    // Counted and reported under one lock: counted first and reported after, two fits finishing together could
    // report 6/N before 5/N — the progress going back, and the last word not N/N (seen under the sanitizers' load).
    std::lock_guard<std::mutex> hold(progress_lock);
    const std::size_t n = ++done;
    if (progress)
      progress(full_share + (1 - full_share) * double(n) / double(m.size()),
               fmt::format("leave-one-out fits: {}/{}", n, m.size()));
  });
  for (size_t i = 0; i < m.size(); ++i)
    c.rows.push_back({m[i].label, m[i].median_ms, timing_of.time_ms(i, start_rates),
                      timing_of.time_ms(i, fitted_rates), loo[i]});
  set_median_errors(c);
  return c;
}

namespace {

// Rows measured across GPUs: their attention is the blocks' one-GPU model with the units' fitted factors, which the
// link does not change; what is fitted here is the link — its efficiency and latency — through over_link
// (context_parallel_model.h), by coordinate descent in ln(value) over each one's physical range with the same weak
// pull towards the spec's values as the units' fit. Each row is also predicted by a fit without it.
constexpr int kLinkSweeps = 12;
struct LinkFit {
  std::vector<MultiGpuPrediction> blocks;  // each row's prediction with the fitted units (its link replaced below)
  std::vector<Phase> phases;
  std::vector<double> measured;
  LinkRate spec_link;  // the spec's: its rate at efficiency 1, its latency
  double spec_efficiency = 1, spec_latency_us = 1;

  double time_ms(size_t i, double efficiency, double latency_us) const {
    LinkRate l = spec_link;
    l.bytes_per_s *= efficiency, l.latency_s = latency_us * 1e-6;
    return over_link(blocks[i], phases[i], l).time_ms;
  }
  double loss(double e, double lat, size_t skip, bool with_prior = true) const {
    double s = 0;
    for (size_t i = 0; i < measured.size(); ++i)
      if (i != skip) s += std::pow(std::log(time_ms(i, e, lat) / measured[i]), 2);
    if (with_prior) s += kPrior * (std::pow(std::log(e / spec_efficiency), 2) + std::pow(std::log(lat / spec_latency_us), 2));
    return s;
  }
  // The fit without row `skip` (kNone: with every row): kLinkSweeps sweeps of a 40-step golden section per parameter
  // (two parameters, nearly separable: the latency moves short transfers, the efficiency long ones).
  std::pair<double, double> fit(size_t skip) const {
    static const double phi = (std::sqrt(5.0) - 1) / 2;
    const auto [elo, ehi] = physical_range(kLinkEfficiency);
    const auto [llo, lhi] = physical_range(kLinkLatency);
    double e = spec_efficiency, lat = spec_latency_us;
    auto golden = [&](double& x, double lo, double hi, const std::function<double(double)>& f) {
      double a = std::log(lo), b = std::log(hi), c = b - phi * (b - a), d = a + phi * (b - a);
      double fc = f(std::exp(c)), fd = f(std::exp(d));
      for (int it = 0; it < 40; ++it) {
        if (fc < fd) b = d, d = c, fd = fc, c = b - phi * (b - a), fc = f(std::exp(c));
        else a = c, c = d, fc = fd, d = a + phi * (b - a), fd = f(std::exp(d));
      }
      x = std::exp((a + b) / 2);
    };
    for (int sweep = 0; sweep < kLinkSweeps; ++sweep) {
      golden(e, elo, ehi, [&](double x) { return loss(x, lat, skip); });
      golden(lat, llo, lhi, [&](double x) { return loss(e, x, skip); });
    }
    return {e, lat};
  }
  // A parameter is identifiable when a 10% change of it moves some row's time by more than kLinkSensitivity: rows
  // whose transfers hide under the attention, or a decode's partials of a few KB, barely feel the link's rate, and a
  // fit of it from them would be the prior's and the noise's, not the rows'.
  static constexpr double kLinkSensitivity = 0.005;
  bool moves(double e, double lat, bool efficiency, size_t skip) const {
    for (size_t i = 0; i < measured.size(); ++i) {
      if (i == skip) continue;
      const double base = time_ms(i, e, lat);
      for (double f : {1.1, 1 / 1.1}) {
        const double x = efficiency ? time_ms(i, e * f, lat) : time_ms(i, e, lat * f);
        if (std::abs(x / base - 1) > kLinkSensitivity) return true;
      }
    }
    return false;
  }
  // The fit without row `skip`, an unidentifiable parameter put back to the spec's value (and said so).
  struct Settled {
    double efficiency, latency_us;
    bool efficiency_fitted, latency_fitted;
  };
  Settled settled(size_t skip) const {
    const auto [e, lat] = fit(skip);
    const bool e_moves = moves(e, lat, true, skip), lat_moves = moves(e, lat, false, skip);
    return {e_moves ? e : spec_efficiency, lat_moves ? lat : spec_latency_us, e_moves, lat_moves};
  }
};

// The spec with the units' fitted factors in place of the datasheet's.
GpuSpec with_factors(const GpuSpec& gpu, const Calibration& units) {
  GpuSpec g = gpu;
  g.efficiency.clear();
  g.cta_overhead_us = 1.0;
  for (const auto& [name, value] : units.efficiency)
    if (name == kOverhead) g.cta_overhead_us = value;
    else if (name == kLatency) g.issue_latency_cycles = value;
    else g.efficiency[name] = value;
  return g;
}

}  // namespace

Calibration calibrate(const GpuSpec& gpu, const std::vector<Measurement>& m, const ModelOptions& o,
                      const CalibrationProgress& progress, LooMethod loo_method) {
  if (m.empty()) fail_input("measurements", "nothing to calibrate from");
  std::vector<Measurement> one;
  std::vector<size_t> on_one, across;  // indices of the rows measured on one GPU, across GPUs
  for (size_t i = 0; i < m.size(); ++i) {
    if (m[i].problem.gpus == 1) {
      one.push_back(m[i]), on_one.push_back(i);
      continue;
    }
    if (!m[i].implementation.empty())
      fail_input(fmt::format("measurements[{}]", i),
                 fmt::format("{} across {} GPUs by '{}': the model's ring is attnlab's own (kernels/context_parallel/)",
                             m[i].label, m[i].problem.gpus, m[i].implementation));
    if (const std::string why = links_missing(gpu); !why.empty())
      fail_input(fmt::format("measurements[{}]", i), fmt::format("{} across {} GPUs: {}", m[i].label, m[i].problem.gpus, why));
    across.push_back(i);
  }
  if (across.empty()) return calibrate_units(gpu, one, o, progress, loo_method);
  // The units first, on the rows of one GPU: the ring's blocks are predicted with them.
  if (one.empty())
    fail_input("measurements", "every row was measured across GPUs: the units are fitted on rows of one GPU, with which "
                               "the ring's blocks are predicted — measure problem.gpus 1 too (configs/"
                               "bench-context-parallel.json sweeps it)");
  const double share = double(one.size()) / double(m.size());
  Calibration c = calibrate_units(gpu, one, o,
                                  progress ? CalibrationProgress([&](double f, const std::string& stage) {
                                    progress(share * f, stage);
                                  })
                                           : CalibrationProgress{},
                                  loo_method);

  // The fit starts from the links section's estimates (not from an earlier fit the spec may hold), as the units'
  // start from the datasheet.
  GpuSpec start = gpu;
  start.link_efficiency = gpu.links_section_efficiency, start.link_latency_us = gpu.links_section_latency_us;
  GpuSpec plain = with_factors(start, Calibration{});
  plain.issue_latency_cycles = gpu.issue_latency_cycles;
  const GpuSpec fitted = with_factors(start, c);
  LinkFit f;
  f.spec_link = link_of(start);
  f.spec_link.bytes_per_s /= start.link_efficiency;  // the rate at efficiency 1
  f.spec_efficiency = std::clamp(start.link_efficiency, physical_range(kLinkEfficiency).first, 1.0);
  f.spec_latency_us = std::clamp(start.link_latency_us, physical_range(kLinkLatency).first,
                                 physical_range(kLinkLatency).second);
  std::vector<double> before;
  for (size_t i : across) {
    const Measurement& x = m[i];
    const int gpus = int(x.problem.gpus);
    const cp::Balance balance = cp::default_balance(x.problem.causal);
    before.push_back(predict_context_parallel(x.problem, x.variant, plain, gpus, balance, o).time_ms);
    f.blocks.push_back(predict_context_parallel(x.problem, x.variant, fitted, gpus, balance, o));
    f.phases.push_back(x.problem.phase);
    f.measured.push_back(x.median_ms);
  }
  const LinkFit::Settled all = f.settled(kNone);
  if (all.efficiency_fitted) c.efficiency[kLinkEfficiency] = all.efficiency;
  else c.not_identifiable.push_back(kLinkEfficiency);
  if (all.latency_fitted) c.efficiency[kLinkLatency] = all.latency_us;
  else c.not_identifiable.push_back(kLinkLatency);
  std::vector<CalibrationRow> in_order(m.size());  // the file's order
  for (size_t k = 0; k < on_one.size(); ++k) in_order[on_one[k]] = c.rows[k];
  for (size_t k = 0; k < across.size(); ++k) {
    // With one ring row there is nothing to fit without it: its leave-one-out time is the fit's.
    const LinkFit::Settled without = across.size() > 1 ? f.settled(k) : all;
    in_order[across[k]] = {m[across[k]].label, f.measured[k], before[k], f.time_ms(k, all.efficiency, all.latency_us),
                           f.time_ms(k, without.efficiency, without.latency_us)};
  }
  c.rows = std::move(in_order);
  if (progress) progress(1.0, fmt::format("the link: {} rows across GPUs", across.size()));
  set_median_errors(c);
  return c;
}

std::string spec_with_calibration(const std::string& spec_path, const Calibration& c, size_t measurements,
                                  const std::string& source) {
  std::ifstream in(spec_path);
  if (!in) fail_input(echo_path(spec_path), "cannot open the GPU spec");
  std::stringstream text;
  text << in.rdbuf();
  const std::string s = text.str();
  // Replace the `"measured": …` line (the spec files keep it on one line, last) and keep the rest verbatim.
  const auto at = s.find("\n \"measured\":");
  if (at == std::string::npos) fail_input(echo_path(spec_path), "no \"measured\" line to replace");
  const auto end = s.find('\n', at + 1);
  std::map<std::string, double> factors = c.efficiency;
  const auto overhead = factors.find(kOverhead);
  json measured = json::object();
  if (overhead != factors.end()) measured["cta_overhead_us"] = overhead->second, factors.erase(overhead);
  for (const char* name : {kLatency, kLinkEfficiency, kLinkLatency})
    if (const auto it = factors.find(name); it != factors.end()) measured[name] = it->second, factors.erase(it);
  // A calibration without rows across GPUs says nothing of the links: an earlier fit of them stays.
  const bool link_fitted = std::any_of(c.not_identifiable.begin(), c.not_identifiable.end(), [](const std::string& n) {
    return n == kLinkEfficiency || n == kLinkLatency;
  }) || measured.contains(kLinkEfficiency) || measured.contains(kLinkLatency);
  if (!link_fitted) {
    const std::string line = s.substr(at + std::string("\n \"measured\":").size(), end - at - std::string("\n \"measured\":").size());
    const json before = json::parse(line.substr(0, line.find_last_not_of(", ") + 1), nullptr, false);
    for (const char* name : {kLinkEfficiency, kLinkLatency})
      if (before.is_object() && before.contains(name)) measured[name] = before[name];
  }
  // The source is a path as the user typed it: escaped, so the spec stays one printable line per field.
  measured.update({{"efficiency", factors},
                   {"fitted_from", measurements},
                   {"measurements", echo(source, 1000)},
                   {"median_error_before", c.median_error_before},
                   {"median_error_after", c.median_error_after},
                   {"median_error_leave_one_out", c.median_error_loo}});
  if (!c.not_identifiable.empty()) measured["not_identifiable"] = c.not_identifiable;
  return s.substr(0, at) + "\n \"measured\": " + measured.dump() + s.substr(end);
}

}  // namespace attnlab::sim
